// What every eviction of the agent carries: the drain's, each of its retries, and the PDB pre-flight's
// dry run of it. Built here alone, so that the dry run is judged exactly as the drain will be: by the
// pod's PodDisruptionBudget, and by the agent's admission policy, which admits only the configured
// grace period (issue 47: the dry run went without it, the policy refused every pre-flight of an
// agent with --drain-grace-period set, and no node rebooted).
//
// Each names the UID of the pod as listed (preconditions.uid): a retry after the pod was replaced
// under its name (a StatefulSet's pod, recreated elsewhere meanwhile) is answered 409 Conflict, never
// evicts the newcomer (kured#1169); that pod we meant is gone.
import type { EvictionOptions, V1Pod } from '../kube/kube.js';

/** The eviction of `pod` (as listed) under --drain-grace-period (seconds; -1 = each pod's own). */
export function evictionOptions(drainGracePeriodSeconds: number, pod: V1Pod): EvictionOptions {
  const uid = pod.metadata?.uid;
  return {
    ...(drainGracePeriodSeconds >= 0 ? { gracePeriodSeconds: drainGracePeriodSeconds } : {}),
    ...(uid === undefined || uid === '' ? {} : { uid }),
  };
}
