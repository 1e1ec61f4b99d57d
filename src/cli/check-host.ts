// What `kured-ts check` says of what the reboot does to the node beyond the drain: whether the
// provider's auto-repair could replace it while it reboots (src/node/repair.ts). A warning, never a
// block: the agent does not hold the reboot back for it.
import type { V1Node } from '../kube/kube.js';
import { repairRisk } from '../node/repair.js';
import type { CheckItem } from './check-report.js';

/**
 * One item for a node of a provider whose repair threshold is known (none otherwise): a warning when
 * --post-reboot-timeout outlasts it.
 */
export function evaluateRepair(node: V1Node, postRebootTimeoutMs: number): CheckItem[] {
  const risk = repairRisk(node.spec?.providerID, postRebootTimeoutMs);
  if (risk.risk === 'unknown') return [];
  return [{ name: 'repair', verdict: risk.risk === 'repair' ? 'warn' : 'ok', detail: risk.reason }];
}
