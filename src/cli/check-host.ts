// What `kured-ts check` says of what the reboot does to the node beyond the drain: whether the
// provider's auto-repair could replace it while it reboots (src/node/repair.ts), and what the reboot
// does to the pods the drain leaves (graceful node shutdown, as the node's agent read it on its host:
// src/host/shutdown.ts). Warnings, never blocks: the agent does not hold the reboot back for them.
import type { V1Node } from '../kube/kube.js';
import { repairRisk } from '../node/repair.js';
import { shutdownMeaning } from '../host/shutdown.js';
import { STATUS_ANNOTATION, parseStatus } from '../node/status.js';
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

/**
 * One item: graceful node shutdown as the node's agent published it (check runs elsewhere and cannot
 * read the host), with what it means; says so where the agent could not read it or did not say.
 */
export function evaluateShutdown(node: V1Node): CheckItem {
  const status = parseStatus(node.metadata?.annotations?.[STATUS_ANNOTATION]);
  if (status?.shutdown === undefined) {
    return {
      name: 'shutdown',
      verdict: 'skipped',
      detail: 'not published by the agent of this node (not read, or an agent of an older version)',
    };
  }
  const { level, meaning } = shutdownMeaning(status.shutdown);
  const verdict = level === 'ok' ? 'ok' : level === 'warn' ? 'warn' : 'skipped';
  return { name: 'shutdown', verdict, detail: meaning };
}
