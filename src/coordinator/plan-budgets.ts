// The gates a plan (turn-plan.ts) gives turns within, beyond --concurrency, from the coordinator's
// view of the fleet: the groups' shares resolved for each group's size, the unavailable nodes
// (--count-unavailable), the caps (--max-unhealthy-nodes, --max-quarantined, resolved for the fleet)
// and the control plane's rule (--control-plane-last), with the workers still ahead of it. The
// agents judge the same gates again, each from the cluster's own records, before they take a slot.
import type { FleetHealth } from '../lock/fleet-health.js';
import { resolveBudget, resolveLimit } from '../lock/budget.js';
import { workersAhead } from '../lock/fleet-questions.js';
import type { CoordinatorOptions } from './coordinator-options.js';
import type { PlanInput } from './turn-plan.js';

/** For a plan: the group budgets, the fleet's unhealthy and quarantined nodes, the caps, the control plane. */
export function planBudgets(
  o: Pick<
    CoordinatorOptions,
    'groups' | 'countUnavailable' | 'controlPlaneLast' | 'maxUnhealthyNodes' | 'maxQuarantined' | 'fleetLock'
  >,
  health: FleetHealth,
  fleet: {
    unhealthy: ReadonlyMap<string, string>;
    quarantined: ReadonlySet<string>;
    controlPlane: ReadonlySet<string>;
    matching: number | undefined;
  },
): Pick<
  PlanInput,
  | 'groupSlots'
  | 'unhealthy'
  | 'quarantined'
  | 'controlPlaneNodes'
  | 'countUnavailable'
  | 'maxUnhealthy'
  | 'maxQuarantined'
  | 'controlPlaneLast'
  | 'workersAhead'
  | 'fleetLock'
> {
  const groups = o.groups;
  const percent = groups?.percent ?? 0;
  return {
    ...(groups !== undefined && percent > 0
      ? {
          groupSlots: (group: string) => resolveBudget({ percent }, health.groups?.[group]?.total ?? 0),
        }
      : {}),
    unhealthy: fleet.unhealthy,
    quarantined: fleet.quarantined,
    controlPlaneNodes: fleet.controlPlane,
    countUnavailable: o.countUnavailable === true,
    ...(o.maxUnhealthyNodes === undefined
      ? {}
      : { maxUnhealthy: resolveLimit(o.maxUnhealthyNodes, health.total) }),
    ...(o.maxQuarantined === undefined
      ? {}
      : { maxQuarantined: resolveLimit(o.maxQuarantined, health.total) }),
    controlPlaneLast: o.controlPlaneLast === true,
    workersAhead: workersAhead(
      { ...(health.workersAhead ?? { count: 0, names: [] }), reported: health.reported },
      fleet.matching,
    ).count,
    fleetLock: o.fleetLock === true,
  };
}
