// The Kube an agent gets inside the simulator: the real HTTP client, made deterministic.
//
// - Every call goes through the real client (client-node over HTTP to the fake API server) but is
//   tracked by the virtual time (it waits for the call before advancing) and serialized through one
//   FIFO gate shared by all agents, so the server sees requests in program order.
// - Watches of the lock's DaemonSet are delivered from the server's write feed as virtual-time
//   tasks instead of over a streaming HTTP response: the order in which waiting agents wake up is
//   then fixed by the seed, not by socket timing. Each watch still counts as one API request.
// - kill() makes the agent behave like a process killed by a reboot: calls never return.
import type { Kube, V1DaemonSet, V1Node, V1Pod, WatchEvent, WatchOptions } from '../kube/kube.js';
import { ForwardingKube, type KubeMethod } from '../kube/forwarding-kube.js';
import type { FeedWatchCost } from './api-cost.js';
import type { VirtualTime } from './virtual-time.js';

/** The part of the fake API server's write feed that watches need. */
export interface WriteFeed {
  onWrite(
    listener: (e: { type: 'ADDED' | 'MODIFIED' | 'DELETED'; resource: string; object: unknown }) => void,
  ): () => void;
}

interface FeedEvent {
  /** Bytes of the event as a watch stream would carry it. */
  bytes: number;
  rv: number;
  /** `resource/namespace/name`. */
  key: string;
  event: WatchEvent<unknown>;
}

type FeedListener = (event: WatchEvent<unknown>, bytes: number) => void;

/** The feed's resources: the lock's DaemonSet, the Nodes, and the pods (by the node they run on). */
const FED = new Set(['daemonsets', 'nodes', 'pods']);
/** Events kept per resource for a watch that starts from a resourceVersion. */
const HISTORY = 1024;

function keyOf(resource: string, object: unknown): { rv: number; key: string } {
  const o = object as {
    metadata?: { resourceVersion?: string; namespace?: string; name?: string };
    spec?: { nodeName?: string };
  };
  const meta = o.metadata;
  return {
    rv: Number(meta?.resourceVersion ?? 0),
    // a pod is followed by the node it runs on (fieldSelector spec.nodeName, an agent's own pods)
    key:
      resource === 'pods'
        ? podsKey(o.spec?.nodeName ?? '')
        : `${resource}/${meta?.namespace ?? ''}/${meta?.name ?? ''}`,
  };
}

/** The feed's key of the pods on `node`. */
function podsKey(node: string): string {
  return `pods/node/${node}`;
}

/**
 * Changes of the watched resources from the server's write feed, with a short history per resource
 * for resourceVersion replay. A listener follows one object (`resource/namespace/name`), one node's
 * pods (`pods/node/NAME`) or every object of a resource (`resource/*`).
 */
export class WatchFeed {
  private readonly history = new Map<string, FeedEvent[]>();
  private readonly listeners = new Map<string, Set<FeedListener>>();
  private readonly unsubscribe: () => void;

  constructor(feed: WriteFeed) {
    this.unsubscribe = feed.onWrite((e) => {
      if (!FED.has(e.resource)) return;
      const { rv, key } = keyOf(e.resource, e.object);
      const event = { type: e.type, object: structuredClone(e.object) };
      const entry: FeedEvent = { rv, key, event, bytes: JSON.stringify(event).length + 1 };
      const kept = this.kept(e.resource);
      kept.push(entry);
      if (kept.length > HISTORY) kept.shift();
      for (const k of [key, `${e.resource}/*`])
        for (const listener of this.listeners.get(k) ?? []) listener(entry.event, entry.bytes);
    });
  }

  private kept(resource: string): FeedEvent[] {
    let kept = this.history.get(resource);
    if (kept === undefined) {
      kept = [];
      this.history.set(resource, kept);
    }
    return kept;
  }

  /** Calls `listener` for every later change of `key` (and for its changes after `fromRv`). */
  subscribe(key: string, fromRv: number | undefined, listener: FeedListener): () => void {
    if (fromRv !== undefined) {
      const all = key.endsWith('/*') ? key.slice(0, -1) : undefined;
      for (const e of this.kept(key.slice(0, key.indexOf('/'))))
        if ((e.key === key || (all !== undefined && e.key.startsWith(all))) && e.rv > fromRv)
          listener(e.event, e.bytes);
    }
    let set = this.listeners.get(key);
    if (!set) {
      set = new Set();
      this.listeners.set(key, set);
    }
    set.add(listener);
    return () => set.delete(listener);
  }

