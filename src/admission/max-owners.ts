// The lock's maxOwners the agent's admission policy lets it write (agent-policy.ts).
import type { Config } from '../config/config.js';

/**
 * The maxOwners the agent may write: `1|2|…|C` for --concurrency C; for N% any number from 1 to
 * 5000 (Kubernetes' largest cluster), since the fleet, and so the number, changes after installation.
 */
const ANY_MAX_OWNERS = '[1-9]|[1-9][0-9]|[1-9][0-9][0-9]|[1-4][0-9][0-9][0-9]|5000';

export function maxOwnersPattern(config: Pick<Config, 'concurrency' | 'concurrencyPercent'>): string {
  if (config.concurrencyPercent > 0) return ANY_MAX_OWNERS;
  return Array.from({ length: Math.max(1, config.concurrency) }, (_, i) => String(i + 1)).join('|');
}
