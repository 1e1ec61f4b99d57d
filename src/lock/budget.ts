// The lock's budget for the fleet as it is now: --concurrency and --group-concurrency given as N%
// resolved for the nodes they apply to, rounded down and at least 1 (as MCO's maxUnavailable and
// Karpenter's budgets round). The lock is still kured's: its maxOwners is written as the resolved
// number, so kured agents sharing it read a number.
//
// Which nodes: for --concurrency, the nodes the lock's DaemonSet runs on (its status
// desiredNumberScheduled, kept by the DaemonSet controller from the DaemonSet's node selector,
// affinity and tolerations), read from the very object that holds the lock, so resolving costs no
// request; for --group-concurrency, the nodes of the group (the --group-label value), from the fleet
// census (fleet-census.ts). An unknown size (no status yet, no census) resolves to 1: fail safe.
import type { V1DaemonSet } from '../kube/kube.js';

/** A budget as configured: a number, or a percentage (`percent` > 0) with `count` its floor. */
export interface BudgetSpec {
  count: number;
  /** 1-100; 0 = `count` is the budget. */
  percent: number;
}

/** The budget for `nodes` nodes (undefined: not known): the number, or the share rounded down, at least 1. */
export function resolveBudget(spec: BudgetSpec, nodes: number | undefined): number {
  if (spec.percent <= 0) return spec.count;
  return Math.max(1, Math.floor((spec.percent * (nodes ?? 0)) / 100));
}

/**
 * More nodes than any cluster has (GKE's largest holds 65,000): a count beyond is a lie, and a share
 * of it (--concurrency N%, --max-failures N%) would be no bound at all.
 */
export const MAX_FLEET_NODES = 65_000;

/**
 * The nodes the DaemonSet runs on, as its controller counts them; undefined before it has, and for
 * a count no controller writes (not a whole number, or beyond MAX_FLEET_NODES): unknown resolves to
 * the smallest budget (fail safe).
 */
export function nodesOfDaemonSet(ds: V1DaemonSet | undefined): number | undefined {
  const n = ds?.status?.desiredNumberScheduled;
  return Number.isSafeInteger(n) && n !== undefined && n >= 0 && n <= MAX_FLEET_NODES ? n : undefined;
}

/** A cap as a number of nodes or a share of them (--max-unhealthy-nodes, --max-quarantined). */
export type Limit = { count: number } | { percent: number };

/** The cap as a number of nodes in a fleet of `total` (a share rounded down: 0 is a cap too). */
export function resolveLimit(limit: Limit, total: number): number {
  return 'count' in limit ? limit.count : Math.floor((limit.percent * total) / 100);
}