  close(): void {
    this.unsubscribe();
  }
}

/** One FIFO lane for all HTTP calls of all agents. */
export class SerialGate {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(work: () => Promise<T>): Promise<T> {
    const next = this.tail.then(work, work);
    this.tail = next.catch(() => undefined);
    return next;
  }
}

/** Counters shared by all tracked clients. */
export interface KubeCounters {
  /** Watches started (each is one API request in a real cluster). */
  watches: number;
  /** Calls by method name. */
  calls: Record<string, number>;
  /** Watch events delivered, and their bytes (as the API server would stream them). */
  watchEvents: number;
  watchBytes: number;
  /** The same watches by who started them and of what (`owner|resource`), for the cost table. */
  feed: Record<string, FeedWatchCost>;
  /** The watches started by each node's agent (by node name). */
  watchesBy: Record<string, number>;
}

export function newKubeCounters(): KubeCounters {
  return { watches: 0, calls: {}, watchEvents: 0, watchBytes: 0, feed: {}, watchesBy: {} };
}

export interface TrackedKubeDeps {
  inner: Kube;
  time: VirtualTime;
  gate: SerialGate;
  feed: WatchFeed;
  counters: KubeCounters;
  /** When false, watches never deliver (a model of a client that only polls). Default true. */
  watchEvents?: boolean;
  /** The agent's node whose client this is (undefined: the coordinator's), for the cost table. */
  owner?: string | undefined;
}

function never<T>(): Promise<T> {
  return new Promise<T>(() => undefined);
}

/** Names the cost table counts a call under, where it is not the method's own (a page is a list). */
const COUNTED_AS: Partial<Record<KubeMethod, string>> = {
  listNodesPage: 'listNodes',
  listPodsPage: 'listPods',
};

/** A Kube for one agent process; see the file comment. */
export class TrackedKube extends ForwardingKube {
  private dead = false;

  constructor(private readonly deps: TrackedKubeDeps) {
    super(deps.inner);
  }

  /** From now on, like a killed process: no call returns, no watch delivers. */
  kill(): void {
    this.dead = true;
  }

  /** Every call passed on is counted, gated and timed (the watches below are the feed's). */
  protected override forward<T>(method: KubeMethod, work: (k: Kube) => Promise<T>): Promise<T> {
    return this.call(COUNTED_AS[method] ?? method, work);
  }

  private call<T>(method: string, work: (k: Kube) => Promise<T>): Promise<T> {
    if (this.dead) return never();
    const { counters, time, gate, inner } = this.deps;
    counters.calls[method] = (counters.calls[method] ?? 0) + 1;
    return time
      .track(() => gate.run(() => work(inner)), method)
      .then(
        (value) => (this.dead ? never<T>() : value),
        (err: unknown) => (this.dead ? never<T>() : Promise.reject(toError(err))),
      );
  }

  /**
   * One node (fieldSelector metadata.name=…) or every node. Without a resourceVersion the current
   * objects come first as ADDED (one list through the gate, as the server sends them).
   */
  override async watchNodes(
    onEvent: (event: WatchEvent<V1Node>) => void,
    options: WatchOptions,
  ): Promise<void> {
    if (this.dead) return never();
    const name = /^metadata\.name=(.+)$/.exec(options.fieldSelector ?? '')?.[1];
    const cost = this.countWatch('nodes');
    const rv =
      options.resourceVersion === undefined
        ? await this.sendCurrent(name, onEvent, options.signal)
        : Number(options.resourceVersion);
    const key = name === undefined ? 'nodes/*' : `nodes//${name}`;
    return this.follow({ key, cost, timeoutSeconds: options.timeoutSeconds }, rv, onEvent, options.signal);
  }

