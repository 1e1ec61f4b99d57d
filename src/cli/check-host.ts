// What `kured-ts check` says of the node's host: its package manager, judged as the agent judges it
// where the host can be read (with --local, on the node), else "not checked" with the reason; whether
// the provider's auto-repair could replace the node while it reboots (src/node/repair.ts), and what the
// reboot does to the pods the drain leaves (graceful node shutdown, as the node's agent read it on its
// host: src/host/shutdown.ts). Repair and shutdown are warnings, never blocks: the agent does not hold
// the reboot back for them.
import type { Config } from '../config/config.js';
import type { HostFiles } from '../host/host.js';
import { hostView, type HostView } from '../host/host-view.js';
import { shutdownMeaning } from '../host/shutdown.js';
import type { V1Node } from '../kube/kube.js';
import { repairRisk } from '../node/repair.js';
import { STATUS_ANNOTATION, parseStatus } from '../node/status.js';
import type { CheckItem } from './check-report.js';

/** The package-manager blocker's name, and its line's. */
const PACKAGE_MANAGER = 'package-manager';

/**
 * The host's files the package-manager blocker reads, where check can read them (with --local, on the
 * node): the blocker then joins the agent's others (createBlockers), in the agent's order, and its
 * answer counts in the decision as in the agent's. Else the line saying why it is not checked.
 * `io.hostView` replaces hostView(config) (tests).
 */
export function packageManagerHost(
  options: { config: Pick<Config, 'rebootMethod' | 'hostExec' | 'hostRoot'>; local?: boolean },
  io: { hostView?: HostView },
): { host: HostFiles } | { line: CheckItem } {
  if (options.local !== true) {
    const detail = 'not checked: the host is read on the node itself only (kured-ts check --local there)';
    return { line: { name: PACKAGE_MANAGER, verdict: 'skipped', detail } };
  }
  const view = io.hostView ?? hostView(options.config);
  if ('notChecked' in view)
    return { line: { name: PACKAGE_MANAGER, verdict: 'skipped', detail: view.notChecked } };
  return { host: view.host };
}

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
