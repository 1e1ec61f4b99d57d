// The coordinator's one view of the fleet: every Node, kept from one list and a watch from its
// resourceVersion (client-go's reflector: a new watch from the last version seen after each ends, a
// fresh list after 410 Gone, back-off while they fail). Only what the queue and the health gate
// need is kept of each Node (a few hundred bytes, not the 5-15 KB object: 5,000 nodes fit in a few
// MB), so the coordinator's memory does not grow with images and conditions.
import { monotonicMs, type Clock } from '../clock/clock.js';
import { isGone, statusMessage } from '../kube/errors.js';
import type { Kube, V1Node } from '../kube/kube.js';
import { backoffMs } from '../kube/retry.js';
import type { Logger } from '../log/logger.js';
import { WORKERS_NAMED, type FleetHealth } from '../lock/coordinator-lease.js';
import { fleetHealth, judgeNode } from '../lock/fleet-census.js';
import { WATCH_BASE_BACKOFF_MS, WATCH_MAX_BACKOFF_MS } from '../lock/lock-watch.js';
import { TURN_ANNOTATION, parseLapsedTurn } from '../lock/turn.js';
import { STATUS_ANNOTATION, parseStatus, type ReadStatus } from '../node/status.js';

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
}

/** The turn annotation's text as a record keeps it: a turn, or a lapsed one. */
export function turnFields(text: string | undefined): Pick<NodeRecord, 'turn' | 'lapsedTurn'> {
  return parseLapsedTurn(text) === undefined
    ? { turn: text, lapsedTurn: undefined }
    : { turn: undefined, lapsedTurn: text };
}

/** Nodes per page of the list (client-go's reflector pages by 500 too). */
export const PAGE_SIZE = 500;

/** Read through a call so that the compiler does not narrow it across awaits. */
function aborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

export function recordOf(node: V1Node, groupLabel: string | undefined): NodeRecord {
  const meta = node.metadata ?? {};
  return {
    ...judgeNode(node, groupLabel),
    name: meta.name ?? '',
    status: parseStatus(meta.annotations?.[STATUS_ANNOTATION]),
    ...turnFields(meta.annotations?.[TURN_ANNOTATION]),
  };
}

export interface FleetViewOptions {
  kube: Kube;
  clock: Clock;
  log: Logger;
  random: () => number;
  /** --group-label when --group-concurrency is set. */
  groupLabel: string | undefined;
  /** Nodes per page of a list. Default PAGE_SIZE. */
  pageSize?: number;
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
  /** The fleet's health, kept until a node's health, cycle, group or existence changes. */
  private health: { shown: number; value: FleetHealth } | undefined;
  /** A list has been taken: the view is complete (planning before it would miss waiters). */
  synced = false;
  /**
   * Since when (monotonic ms) the view has not been following the fleet: from the start until the
   * first list, and from a failed list or watch until a list succeeds or a watch has run for
   * WATCH_BASE_BACKOFF_MS. undefined while it follows. A leader blind for a lease gives up leading.
   */
  blindSince: number | undefined;

  constructor(private readonly o: FleetViewOptions) {
    this.blindSince = monotonicMs(o.clock);
  }

  /** Keeps the view until `signal` aborts, calling `changed` after each change. Never rejects. */
  async follow(changed: () => void, signal: AbortSignal): Promise<void> {
    let resourceVersion: string | undefined;
    for (let failures = 0; !signal.aborted;) {
      if (resourceVersion === undefined) {
        resourceVersion = await this.relist(signal);
        if (resourceVersion !== undefined) changed();
      }
      const run =
        resourceVersion === undefined
          ? { failed: true, gone: false, resourceVersion }
          : await this.watch(resourceVersion, changed, signal);
      resourceVersion = run.gone ? undefined : run.resourceVersion;
      failures = run.failed ? failures + 1 : 0;
      if (failures > 0 && !aborted(signal)) {
        const pause = backoffMs(failures, WATCH_BASE_BACKOFF_MS, WATCH_MAX_BACKOFF_MS, this.o.random);
        await this.o.clock.sleep(pause, signal).catch(() => undefined);
      }
    }
  }

