// The coordinator's one view of the fleet: every Node, kept from one list and a watch from its
// resourceVersion (a Reflector: a new watch from the last version seen after each ends, a fresh
// list after 410 Gone, back-off while they fail). Only what the queue and the health gate
// need is kept of each Node (a few hundred bytes, not the 5-15 KB object: 5,000 nodes fit in a few
// MB), so the coordinator's memory does not grow with images and conditions.
import type { Clock } from '../clock/clock.js';
import type { Kube, V1Node } from '../kube/kube.js';
import { nodesListWatch } from '../kube/list-watch.js';
import { Reflector } from '../kube/reflector.js';
import type { Logger } from '../log/logger.js';
import { WORKERS_NAMED, type FleetHealth } from '../capacity/fleet-health.js';
import { fleetHealth, judgeNode } from '../capacity/fleet-judge.js';
import { TURN_ANNOTATION, parseLapsedTurn } from '../queue/turn.js';
import { STATUS_ANNOTATION, parseStatus, type ReadStatus } from '../node/status.js';
import { waveOf, type WaveState } from '../node/wave.js';
import type { Maintained } from './node-maintenance.js';
import { TAKEN_OUT } from '../node/other-operators.js';

/** What the coordinator keeps of one Node. */
export interface NodeRecord {
  name: string;
  /** The agent's status annotation, parsed (phase, requiredSince, due). */
  status: ReadStatus | undefined;
  /** The --group-label value; '' without the label or without groups. */
  group: string;
  /** Carries the cycle label: counts against --concurrency whatever the lock says. */
  inCycle: boolean;
  /** Why it counts as unhealthy (--max-unhealthy-nodes) and unavailable (--count-unavailable); undefined when healthy. */
  unhealthy: string | undefined;
  /** Labelled node-role.kubernetes.io/control-plane: goes after the workers, one at a time. */
  controlPlane: boolean;
  /** Its status says it still wants its reboot before its cycle (JudgedNode.waiting). */
  waiting: boolean;
  /** Carries a kured-ts status (JudgedNode.reported). */
  reported: boolean;
  /** Carries the quarantine label (its drain failed): behind the other waiters, counted for --max-quarantined. */
  quarantined: boolean;
  /** The turn annotation's text, when it gives a turn (or is unreadable: taken back like a turn). */
  turn: string | undefined;
  /** The turn annotation's text, when it records a lapsed turn (LapsedTurn): no turn. */
  lapsedTurn: string | undefined;
  /** Its wave and how far it got there (its own labels: src/node/wave.ts), when it carries them. */
  wave?: string;
  waveState?: WaveState;
  /** Its Ready condition is True. */
  ready?: boolean;
}

/** The turn annotation's text as a record keeps it: a turn, or a lapsed one. */
export function turnFields(text: string | undefined): Pick<NodeRecord, 'turn' | 'lapsedTurn'> {
  return parseLapsedTurn(text) === undefined
    ? { turn: text, lapsedTurn: undefined }
    : { turn: undefined, lapsedTurn: text };
}

export function recordOf(node: V1Node, groupLabel: string | undefined): NodeRecord {
  const meta = node.metadata ?? {};
  const wave = waveOf(meta.labels ?? {});
  return {
    ...judgeNode(node, groupLabel),
    name: meta.name ?? '',
    status: parseStatus(meta.annotations?.[STATUS_ANNOTATION]),
    ...turnFields(meta.annotations?.[TURN_ANNOTATION]),
    ...(wave === undefined
      ? {}
      : {
          wave: wave.wave,
          ...(wave.state === undefined ? {} : { waveState: wave.state }),
          ready: node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
        }),
  };
}

export interface FleetViewOptions {
  kube: Kube;
  clock: Clock;
  log: Logger;
  random: () => number;
  /** --group-label when --group-concurrency is set. */
  groupLabel: string | undefined;
  /** Nodes per page of a list. Default PAGE_SIZE (list-watch.ts). */
  pageSize?: number;
  /**
   * A watch of the Nodes that brings no event and no bookmark for this long is given up, and the view
   * is blind until it follows again (a hung connection). Default none.
   */
  silenceMs?: number;
}

/**
 * Does the queue look at this node: it waits, holds a turn or is in a cycle. On patch night nearly
 * every node waits; on other nights a plan looks at a handful of nodes, not the fleet.
 */
export function concernsQueue(r: NodeRecord): boolean {
  return r.status?.phase === 'waiting-for-lock' || hasTurnAnnotation(r) || r.inCycle;
}

