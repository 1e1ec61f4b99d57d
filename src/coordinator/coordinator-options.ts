// What a coordinator (coordinator.ts) is configured with: where the lock is, the budget it hands out,
// and its timings.
import type { Clock } from '../clock/clock.js';
import type { Kube } from '../kube/kube.js';
import type { Logger } from '../log/logger.js';
import type { CapacitySettings } from '../capacity/settings.js';

/**
 * How many may be out and who (CapacitySettings: the agents' own flags, so that no turn is given that
 * the agent would refuse), and the coordinator's own settings.
 */
export interface CoordinatorOptions extends CapacitySettings {
  kube: Kube;
  /** --ds-namespace: the lock's DaemonSet and the coordinator's Lease live here. */
  namespace: string;
  /** --ds-name. */
  dsName: string;
  /** The coordinator's Lease (coordinatorLeaseName(dsName)). */
  leaseName: string;
  /** --lock-annotation. */
  annotation: string;
  /** --lock-ttl in ms (0: slots never expire). */
  ttlMs: number;
  /**
   * --fleetlock-url is configured for the agents: a node whose FleetLock server answers "group full"
   * keeps its turn (up to 30 minutes in all). Without it those answers count for nothing. Default false.
   */
  fleetLock?: boolean;
  /**
   * A watch of the Nodes silent this long (no event, no bookmark: the API server sends one a minute)
   * is given up and the advice withdrawn until the view follows again. Default VIEW_SILENCE_MS
   * (WATCH_SILENCE_MS); 0: none (the simulator, whose watches never hang).
   */
  silenceMs?: number;
  /** This replica (pod name and a random suffix). */
  identity: string;
  clock: Clock;
  log: Logger;
  random: () => number;
  /** How long a named node has to take its slot. Default HANDOFF_GRACE_MS (30 s). */
  graceMs?: number;
  /** Changes are gathered this long before a plan (a burst of status writes is one plan). Default 200 ms. */
  settleMs?: number;
  /** Nodes per page of the fleet view's lists. Default PAGE_SIZE (500). */
  pageSize?: number;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
}