  /**
   * One list, page by page (PAGE_SIZE Nodes, each page with its own deadline: at 5,000 Nodes of
   * 10 KB one unpaginated answer is 50 MB and may not arrive within one), from one snapshot; the
   * view is replaced only by a whole list. Its resourceVersion, or undefined on failure (a page
   * refused with 410 because the snapshot is too old to continue starts the next list afresh).
   */
  private async relist(signal: AbortSignal): Promise<string | undefined> {
    try {
      const nodes = new Map<string, NodeRecord>();
      const limit = this.o.pageSize ?? PAGE_SIZE;
      let page = await this.o.kube.listNodesPage({ limit }, signal);
      const resourceVersion = page.resourceVersion;
      for (;;) {
        for (const node of page.items) this.put(node, nodes);
        if (page.continue === undefined) break;
        page = await this.o.kube.listNodesPage({ limit, continue: page.continue }, signal);
      }
      this.nodes.clear();
      for (const index of [this.planned, this.turned, this.cycling, this.ahead, this.unwell, this.spoke])
        index.clear();
      this.health = undefined;
      for (const record of nodes.values()) this.set(record);
      this.synced = true;
      this.blindSince = undefined;
      return resourceVersion;
    } catch (err) {
      if (!signal.aborted) this.o.log.warn('coordinator cannot list nodes', { error: statusMessage(err) });
      this.blind();
      return undefined;
    }
  }

  /** The view has stopped following the fleet (kept from the first moment). */
  private blind(): void {
    this.blindSince ??= monotonicMs(this.o.clock);
  }

  private put(node: V1Node, into?: Map<string, NodeRecord>): void {
    const record = recordOf(node, this.o.groupLabel);
    if (record.name === '') return;
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
    if (
      before?.inCycle !== record.inCycle ||
      before.unhealthy !== record.unhealthy ||
      before.group !== record.group ||
      before.quarantined !== record.quarantined
    )
      this.health = undefined;
  }

  delete(name: string): void {
    if (!this.nodes.delete(name)) return;
    for (const index of [this.planned, this.turned, this.cycling, this.ahead, this.unwell, this.spoke])
      index.delete(name);
    this.health = undefined;
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

  /** The unavailable nodes (unhealthy, in no cycle), to their group. */
  unavailable(): Map<string, string> {
    const down = new Map<string, string>();
    for (const r of this.records(this.unwell)) down.set(r.name, r.group);
    return down;
  }

  private async watch(
    resourceVersion: string,
    changed: () => void,
    signal: AbortSignal,
  ): Promise<{ failed: boolean; gone: boolean; resourceVersion: string }> {
    const started = this.o.clock.now().getTime();
    const stop = new AbortController();
    const both = AbortSignal.any([signal, stop.signal]);
    const run = { failed: false, gone: false, resourceVersion, events: 0 };
    // a watch that has run this long without failing follows the fleet again
    void this.o.clock.sleep(WATCH_BASE_BACKOFF_MS, both).then(
      () => (this.blindSince = undefined),
      () => undefined,
    );
    try {
      await this.o.kube.watchNodes(
        (event) => {
          const rv = event.object.metadata?.resourceVersion;
          if (event.type === 'ERROR') {
            run.gone = true; // 410 Expired in the stream: list again
            stop.abort();
            return;
          }
          if (rv !== undefined) run.resourceVersion = rv;
          if (event.type === 'BOOKMARK') return;
          run.events++;
          if (event.type === 'DELETED') this.delete(event.object.metadata?.name ?? '');
          else this.put(event.object);
          changed();
        },
        { resourceVersion, signal: both },
      );
    } catch (err) {
      if (!signal.aborted) {
        run.failed = true;
        run.gone = isGone(err);
        this.o.log.debug('coordinator node watch failed', { error: statusMessage(err) });
      }
    }
    const brief = this.o.clock.now().getTime() - started < WATCH_BASE_BACKOFF_MS && run.events === 0;
    stop.abort();
    if ((run.failed || run.gone || brief) && !signal.aborted) this.blind();
    return {
      failed: run.failed || (brief && !signal.aborted),
      gone: run.gone,
      resourceVersion: run.resourceVersion,
    };
  }
}
