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
import type { Budget } from '../config/budget.js';
import type { V1DaemonSet } from '../kube/kube.js';

/**
 * Slots (--concurrency, --group-concurrency) and the failure budget (--max-failures) for `nodes`
 * nodes (undefined: not known): the number, or the share rounded down, at least 1; a share of a fleet
 * not counted yet is 1 (fail safe: one slot, and the first failure halts).
 */
export function resolveBudget(budget: Budget, nodes: number | undefined): number {
  if ('count' in budget) return budget.count;
  return Math.max(1, Math.floor((budget.percent * (nodes ?? 0)) / 100));
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

/**
 * A cap (--max-unhealthy-nodes, --max-quarantined) as a number of nodes in a fleet of `total` (a
 * share rounded down: 0 is a cap too).
 */
export function resolveLimit(limit: Budget, total: number): number {
  return 'count' in limit ? limit.count : Math.floor((limit.percent * total) / 100);
}
