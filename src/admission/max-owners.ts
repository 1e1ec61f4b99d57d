// The lock's maxOwners the agent's admission policy lets it write (agent-policy.ts).
import { budgetCount } from '../config/budget.js';
import type { Config } from '../config/config.js';

/**
 * The maxOwners the agent may write: `1|2|…|C` for --concurrency C; for N% any number from 1 to
 * 5000 (Kubernetes' largest cluster), since the fleet, and so the number, changes after installation.
 */
const ANY_MAX_OWNERS = '[1-9]|[1-9][0-9]|[1-9][0-9][0-9]|[1-4][0-9][0-9][0-9]|5000';

export function maxOwnersPattern(config: Pick<Config, 'concurrency'>): string {
  const count = budgetCount(config.concurrency);
  if (count === undefined) return ANY_MAX_OWNERS;
  return Array.from({ length: Math.max(1, count) }, (_, i) => String(i + 1)).join('|');
}
