// "N or N%" as the flags give it, in one shape; src/capacity/budget.ts resolves it for a fleet.

/**
 * "N or N%": a budget of nodes, a number or a percentage of the nodes it applies to. The one shape
 * of every such flag (--concurrency, --group-concurrency, --max-unhealthy-nodes, --max-quarantined,
 * --max-failures); src/capacity/budget.ts resolves it for a fleet.
 */
export type Budget = { count: number } | { percent: number };

/** A budget as the flag gives it: N or N%; with `resolved`, a share says what it comes to now ("10% = 3"). */
export function budgetText(budget: Budget, resolved?: number): string {
  if ('count' in budget) return String(budget.count);
  return resolved === undefined ? `${budget.percent}%` : `${budget.percent}% = ${resolved}`;
}

/** The number of a budget given as one; undefined for a share (only the fleet's size resolves it) or none. */
export function budgetCount(budget: Budget | undefined): number | undefined {
  return budget !== undefined && 'count' in budget ? budget.count : undefined;
}

/** The percentage of a budget given as a share; undefined for a number. */
export function budgetShare(budget: Budget): number | undefined {
  return 'percent' in budget ? budget.percent : undefined;
}
