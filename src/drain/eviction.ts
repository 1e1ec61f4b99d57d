// What every eviction of the agent carries: the drain's, each of its retries, and the PDB pre-flight's
// dry run of it. Built here alone, so that the dry run is judged exactly as the drain will be: by the
// pod's PodDisruptionBudget, and by the agent's admission policy, which admits only the configured
// grace period (issue 47: the dry run went without it, the policy refused every pre-flight of an
// agent with --drain-grace-period set, and no node rebooted).
import type { EvictionOptions } from '../kube/kube.js';

/** The eviction options for --drain-grace-period (seconds; -1 = each pod's own grace period). */
export function evictionOptions(drainGracePeriodSeconds: number): EvictionOptions {
  return drainGracePeriodSeconds >= 0 ? { gracePeriodSeconds: drainGracePeriodSeconds } : {};
}
