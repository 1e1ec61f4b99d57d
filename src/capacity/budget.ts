// Every budget of the fleet as it is now, resolved here and nowhere else (scripts/check-imports.mjs
// holds the rest of src/ to that): --concurrency, --group-concurrency and --max-failures given as N%
// resolved for the nodes they apply to, rounded down and at least 1 (as MCO's maxUnavailable and
// Karpenter's budgets round); the caps (--max-unhealthy-nodes, --max-quarantined) rounded down, 0
// included. The lock is still kured's: its maxOwners is written as the resolved number, so kured
// agents sharing it read a number.
//
// Which nodes: for --concurrency and --max-failures, the nodes the lock's DaemonSet runs on (its status
// desiredNumberScheduled, kept by the DaemonSet controller from the DaemonSet's node selector,
// affinity and tolerations), read from the very object that holds the lock, so resolving costs no
// request; for --group-concurrency, the nodes of the group (the --group-label value), from the fleet
// census (fleet-census.ts). An unknown size (no status yet, no census) resolves to 1: fail safe.
import type { Budget } from '../config/budget.js';
import type { CapacitySettings } from './settings.js';
import type { V1DaemonSet } from '../kube/kube.js';

/**
 * Slots (--concurrency, --group-concurrency) and the failure budget (--max-failures) for `nodes`
 * nodes (undefined: not known): the number, or the share rounded down, at least 1; a share of a fleet
 * not counted yet is 1 (fail safe: one slot, and the first failure halts).
 */
function resolveBudget(budget: Budget, nodes: number | undefined): number {
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
function resolveLimit(limit: Budget, total: number): number {
  return 'count' in limit ? limit.count : Math.floor((limit.percent * total) / 100);
}

/**
 * The budgets of the fleet now, every one resolved from the same count: the nodes the lock's
 * DaemonSet runs on (nodesOfDaemonSet), which the lock, the coordinator and the wave's halt all read
 * from that one object.
 */
export interface FleetBudgets {
  /** --concurrency. */
  slots: number;
  /** --max-failures of a wave; undefined: no failure budget. */
  failures: number | undefined;
  /**
   * The wave's slow start (--wave-start) is judged: configured, and its first step smaller than the
   * slots (a step as large as --concurrency is no slow start at all).
   */
  slowStart: boolean;
}

/** The fleet's budgets for `nodes` nodes (undefined: not counted yet: a share is 1, fail safe). */
export function budgetsOf(
  settings: Pick<CapacitySettings, 'concurrency' | 'wave'>,
  nodes: number | undefined,
): FleetBudgets {
  const slots = resolveBudget(settings.concurrency, nodes);
  const { wave } = settings;
  const start = wave?.start ?? 0;
  return {
    slots,
    failures: wave?.maxFailures === undefined ? undefined : resolveBudget(wave.maxFailures, nodes),
    slowStart: start > 0 && start < slots,
  };
}

/**
 * --group-concurrency for a group of `members` nodes (undefined: not counted: a share is 1, fail
 * safe); undefined without groups.
 */
export function groupSlotsOf(
  settings: Pick<CapacitySettings, 'groups'>,
  members: number | undefined,
): number | undefined {
  const groups = settings.groups;
  return groups === undefined ? undefined : resolveBudget(groups.concurrency, members);
}

/**
 * --group-concurrency when it is a number, for a reader that has not counted the group (the wait
 * for a slot); undefined for a share (the acquisition counts the group) or without groups.
 */
export function groupSlotsUncounted(settings: Pick<CapacitySettings, 'groups'>): number | undefined {
  const budget = settings.groups?.concurrency;
  return budget !== undefined && 'count' in budget ? budget.count : undefined;
}

/** The fleet-wide caps for a fleet of `total` Nodes (the census' count): a share rounds down, 0 is a cap. */
export function capsOf(
  settings: Pick<CapacitySettings, 'maxUnhealthy' | 'maxQuarantined'>,
  total: number,
): { maxUnhealthy?: number; maxQuarantined?: number } {
  const { maxUnhealthy, maxQuarantined } = settings;
  return {
    ...(maxUnhealthy === undefined ? {} : { maxUnhealthy: resolveLimit(maxUnhealthy, total) }),
    ...(maxQuarantined === undefined ? {} : { maxQuarantined: resolveLimit(maxQuarantined, total) }),
  };
}

/** Is the lock written in kured's multi form: more than one slot, or a share (maxOwners then varies)? */
export function multiForm(settings: Pick<CapacitySettings, 'concurrency'>, slots: number): boolean {
  return slots > 1 || 'percent' in settings.concurrency;
}
