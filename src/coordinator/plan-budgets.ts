// The budgets a plan (turn-plan.ts) gives turns within, beyond --concurrency: the groups' shares
// resolved for each group's size, the unavailable nodes (--count-unavailable), and the control
// plane's rule (--control-plane-last), with the workers still ahead of it.
import type { FleetHealth } from '../lock/fleet-health.js';
import { resolveBudget } from '../lock/budget.js';
import { workersAhead } from '../lock/fleet-questions.js';
import type { CoordinatorOptions } from './coordinator-options.js';
import type { PlanInput } from './turn-plan.js';

/** For a plan: the group budgets, the unavailable nodes and the control-plane rule. */
export function planBudgets(
  o: Pick<CoordinatorOptions, 'groups' | 'countUnavailable' | 'controlPlaneLast'>,
  health: FleetHealth,
  fleet: { unavailable: ReadonlyMap<string, string>; matching: number | undefined },
): Pick<PlanInput, 'groupSlots' | 'unavailable' | 'controlPlaneLast' | 'workersAhead'> {
  const groups = o.groups;
  const percent = groups?.percent ?? 0;
  return {
    ...(groups !== undefined && percent > 0
      ? {
          groupSlots: (group: string) =>
            resolveBudget({ count: groups.concurrency, percent }, health.groups?.[group]?.total ?? 0),
        }
      : {}),
    ...(o.countUnavailable === true ? { unavailable: fleet.unavailable } : {}),
    controlPlaneLast: o.controlPlaneLast === true,
    workersAhead: workersAhead(
      { ...(health.workersAhead ?? { count: 0, names: [] }), reported: health.reported },
      fleet.matching,
    ).count,
  };
}