  /**
   * One node's pods (fieldSelector spec.nodeName=…) or every pod. Without a resourceVersion the
   * current pods come first as ADDED (one list through the gate, as the server sends them).
   */
  override async watchPods(
    onEvent: (event: WatchEvent<V1Pod>) => void,
    options: WatchOptions,
  ): Promise<void> {
    if (this.dead) return never();
    const node = /^spec\.nodeName=(.*)$/.exec(options.fieldSelector ?? '')?.[1];
    const cost = this.countWatch('pods');
    let rv: number;
    if (options.resourceVersion === undefined) {
      const selector = node === undefined ? {} : { fieldSelector: `spec.nodeName=${node}` };
      const listed = await this.call('watchPods', (k) => k.listPodsPage(undefined, selector, options.signal));
      for (const pod of listed.items) if (!options.signal.aborted) onEvent({ type: 'ADDED', object: pod });
      rv = Number(listed.resourceVersion);
    } else rv = Number(options.resourceVersion);
    const key = node === undefined ? 'pods/*' : podsKey(node);
    return this.follow({ key, cost, timeoutSeconds: options.timeoutSeconds }, rv, onEvent, options.signal);
  }

  /** The current node `name` (or every node) as ADDED events; returns their highest resourceVersion. */
  private async sendCurrent(
    name: string | undefined,
    onEvent: (event: WatchEvent<V1Node>) => void,
    signal: AbortSignal,
  ): Promise<number> {
    const listed = await this.call('watchNodes', (k) =>
      name === undefined ? k.listNodes({}, signal) : k.getNode(name, signal).then((n) => [n]),
    );
    let rv = 0;
    for (const node of listed) {
      rv = Math.max(rv, Number(node.metadata?.resourceVersion ?? 0));
      if (!signal.aborted) onEvent({ type: 'ADDED', object: node });
    }
    return rv;
  }

  override watchDaemonSet(
    namespace: string,
    name: string,
    onEvent: (event: WatchEvent<V1DaemonSet>) => void,
    options: { resourceVersion?: string; signal: AbortSignal },
  ): Promise<void> {
    if (this.dead) return never();
    const cost = this.countWatch('daemonsets');
    const rv = options.resourceVersion === undefined ? undefined : Number(options.resourceVersion);
    return this.follow({ key: `daemonsets/${namespace}/${name}`, cost }, rv, onEvent, options.signal);
  }

  /** One watch more of `resource` by this client's owner; the entry its events are counted in. */
  private countWatch(resource: string): FeedWatchCost {
    const { counters, owner } = this.deps;
    counters.watches++;
    const key = `${owner ?? ''}|${resource}`;
    const cost = (counters.feed[key] ??= { owner, resource, watches: 0, bytes: 0 });
    cost.watches++;
    if (owner !== undefined) counters.watchesBy[owner] = (counters.watchesBy[owner] ?? 0) + 1;
    return cost;
  }

  /**
   * Delivers the feed's changes of `key` as virtual-time tasks until `signal` aborts, or, when the
   * watch asked for a `timeoutSeconds`, until that much virtual time has passed (as the server ends
   * it: the client watches again, one request more).
   */
  private follow<T>(
    { key, cost, timeoutSeconds }: { key: string; cost: FeedWatchCost; timeoutSeconds?: number | undefined },
    fromRv: number | undefined,
    onEvent: (event: WatchEvent<T>) => void,
    signal: AbortSignal,
  ): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    const { time, feed } = this.deps;
    const deliver = this.deps.watchEvents ?? true;
    return new Promise<void>((resolve) => {
      let open = true;
      const unsubscribe = feed.subscribe(key, fromRv, (event, bytes) => {
        if (!deliver) return;
        this.deps.counters.watchEvents++;
        this.deps.counters.watchBytes += bytes;
        cost.bytes += bytes;
        time.schedule(time.nowMs(), () => {
          if (open && !signal.aborted && !this.dead) onEvent(event as WatchEvent<T>);
        });
      });
      const end = (): void => {
        if (!open) return;
        open = false;
        unsubscribe();
        resolve();
      };
      if (timeoutSeconds !== undefined && timeoutSeconds > 0)
        time.schedule(time.nowMs() + timeoutSeconds * 1000, end);
      signal.addEventListener('abort', end, { once: true });
    });
  }
}

function toError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
