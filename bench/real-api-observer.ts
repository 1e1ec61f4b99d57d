// The benchmark's eyes on the real server: a watch of the lock's DaemonSet (who holds a slot, each
// hand-off and how long it took) and a metadata-only watch of the Nodes (each agent's status
// annotation: its phase and requiredSince, the fair queue's order). Judges what src/sim/observer.ts
// judges in the simulator: hand-offs out of need order, more holders than --concurrency.
import { STATUS_ANNOTATION, parseStatus } from '../src/node/status.js';
import { entriesOf, parseLockAnnotation } from '../src/lock/kured-lock-format.js';
import { TURN_ANNOTATION, parseTurn } from '../src/queue/turn.js';
import { compareWaiters, type Waiter } from '../src/queue/wait-queue.js';
import type { AdminClient } from './real-api-admin.js';
import { DS_NAME, LOCK_ANNOTATION, NS } from './real-api-fleet.js';

/** One freed slot given to the next node. */
export interface HandOff {
  /** When the node took it (the lock named it), ms since the epoch. */
  atMs: number;
  node: string;
  /** From the slot's release (or, when nobody was waiting then, from the taker's wait) to the take. */
  latencyMs: number;
}

interface NodeView {
  phase: string | undefined;
  requiredSinceMs: number | undefined;
  /** When the benchmark saw this wait for the lock begin. */
  waitingSinceMs: number | undefined;
  /** The coordinator's turn annotation is on the node. */
  turn: boolean;
  /** The phase before the current one, and its reason. */
  before: string;
  reason: string;
}

/** What the Nodes showed of the coordinated queue. */
export interface QueueEvents {
  /** Turn annotations put on a node. */
  turns: number;
  /** Turns removed from a node that had not taken a slot (taken back before use). */
  withdrawn: number;
  /** Status phase changes waiting-for-lock -> pending (a waiting agent's pass reporting 'pending' again). */
  pendingAgain: number;
}

interface ObjectMeta {
  metadata?: { name?: string; resourceVersion?: string; annotations?: Record<string, string> };
}

/** One collection the observer follows. */
interface Followed {
  which: 'ds' | 'nodes';
  /** The list's path with its query (ending in ? or &). */
  path: string;
  listAccept?: string;
  watchAccept?: string;
  onObject: (o: ObjectMeta) => void;
}

/** Read through a call so that the compiler does not narrow it across awaits. */
function aborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

const METADATA = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';
const METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';

export class Observer {
  holders = new Set<string>();
  /** When each current holder took its slot. */
  readonly heldSince = new Map<string, number>();
  maxHolders = 0;
  readonly handOffs: HandOff[] = [];
  readonly outOfOrder: { atMs: number; node: string; passedOver: string; detail: string; lapsed: boolean }[] =
    [];
  readonly violations: string[] = [];
  /** Nodes that reached the lock queue (waiting for it, or holding it) at least once. */
  readonly queued = new Set<string>();
  /** Nodes rebooted (by the simulated host) and then released: their first cycle is over. */
  readonly cycled = new Set<string>();
  readonly queueEvents: QueueEvents = { turns: 0, withdrawn: 0, pendingAgain: 0 };
  /** When the first turn showed on a Node, and the first slot was taken (ms since the epoch). */
  firstTurnAtMs: number | undefined;
  firstSlotAtMs: number | undefined;
  /** Nodes whose turn was taken back before they used it (the coordinator then queues them last). */
  readonly lapsed = new Set<string>();
  private readonly rebooted = new Set<string>();
  /** Nodes that took a slot while their turn was on them (the coordinator may leave a used turn on). */
  private readonly usedTurn = new Set<string>();
  private readonly nodes = new Map<string, NodeView>();
  /** Release times of slots not yet taken again, oldest first. */
  private freed: number[] = [];
  private synced = { ds: false, nodes: false };

  constructor(
    private readonly admin: AdminClient,
    private readonly concurrency: number,
    private readonly warn: (message: string) => void,
  ) {}

  get ready(): boolean {
    return this.synced.ds && this.synced.nodes;
  }

