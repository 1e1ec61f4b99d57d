// How a Node counts for the fleet's capacity, judged from the whole object: in a kured-ts cycle,
// unhealthy (not Ready, unreachable, cordoned), its group, control plane, waiting for its reboot,
// quarantined. The coordinator judges its one view of the fleet with it (src/coordinator/fleet-view.ts),
// and an agent the few Nodes it reads whole (the workers ahead of a control-plane node).
import { takenOutBy } from '../node/other-operators.js';
import type { V1Node } from '../kube/kube.js';
import { CYCLE_LABEL } from '../node/cycle.js';
import { isQuarantined } from '../node/quarantine.js';
import { BEFORE_CYCLE_PHASES, isControlPlane } from '../node/role.js';
import { STATUS_ANNOTATION, parseStatus } from '../node/status.js';
import { WORKERS_NAMED, type FleetHealth, type GroupHealth } from './fleet-health.js';

/** A node as the census judges it. */
export interface JudgedNode {
  name: string;
  /** Carries the cycle label: --concurrency bounds it already, so it is never counted unavailable. */
  inCycle: boolean;
  /** Why it counts as unavailable (unhealthy); undefined when it does not. */
  unhealthy: string | undefined;
  /** Its --group-label value ('' without the label, or without groups). */
  group: string;
  /** Labelled node-role.kubernetes.io/control-plane. */
  controlPlane: boolean;
  /**
   * Its status says it still wants its reboot before its cycle (pending, outside-window, blocked,
   * awaiting-approval, waiting-for-lock: BEFORE_CYCLE_PHASES).
   */
  waiting: boolean;
  /** Carries a kured-ts status: its agent has decided at least once (idle agents too). */
  reported: boolean;
  /** Carries the quarantine label (its drain failed): counted for --max-quarantined. */
  quarantined: boolean;
}

/** The node as the census judges it (`groupLabel`: --group-label when groups are on). */
export function judgeNode(node: V1Node, groupLabel?: string): JudgedNode {
  const meta = node.metadata ?? {};
  const labels = meta.labels ?? {};
  return {
    name: meta.name ?? '?',
    inCycle: labels[CYCLE_LABEL] === 'true',
    unhealthy: unhealthy(node),
    group: groupLabel === undefined ? '' : (labels[groupLabel] ?? ''),
    controlPlane: isControlPlane(labels),
    quarantined: isQuarantined(labels),
    ...statusFacts(meta.annotations?.[STATUS_ANNOTATION]),
  };
}

/** What the node's status says for the census: waiting before its cycle, and whether there is one. */
function statusFacts(text: string | undefined): Pick<JudgedNode, 'waiting' | 'reported'> {
  return {
    waiting: BEFORE_CYCLE_PHASES.has(parseStatus(text)?.phase ?? 'idle'),
    reported: text !== undefined,
  };
}

/**
 * Why a node counts as unhealthy (NotReady, unreachable, cordoned, or being taken out by another
 * operator: src/node/other-operators.ts); undefined when it does not.
 */
export function unhealthy(node: V1Node): string | undefined {
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? 'Unknown';
  if (ready === 'Unknown' || unreachableTaint(node)) return 'unreachable';
  if (ready !== 'True') return 'not ready';
  return node.spec?.unschedulable === true ? 'cordoned' : takenOutBy(node);
}

/** The node lifecycle controller's taint for a node it cannot reach. */
function unreachableTaint(node: V1Node): boolean {
  return (node.spec?.taints ?? []).some((t) => t.key === 'node.kubernetes.io/unreachable');
}

/** A worker that goes before the control plane: still wanting its reboot, or in its cycle. */
function workerAhead(n: JudgedNode): boolean {
  return !n.controlPlane && (n.waiting || n.inCycle);
}

/** Adds `n` to the health `h` (counts, and its name with why while fewer than `shown` are named). */
function note(h: GroupHealth, n: JudgedNode, shown: number): void {
  h.total++;
  if (n.inCycle || n.unhealthy === undefined) return;
  h.count++;
  if (h.unhealthy.length < shown) h.unhealthy.push(`${n.name} ${n.unhealthy}`);
}

/**
 * The fleet's health (the coordinator's view, or a list): nodes in a cycle not counted unhealthy; at
 * most `shown` names of each list. With `grouped`, the same per --group-label value.
 */
export function fleetHealth(nodes: Iterable<JudgedNode>, shown: number, grouped = false): FleetHealth {
  const all: GroupHealth = { total: 0, count: 0, unhealthy: [] };
  const groups: Record<string, GroupHealth> = {};
  const workers = { count: 0, names: [] as string[] };
  const quarantined: string[] = [];
  let reported = 0;
  for (const n of nodes) {
    note(all, n, Number.POSITIVE_INFINITY);
    if (n.reported) reported++;
    if (n.quarantined) quarantined.push(n.name);
    if (grouped) note((groups[n.group] ??= { total: 0, count: 0, unhealthy: [] }), n, shown);
    if (!workerAhead(n)) continue;
    workers.count++;
    workers.names.push(n.name);
  }
  all.unhealthy.sort();
  workers.names.sort();
  quarantined.sort();
  return {
    ...all,
    unhealthy: all.unhealthy.slice(0, shown),
    ...(grouped ? { groups } : {}),
    workersAhead: { count: workers.count, names: workers.names.slice(0, Math.min(shown, WORKERS_NAMED)) },
    reported,
    quarantined: quarantined.slice(0, shown),
    quarantinedCount: quarantined.length,
  };
}
