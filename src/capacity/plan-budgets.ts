// The gates a plan (src/coordinator/turn-plan.ts) gives turns within, from the coordinator's view of
// the fleet: --concurrency and the failure budget resolved for the nodes the lock's DaemonSet runs
// on (budgetsOf, as the agents resolve them), the groups' shares for each group's size, the
// unavailable nodes (--count-unavailable), the caps (--max-unhealthy-nodes, --max-quarantined,
// resolved for the fleet) and the control plane's rule (--control-plane-last), with the workers still
// ahead of it. The agents judge the same gates again, each from the cluster's own records, before
// they take a slot.
import { budgetsOf, capsOf, groupSlotsOf, type FleetBudgets } from './budget.js';
import type { FleetHealth } from './fleet-health.js';
import { workersAhead } from './fleet-questions.js';
import type { CapacitySettings } from './settings.js';

/** What a plan judges beyond the slots and the queue: every budget resolved, the fleet's nodes as the view judges them. */
export interface PlanGates {
  /** --concurrency, resolved for the fleet now. */
  concurrency: number;
  /** --group-concurrency; undefined without groups. */
  groupConcurrency: number | undefined;
  /** --group-concurrency N%, resolved for a group; undefined: `groupConcurrency` for every group. */
  groupSlots?: (group: string) => number;
  /**
   * The nodes that are not Ready, unreachable or cordoned by someone else, in no cycle, to their
   * group, as the view judges them (the health gate's and --count-unavailable's). Default: those of
   * the plan's nodes.
   */
  unhealthy?: ReadonlyMap<string, string>;
  /** The quarantined nodes (--max-quarantined). Default: those of the plan's nodes. */
  quarantined?: ReadonlySet<string>;
  /** The control-plane nodes (one at a time). Default: those of the plan's nodes. */
  controlPlaneNodes?: ReadonlySet<string>;
  /** --count-unavailable: the unhealthy nodes holding no slot take slots. */
  countUnavailable?: boolean;
  /** --max-unhealthy-nodes resolved for the fleet; undefined: no gate. */
  maxUnhealthy?: number;
  /** --max-quarantined resolved for the fleet; undefined: no cap. */
  maxQuarantined?: number;
  /** --control-plane-last: no turn for a control-plane node while a worker waits or is in its cycle. */
  controlPlaneLast?: boolean;
  /**
   * Workers still wanting their reboot (blocked, outside the window, waiting…) or in their cycle, as
   * the fleet view counts them; undefined: judged from the plan's nodes (which may leave blocked ones out).
   */
  workersAhead?: number;
}

/** For a plan: the budgets, the group budgets, the fleet's unhealthy and quarantined nodes, the caps, the control plane. */
export function planBudgets(
  o: CapacitySettings,
  health: FleetHealth,
  fleet: {
    unhealthy: ReadonlyMap<string, string>;
    quarantined: ReadonlySet<string>;
    controlPlane: ReadonlySet<string>;
    /** The nodes the lock's DaemonSet runs on (nodesOfDaemonSet), when counted. */
    matching: number | undefined;
  },
): { gates: PlanGates; budgets: FleetBudgets } {
  const budgets = budgetsOf(o, fleet.matching);
  const groupConcurrency = groupSlotsOf(o, undefined);
  // each group's own size (a number of slots resolves to itself whatever the size)
  const sizeOf = (group: string): number => health.groups?.[group]?.total ?? 0;
  const gates: PlanGates = {
    concurrency: budgets.slots,
    groupConcurrency,
    ...(groupConcurrency === undefined
      ? {}
      : { groupSlots: (group: string) => groupSlotsOf(o, sizeOf(group)) ?? groupConcurrency }),
    unhealthy: fleet.unhealthy,
    quarantined: fleet.quarantined,
    controlPlaneNodes: fleet.controlPlane,
    countUnavailable: o.countUnavailable === true,
    ...capsOf(o, health.total),
    controlPlaneLast: o.controlPlaneLast === true,
    workersAhead: workersAhead(
      { ...(health.workersAhead ?? { count: 0, names: [] }), reported: health.reported },
      fleet.matching,
    ).count,
  };
  return { gates, budgets };
}