/** The node carries a turn annotation: a turn, or a lapsed one (both go once it stops waiting). */
export function hasTurnAnnotation(r: NodeRecord): boolean {
  return r.turn !== undefined || r.lapsedTurn !== undefined;
}

/** Adds `name` to `index` or removes it, as `member` says. */
function file(index: Set<string>, name: string, member: boolean): void {
  if (member) index.add(name);
  else index.delete(name);
}

export class FleetView {
  private readonly nodes = new Map<string, NodeRecord>();
  /** The names of the nodes that concernsQueue. */
  private readonly planned = new Set<string>();
  /** Of those, the nodes with a turn annotation and those in a cycle: all a plan reads while every slot is taken. */
  private readonly turned = new Set<string>();
  private readonly cycling = new Set<string>();
  /** Workers still wanting their reboot or in their cycle: the control plane goes after them. */
  private readonly ahead = new Set<string>();
  /** Nodes unhealthy (not ready, unreachable, cordoned) in no cycle: unavailable (--count-unavailable). */
  private readonly unwell = new Set<string>();
  /** Nodes carrying a kured-ts status (their agent has decided at least once). */
  private readonly spoke = new Set<string>();
  /** Nodes carrying the quarantine label. */
  private readonly quarantine = new Set<string>();
  /** Control-plane nodes. */
  private readonly controlPlanes = new Set<string>();
  /** The nodes of each wave, by their wave label. */
  private readonly waves = new Map<string, Set<string>>();
  /** The fleet's health, kept until a node's health, cycle, group or existence changes. */
  private health: { shown: number; value: FleetHealth } | undefined;
  private readonly reflector: Reflector<V1Node>;
  /** Each node's own judgement (judgeNode's unhealthy), and the nodes other operators' NodeMaintenances take out. */
  private readonly judged = new Map<string, string | undefined>();
  private maintained: Maintained = new Map();

  constructor(private readonly o: FleetViewOptions) {
    this.reflector = new Reflector(
      nodesListWatch(o.kube, o.pageSize === undefined ? {} : { pageSize: o.pageSize }),
      { ...o, ...(o.silenceMs === undefined ? {} : { silenceMs: o.silenceMs }) },
    );
  }

  /** A list has been taken: the view is complete (planning before it would miss waiters). */
  get synced(): boolean {
    return this.reflector.synced;
  }

  /**
   * Since when (monotonic ms) the view has not been following the fleet: from the start until the
   * first list, and from a failed list or watch (or one silent too long) until a list succeeds or a
   * watch has run WATCH_BASE_BACKOFF_MS. undefined while it follows. A leader blind for a lease
   * gives up leading, and publishes no health meanwhile.
   */
  get blindSince(): number | undefined {
    return this.reflector.blindSince;
  }

  /** The last failed list or watch of the Nodes: in words, and whether the API server turned it away (429). */
  get failure(): { lastFailure: string; throttled: boolean } {
    return this.reflector.failure;
  }

  /**
   * When the view last heard from the API server (its list, an event or a bookmark), monotonic ms;
   * undefined before its first list.
   */
  get lastHeardMs(): number | undefined {
    return this.reflector.lastHeardMs;
  }

  /** Keeps the view until `signal` aborts, calling `changed` after each change. Never rejects. */
  follow(changed: () => void, signal: AbortSignal): Promise<void> {
    return this.reflector.run(
      {
        // the view is replaced only by a whole list
        replace: (items) => {
          const nodes = new Map<string, NodeRecord>();
          for (const node of items) this.put(node, nodes);
          this.nodes.clear();
          for (const index of this.indexes()) index.clear();
          this.waves.clear();
          this.health = undefined;
          for (const record of nodes.values()) this.set(record);
          changed();
        },
        apply: (type, node) => {
          if (type === 'DELETED') this.delete(node.metadata?.name ?? '');
          else this.put(node);
          changed();
        },
      },
      signal,
    );
  }

  private put(node: V1Node, into?: Map<string, NodeRecord>): void {
    const record = recordOf(node, this.o.groupLabel);
    if (record.name === '') return;
    this.judged.set(record.name, record.unhealthy);
    record.unhealthy ??= this.maintained.get(record.name);
    if (into === undefined) this.set(record);
    else into.set(record.name, record);
  }

  /** The node's record, when the view has it. */
  get(name: string): NodeRecord | undefined {
    return this.nodes.get(name);
  }

