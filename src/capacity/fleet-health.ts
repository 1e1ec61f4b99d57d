// The fleet's health as a census judges it: how many nodes, which are unhealthy (unavailable), per
// group, which workers a control-plane node lets go first, and which nodes are quarantined. The
// agent's lock decision (fleet-census.ts) and the coordinator's view (src/coordinator) both count
// it; the coordinator publishes it on its Lease (src/queue/coordinator-lease.ts).

/** The nodes of a group (or of the cluster) and the unhealthy ones among them. */
export interface GroupHealth {
  /** Nodes. */
  total: number;
  /** Unhealthy nodes, with why ("n3 not ready"); at most HEALTH_NAMES_SHOWN of them. */
  unhealthy: string[];
  /** How many are unhealthy in all (may exceed unhealthy.length). */
  count: number;
}

/**
 * The unhealthy nodes the coordinator sees (nodes in a kured-ts cycle not counted), sorted; per
 * group with --group-concurrency; and the workers that a control-plane node lets go first.
 */
export interface FleetHealth extends GroupHealth {
  /** Per --group-label value (with groups on; absent from an older coordinator). */
  groups?: Record<string, GroupHealth>;
  /**
   * Workers (no control-plane label) waiting for a slot or in their reboot cycle: how many, and
   * their names (sorted, at most WORKERS_NAMED). Absent from an older coordinator.
   */
  workersAhead?: { count: number; names: string[] };
  /**
   * Nodes carrying a kured-ts status (their agent has decided at least once): fewer than the
   * DaemonSet runs on means agents that have not said yet whether they need a reboot (the control
   * plane waits for them). Absent from an older coordinator.
   */
  reported?: number;
  /**
   * Quarantined nodes (kured-ts.dev/quarantined), sorted, at most HEALTH_NAMES_SHOWN; undefined from
   * a coordinator that does not count them (an older one).
   */
  quarantined?: string[];
  /** How many are quarantined in all (may exceed quarantined.length). */
  quarantinedCount?: number;
}

/** Names the coordinator publishes; past this, `count` alone tells. */
export const HEALTH_NAMES_SHOWN = 100;

/**
 * Workers ahead of the control plane named on the Lease; the count tells the rest. Only a reason
 * shows them, and every agent reads the Lease: on patch night a hundred names cost each of those
 * reads a kilobyte (simulate --nodes 1000: 517 KB per node with a hundred, 483 KB without them).
 */
export const WORKERS_NAMED = 10;
