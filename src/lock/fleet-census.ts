// What a lock decision needs to know of the fleet beyond the lock itself: which nodes are unavailable
// (they take slots under --count-unavailable), how large each --group-label group is (for
// --group-concurrency N%), and which workers still wait for a reboot (control plane last). The
// same judgement serves the coordinator, which keeps it from its one watch of the Nodes and
// publishes it on its Lease, and the health gate (--max-unhealthy-nodes).
//
// An agent reads it from the coordinator's Lease while a coordinator is live (one small GET, cached
// and shared with the turn and the health gate); without one, from one list of the Nodes out of the
// API server's watch cache, reused for CENSUS_CACHE_MS. It is asked only by a node that could take a
// slot now by the lock's own entries (never by a waiter whose turn has not come), so on patch night
// it costs nothing per waiter (DESIGN §13).
import { monotonicMs, type Clock } from '../clock/clock.js';
import type { Kube, V1Node } from '../kube/kube.js';
import { CYCLE_LABEL } from '../node/cycle.js';
import { isQuarantined } from '../node/quarantine.js';
import { BEFORE_CYCLE_PHASES, isControlPlane } from '../node/role.js';
import { STATUS_ANNOTATION, parseStatus } from '../node/status.js';
import { WORKERS_NAMED, type FleetHealth, type GroupHealth } from './fleet-health.js';

/**
 * The coordinator's published health as the census may read it (src/queue/coordinator-lease.ts
 * reads the Lease): a live coordinator's, or none.
 */
export interface PublishedHealth {
  read(signal?: AbortSignal): Promise<{ live: true; health: FleetHealth | undefined } | { live: false }>;
}

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

/** Why a node counts as unhealthy (NotReady, unreachable, cordoned); undefined when it does not. */
export function unhealthy(node: V1Node): string | undefined {
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? 'Unknown';
  if (ready === 'Unknown' || unreachableTaint(node)) return 'unreachable';
  if (ready !== 'True') return 'not ready';
  return node.spec?.unschedulable === true ? 'cordoned' : undefined;
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

/**
 * The fleet's health for a blocker: as the live coordinator published it, when `answers` says that
 * publication holds what the blocker needs (an older coordinator's may not), else from one list of
 * the Nodes out of the API server's watch cache, every node named.
 */
export async function publishedOrListed(
  o: { kube: Kube; coordinator?: PublishedHealth | undefined },
  answers: (published: FleetHealth) => boolean,
  signal?: AbortSignal,
): Promise<FleetHealth> {
  const coordinator = await o.coordinator?.read(signal);
  if (coordinator?.live === true && coordinator.health !== undefined && answers(coordinator.health))
    return coordinator.health;
  const nodes = await o.kube.listNodes({ resourceVersion: '0' }, signal);
  return fleetHealth(
    nodes.map((n) => judgeNode(n)),
    nodes.length,
  );
}

/** A list of the Nodes is reused this long by one agent (the census without a coordinator). */
export const CENSUS_CACHE_MS = 10_000;

export interface FleetCensusOptions {
  kube: Kube;
  clock: Clock;
  /** --group-label when --group-concurrency is set. */
  groupLabel: string | undefined;
  /** The coordinator, whose published census is used while it is live. */
  coordinator?: PublishedHealth;
}

/** The fleet as an agent's lock decision sees it: from the live coordinator, else one list. */
export class FleetCensus {
  private listed: { at: number; health: FleetHealth } | undefined;

  constructor(private readonly o: FleetCensusOptions) {}

  /** The census now (the coordinator's when live and complete, else a list at most CENSUS_CACHE_MS old). */
  async read(signal?: AbortSignal): Promise<FleetHealth> {
    const coordinator = await this.o.coordinator?.read(signal);
    const published = coordinator?.live === true ? coordinator.health : undefined;
    // an older coordinator publishes no groups or workers: then the list answers
    if (published?.workersAhead !== undefined && (this.o.groupLabel === undefined || published.groups))
      return published;
    const now = monotonicMs(this.o.clock);
    if (this.listed !== undefined && now - this.listed.at < CENSUS_CACHE_MS) return this.listed.health;
    const nodes = await this.o.kube.listNodes({ resourceVersion: '0' }, signal);
    const grouped = this.o.groupLabel !== undefined;
    const health = fleetHealth(
      nodes.map((n) => judgeNode(n, this.o.groupLabel)),
      Number.POSITIVE_INFINITY,
      grouped,
    );
    this.listed = { at: now, health };
    return health;
  }
}