  /** Puts a record in the view (the coordinator's own turn writes, without waiting for the watch). */
  set(record: NodeRecord): void {
    const before = this.nodes.get(record.name);
    this.nodes.set(record.name, record);
    file(this.planned, record.name, concernsQueue(record));
    file(this.turned, record.name, hasTurnAnnotation(record));
    file(this.cycling, record.name, record.inCycle);
    file(this.ahead, record.name, !record.controlPlane && (record.waiting || record.inCycle));
    file(this.unwell, record.name, record.unhealthy !== undefined && !record.inCycle);
    file(this.spoke, record.name, record.reported);
    file(this.quarantine, record.name, record.quarantined);
    file(this.controlPlanes, record.name, record.controlPlane);
    this.fileWave(before, record);
    if (
      before?.inCycle !== record.inCycle ||
      before.unhealthy !== record.unhealthy ||
      before.group !== record.group ||
      before.quarantined !== record.quarantined
    )
      this.health = undefined;
  }

  /** Moves `record` to its wave's index (out of the one `before` was in). */
  private fileWave(before: NodeRecord | undefined, record: NodeRecord): void {
    if (before?.wave !== undefined && before.wave !== record.wave) {
      const old = this.waves.get(before.wave);
      old?.delete(record.name);
      if (old?.size === 0) this.waves.delete(before.wave);
    }
    if (record.wave === undefined) return;
    const index = this.waves.get(record.wave) ?? new Set<string>();
    index.add(record.name);
    this.waves.set(record.wave, index);
  }

  /** The nodes whose wave label names `wave`. */
  waveMembers(wave: string): IterableIterator<NodeRecord> {
    return this.records(this.waves.get(wave) ?? new Set());
  }

  /**
   * The nodes other operators' NodeMaintenance objects take out now (node-maintenance.ts): unavailable
   * and unhealthy unless their own state says why already.
   */
  setMaintained(maintained: Maintained): void {
    const touched = new Set([...this.maintained.keys(), ...maintained.keys()]);
    this.maintained = maintained;
    for (const name of touched) {
      const record = this.nodes.get(name);
      if (record !== undefined)
        this.set({ ...record, unhealthy: this.judged.get(name) ?? maintained.get(name) });
    }
  }

  delete(name: string): void {
    this.judged.delete(name);
    const before = this.nodes.get(name);
    if (!this.nodes.delete(name)) return;
    if (before?.wave !== undefined) this.waves.get(before.wave)?.delete(name);
    for (const index of this.indexes()) index.delete(name);
    this.health = undefined;
  }

  private indexes(): Set<string>[] {
    const { planned, turned, cycling, ahead, unwell, spoke, quarantine, controlPlanes } = this;
    return [planned, turned, cycling, ahead, unwell, spoke, quarantine, controlPlanes];
  }

  /** The quarantined nodes. */
  quarantined(): ReadonlySet<string> {
    return this.quarantine;
  }

  /** The control-plane nodes. */
  controlPlane(): ReadonlySet<string> {
    return this.controlPlanes;
  }

  /** The nodes the queue looks at (waiting, with a turn, or in a cycle). */
  inPlan(): IterableIterator<NodeRecord> {
    return this.records(this.planned);
  }

  /** The nodes that have a turn annotation (a turn, or a lapsed one). */
  withTurn(): IterableIterator<NodeRecord> {
    return this.records(this.turned);
  }

  /** The nodes in a reboot cycle. */
  inCycle(): IterableIterator<NodeRecord> {
    return this.records(this.cycling);
  }

  private *records(names: ReadonlySet<string>): IterableIterator<NodeRecord> {
    for (const name of names) {
      const record = this.nodes.get(name);
      if (record !== undefined) yield record;
    }
  }

  /**
   * The fleet's health (fleetHealth over every node, per group with `grouped`), judged again only
   * after a change to it; the workers ahead of the control plane from their index.
   */
  fleetHealth(shown: number, grouped = false): FleetHealth {
    if (this.health?.shown !== shown)
      this.health = { shown, value: fleetHealth(this.nodes.values(), shown, grouped) };
    const names: string[] = [];
    for (const name of this.ahead) {
      if (names.length >= Math.min(shown, WORKERS_NAMED)) break;
      names.push(name);
    }
    return {
      ...this.health.value,
      workersAhead: { count: this.ahead.size, names },
      reported: this.spoke.size,
    };
  }

  /** The unavailable nodes another operator is taking out, each as "name: why". */
  takenOut(): string[] {
    const out: string[] = [];
    for (const r of this.records(this.unwell))
      if (r.unhealthy?.startsWith(TAKEN_OUT) === true) out.push(`${r.name}: ${r.unhealthy}`);
    return out;
  }

  /** The unavailable nodes (unhealthy, in no cycle), to their group. */
  unavailable(): Map<string, string> {
    const down = new Map<string, string>();
    for (const r of this.records(this.unwell)) down.set(r.name, r.group);
    return down;
  }
}