  /** Follows the DaemonSet and the Nodes until `signal` aborts. */
  async start(signal: AbortSignal): Promise<void> {
    await Promise.all([
      this.follow(
        {
          which: 'ds',
          path: `/apis/apps/v1/namespaces/${NS}/daemonsets?fieldSelector=metadata.name%3D${DS_NAME}`,
          onObject: (o) => {
            this.onLock(o);
          },
        },
        signal,
      ),
      this.follow(
        {
          which: 'nodes',
          path: '/api/v1/nodes?',
          listAccept: METADATA_LIST,
          watchAccept: METADATA,
          onObject: (o) => {
            this.onNode(o);
          },
        },
        signal,
      ),
    ]);
  }

  /** The simulated host of `node` rebooted. */
  noteReboot(node: string): void {
    this.rebooted.add(node);
  }

  /** A list, then watches from its resourceVersion (a fresh list after 410 Gone), until aborted. */
  private async follow(f: Followed, signal: AbortSignal): Promise<void> {
    let rv: string | undefined;
    while (!signal.aborted) {
      try {
        rv ??= await this.list(f);
        rv = await this.watchFrom(f, rv, signal);
      } catch (err) {
        if (aborted(signal)) return;
        this.warn(`observer watch of ${f.which} failed: ${String(err)}`);
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  }

  /** Lists `f`'s objects to its handler; resolves to the list's resourceVersion. */
  private async list(f: Followed): Promise<string> {
    const list = await this.admin.json<{ items?: ObjectMeta[]; metadata?: { resourceVersion?: string } }>({
      method: 'GET',
      path: f.path,
      ...(f.listAccept === undefined ? {} : { accept: f.listAccept }),
    });
    for (const item of list?.items ?? []) f.onObject(item);
    this.synced[f.which] = true;
    return list?.metadata?.resourceVersion ?? '';
  }

  /** One watch from `from`; resolves to the version to go on from (undefined: list again). */
  private async watchFrom(f: Followed, from: string, signal: AbortSignal): Promise<string | undefined> {
    let rv: string | undefined = from;
    await this.admin.watch(
      `${f.path}&watch=1&allowWatchBookmarks=true&timeoutSeconds=600&resourceVersion=${from}`,
      (e) => {
        const o = e.object as ObjectMeta;
        if (e.type === 'ERROR') rv = undefined;
        else rv = o.metadata?.resourceVersion ?? rv;
        if (e.type !== 'ERROR' && e.type !== 'BOOKMARK') f.onObject(o);
      },
      signal,
      f.watchAccept,
    );
    return rv;
  }

  private onLock(ds: ObjectMeta): void {
    const text = ds.metadata?.annotations?.[LOCK_ANNOTATION];
    let holders: Set<string>;
    try {
      holders = new Set(text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID));
    } catch (err) {
      this.violations.push(`unreadable lock annotation: ${String(err)}`);
      return;
    }
    const now = Date.now();
    const before = this.holders;
    this.holders = holders;
    for (const h of before)
      if (!holders.has(h)) {
        this.freed.push(now);
        this.heldSince.delete(h);
        if (this.rebooted.has(h)) this.cycled.add(h);
      }
    for (const h of holders) if (!before.has(h)) this.taken(h, now);
    this.maxHolders = Math.max(this.maxHolders, holders.size);
    if (holders.size > this.concurrency)
      this.violations.push(
        `${holders.size} holders, concurrency ${this.concurrency}: ${[...holders].join(',')}`,
      );
  }

  /** `node` took a slot: a hand-off when one had been freed before; judged against the queue. */
  private taken(node: string, now: number): void {
    this.queued.add(node);
    this.heldSince.set(node, now);
    this.firstSlotAtMs ??= now;
    const view = this.nodes.get(node);
    if (view?.turn === true) this.usedTurn.add(node);
    this.checkOrder(node, view, now);
    const freedAt = this.freed.shift();
    if (freedAt === undefined) return;
    const from = Math.max(freedAt, view?.waitingSinceMs ?? freedAt);
    this.handOffs.push({ atMs: now, node, latencyMs: now - from });
  }

  private waiterOf(name: string, view: NodeView | undefined): Waiter | undefined {
    if (view?.requiredSinceMs === undefined) return undefined;
    return { node: name, requiredSinceMs: view.requiredSinceMs, overdue: false, group: undefined };
  }

  /**
   * Out of need order: a node waiting since earlier (and not holding a slot, nor a turn for one the
   * coordinator keeps for it) was passed over.
   */
  private checkOrder(node: string, view: NodeView | undefined, now: number): void {
    const mine = this.waiterOf(node, view);
    if (mine === undefined) return;
    for (const [other, o] of this.nodes) {
      if (other === node || o.phase !== 'waiting-for-lock' || this.holders.has(other)) continue;
      // named in the same plan (one turn per free slot): its slot is still kept for it, whichever
      // of the two agents writes first
      if (o.turn && !this.lapsed.has(other)) continue;
      const theirs = this.waiterOf(other, o);
      if (theirs === undefined || compareWaiters(theirs, mine) >= 0) continue;
      const lapsed = this.lapsed.has(other);
      const detail = orderDetail({ node, view, mine }, { node: other, view: o, theirs }, now);
      this.outOfOrder.push({
        atMs: now,
        node,
        passedOver: other,
        detail: `${detail}${lapsed ? ' [its turn had lapsed]' : ''}`,
        lapsed,
      });
      return;
    }
  }

  private onNode(node: ObjectMeta): void {
    const name = node.metadata?.name;
    if (name === undefined) return;
    const before = this.nodes.get(name);
    const view = viewOf(node, before);
    const waiting = view.phase === 'waiting-for-lock';
    if (waiting) this.queued.add(name);
    this.countQueueEvents(name, before, view);
    this.nodes.set(name, view);
  }

  /** Turns given and taken back, and waiting agents going back to 'pending', as the Nodes show. */
  private countQueueEvents(name: string, before: NodeView | undefined, view: NodeView): void {
    const waiting = view.phase === 'waiting-for-lock';
    const hadTurn = before?.turn === true;
    if (view.turn && !hadTurn) {
      this.queueEvents.turns++;
      this.firstTurnAtMs ??= Date.now();
      this.usedTurn.delete(name);
    }
    if (!view.turn && hadTurn && !this.heldSince.has(name) && !this.usedTurn.delete(name)) {
      this.queueEvents.withdrawn++;
      if (waiting) this.lapsed.add(name);
    }
    if (!waiting) this.lapsed.delete(name);
    if (view.phase === 'pending' && before?.phase === 'waiting-for-lock') this.queueEvents.pendingAgain++;
  }

  /** How many nodes say they wait for the lock now. */
  waiting(): number {
    let n = 0;
    for (const v of this.nodes.values()) if (v.phase === 'waiting-for-lock') n++;
    return n;
  }
}

/** What the benchmark keeps of a Node (its status annotation and turn), given what it had before. */
function viewOf(node: ObjectMeta, before: NodeView | undefined): NodeView {
  const annotations = node.metadata?.annotations ?? {};
  const status = parseStatus(annotations[STATUS_ANNOTATION]);
  const phase = status?.phase;
  const requiredSince = status?.requiredSince;
  const fresh = {
    phase,
    requiredSinceMs: requiredSince === undefined ? undefined : Date.parse(requiredSince),
    turn: parseTurn(annotations[TURN_ANNOTATION]) !== undefined, // a lapsed turn recorded there is no turn
    reason: status?.reason ?? '',
  };
  if (before !== undefined && before.phase === phase)
    return { ...fresh, waitingSinceMs: before.waitingSinceMs, before: before.before };
  return {
    ...fresh,
    waitingSinceMs: phase === 'waiting-for-lock' ? Date.now() : undefined,
    before: `${before?.phase ?? 'no status'} (${(before?.reason ?? '').slice(0, 120)})`,
  };
}

interface Party {
  node: string;
  view: NodeView | undefined;
}

/** A sentence on one hand-off out of need order, for the report. */
function orderDetail(
  taker: Party & { mine: Waiter },
  passed: Party & { theirs: Waiter },
  now: number,
): string {
  const since = (v: NodeView | undefined): number => now - (v?.waitingSinceMs ?? now);
  const turn = taker.view?.turn === true ? ' (given a turn)' : '';
  const takerWait =
    taker.view?.phase === 'waiting-for-lock'
      ? `waited ${since(taker.view)} ms`
      : `was ${taker.view?.phase ?? 'unseen'}`;
  return (
    `${taker.node} took a slot${turn} while ${passed.node} waited (its need ` +
    `${taker.mine.requiredSinceMs - passed.theirs.requiredSinceMs} ms older, waiting for ${since(passed.view)} ms, ` +
    `before that ${passed.view?.before ?? '?'}; the taker ${takerWait})`
  );
}
