// The Kube an agent gets inside the simulator: the real HTTP client, made deterministic.
//
// - Every call goes through the real client (client-node over HTTP to the fake API server) but is
//   tracked by the virtual time (it waits for the call before advancing) and serialized through one
//   FIFO gate shared by all agents, so the server sees requests in program order.
// - Watches of the lock's DaemonSet are delivered from the server's write feed as virtual-time
//   tasks instead of over a streaming HTTP response: the order in which waiting agents wake up is
//   then fixed by the seed, not by socket timing. Each watch still counts as one API request.
// - kill() makes the agent behave like a process killed by a reboot: calls never return.
import type { Kube, ListOptions, V1DaemonSet, V1Node, WatchEvent, WatchOptions } from '../kube/kube.js';
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

function keyOf(resource: string, object: unknown): { rv: number; key: string } {
  const meta = (object as { metadata?: { resourceVersion?: string; namespace?: string; name?: string } })
    .metadata;
  return {
    rv: Number(meta?.resourceVersion ?? 0),
    key: `${resource}/${meta?.namespace ?? ''}/${meta?.name ?? ''}`,
  };
}

/**
 * Changes of the watched resources from the server's write feed, with a short history for
 * resourceVersion replay. A listener follows one object (`resource/namespace/name`) or every object
 * of a resource (`resource/*`).
 */
export class WatchFeed {
  private readonly history: FeedEvent[] = [];
  private readonly listeners = new Map<string, Set<FeedListener>>();
  private readonly unsubscribe: () => void;

  constructor(feed: WriteFeed) {
    this.unsubscribe = feed.onWrite((e) => {
      if (e.resource !== 'daemonsets' && e.resource !== 'nodes') return;
      const { rv, key } = keyOf(e.resource, e.object);
      const event = { type: e.type, object: structuredClone(e.object) };
      const entry: FeedEvent = { rv, key, event, bytes: JSON.stringify(event).length + 1 };
      this.history.push(entry);
      if (this.history.length > 1024) this.history.shift();
      for (const k of [key, `${e.resource}/*`])
        for (const listener of this.listeners.get(k) ?? []) listener(entry.event, entry.bytes);
    });
  }

