// "N or N%" as the flags give it, in one shape; src/lock/budget.ts resolves it for a fleet.

/**
 * "N or N%": a budget of nodes, a number or a percentage of the nodes it applies to. The one shape
 * of every such flag (--concurrency, --group-concurrency, --max-unhealthy-nodes, --max-quarantined,
 * --max-failures); src/lock/budget.ts resolves it for a fleet.
 */
export type Budget = { count: number } | { percent: number };

/** The budget of a count and a percentage kept side by side (Config.concurrency and concurrencyPercent: 0 = none). */
export function budgetOf(count: number, percent: number | undefined): Budget {
  return percent !== undefined && percent > 0 ? { percent } : { count };
}

/** A budget as the flag gives it: N or N%. */
export function budgetText(budget: Budget): string {
  return 'count' in budget ? String(budget.count) : `${budget.percent}%`;
}