  /** Calls `listener` for every later change of `key` (and for its changes after `fromRv`). */
  subscribe(key: string, fromRv: number | undefined, listener: FeedListener): () => void {
    if (fromRv !== undefined) {
      const all = key.endsWith('/*') ? key.slice(0, -1) : undefined;
      for (const e of this.history)
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
}

export function newKubeCounters(): KubeCounters {
  return { watches: 0, calls: {}, watchEvents: 0, watchBytes: 0 };
}

export interface TrackedKubeDeps {
  inner: Kube;
  time: VirtualTime;
  gate: SerialGate;
  feed: WatchFeed;
  counters: KubeCounters;
  /** When false, watches never deliver (a model of a client that only polls). Default true. */
  watchEvents?: boolean;
}

function never<T>(): Promise<T> {
  return new Promise<T>(() => undefined);
}

/** A Kube for one agent process; see the file comment. */
export class TrackedKube implements Kube {
  private dead = false;

  constructor(private readonly deps: TrackedKubeDeps) {}

  /** From now on, like a killed process: no call returns, no watch delivers. */
  kill(): void {
    this.dead = true;
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

  getNode: Kube['getNode'] = (name, signal) => this.call('getNode', (k) => k.getNode(name, signal));
  listNodes: Kube['listNodes'] = (options, signal) =>
    this.call('listNodes', (k) => k.listNodes(options, signal));
  listNodeRows: Kube['listNodeRows'] = (options, signal) =>
    this.call('listNodeRows', (k) => k.listNodeRows(options, signal));
  listNodesPage: Kube['listNodesPage'] = (options, signal) =>
    this.call('listNodes', (k) => k.listNodesPage(options, signal));
  jsonPatchNode: Kube['jsonPatchNode'] = (name, ops, signal) =>
    this.call('jsonPatchNode', (k) => k.jsonPatchNode(name, ops, signal));
  mergePatchNode: Kube['mergePatchNode'] = (name, patch, signal) =>
    this.call('mergePatchNode', (k) => k.mergePatchNode(name, patch, signal));
  listPods = (
    namespace: string | undefined,
    options?: ListOptions,
    signal?: AbortSignal,
  ): ReturnType<Kube['listPods']> => this.call('listPods', (k) => k.listPods(namespace, options, signal));
  evictPod: Kube['evictPod'] = (namespace, name, options, signal) =>
    this.call('evictPod', (k) => k.evictPod(namespace, name, options, signal));
  deletePod: Kube['deletePod'] = (namespace, name, options, signal) =>
    this.call('deletePod', (k) => k.deletePod(namespace, name, options, signal));
  dryRunEviction: Kube['dryRunEviction'] = (namespace, name, options, signal) =>
    this.call('dryRunEviction', (k) => k.dryRunEviction(namespace, name, options, signal));
  listPodDisruptionBudgets: Kube['listPodDisruptionBudgets'] = (namespace, signal) =>
    this.call('listPodDisruptionBudgets', (k) => k.listPodDisruptionBudgets(namespace, signal));
  listDaemonSets: Kube['listDaemonSets'] = (namespace, options, signal) =>
    this.call('listDaemonSets', (k) => k.listDaemonSets(namespace, options, signal));
  getDaemonSet: Kube['getDaemonSet'] = (namespace, name, signal) =>
    this.call('getDaemonSet', (k) => k.getDaemonSet(namespace, name, signal));
  mergePatchDaemonSet: Kube['mergePatchDaemonSet'] = (namespace, name, patch, signal) =>
    this.call('mergePatchDaemonSet', (k) => k.mergePatchDaemonSet(namespace, name, patch, signal));
  getDeployment: Kube['getDeployment'] = (namespace, name, signal) =>
    this.call('getDeployment', (k) => k.getDeployment(namespace, name, signal));
  mergePatchDeployment: Kube['mergePatchDeployment'] = (namespace, name, patch, signal) =>
    this.call('mergePatchDeployment', (k) => k.mergePatchDeployment(namespace, name, patch, signal));
  getReplicaSet: Kube['getReplicaSet'] = (namespace, name, signal) =>
    this.call('getReplicaSet', (k) => k.getReplicaSet(namespace, name, signal));
  createEvent: Kube['createEvent'] = (namespace, event, signal) =>
    this.call('createEvent', (k) => k.createEvent(namespace, event, signal));
  mergePatchEvent: Kube['mergePatchEvent'] = (namespace, name, patch, signal) =>
    this.call('mergePatchEvent', (k) => k.mergePatchEvent(namespace, name, patch, signal));

  getLease: Kube['getLease'] = (namespace, name, signal) =>
    this.call('getLease', (k) => k.getLease(namespace, name, signal));
  createLease: Kube['createLease'] = (namespace, lease, signal) =>
    this.call('createLease', (k) => k.createLease(namespace, lease, signal));
  replaceLease: Kube['replaceLease'] = (namespace, name, lease, signal) =>
    this.call('replaceLease', (k) => k.replaceLease(namespace, name, lease, signal));

  /**
   * One node (fieldSelector metadata.name=…) or every node. Without a resourceVersion the current
   * objects come first as ADDED (one list through the gate, as the server sends them).
   */
  async watchNodes(onEvent: (event: WatchEvent<V1Node>) => void, options: WatchOptions): Promise<void> {
    if (this.dead) return never();
    const name = /^metadata\.name=(.+)$/.exec(options.fieldSelector ?? '')?.[1];
    this.deps.counters.watches++;
    const rv =
      options.resourceVersion === undefined
        ? await this.sendCurrent(name, onEvent, options.signal)
        : Number(options.resourceVersion);
    return this.follow(name === undefined ? 'nodes/*' : `nodes//${name}`, rv, onEvent, options.signal);
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

  watchDaemonSet(
    namespace: string,
    name: string,
    onEvent: (event: WatchEvent<V1DaemonSet>) => void,
    options: { resourceVersion?: string; signal: AbortSignal },
  ): Promise<void> {
    if (this.dead) return never();
    this.deps.counters.watches++;
    const rv = options.resourceVersion === undefined ? undefined : Number(options.resourceVersion);
    return this.follow(`daemonsets/${namespace}/${name}`, rv, onEvent, options.signal);
  }

  /** Delivers the feed's changes of `key` as virtual-time tasks until `signal` aborts. */
  private follow<T>(
    key: string,
    fromRv: number | undefined,
    onEvent: (event: WatchEvent<T>) => void,
    signal: AbortSignal,
  ): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    const { time, feed } = this.deps;
    const deliver = this.deps.watchEvents ?? true;
    return new Promise<void>((resolve) => {
      const unsubscribe = feed.subscribe(key, fromRv, (event, bytes) => {
        if (!deliver) return;
        this.deps.counters.watchEvents++;
        this.deps.counters.watchBytes += bytes;
        time.schedule(time.nowMs(), () => {
          if (!signal.aborted && !this.dead) onEvent(event as WatchEvent<T>);
        });
      });
      signal.addEventListener(
        'abort',
        () => {
          unsubscribe();
          resolve();
        },
        { once: true },
      );
    });
  }
}

function toError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
