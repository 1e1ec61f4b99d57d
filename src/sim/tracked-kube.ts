// The Kube an agent gets inside the simulator: the real HTTP client, made deterministic.
//
// - Every call goes through the real client (client-node over HTTP to the fake API server) but is
//   tracked by the virtual time (it waits for the call before advancing) and serialized through one
//   FIFO gate shared by all agents, so the server sees requests in program order.
// - Watches of the lock's DaemonSet are delivered from the server's write feed as virtual-time
//   tasks instead of over a streaming HTTP response: the order in which waiting agents wake up is
//   then fixed by the seed, not by socket timing. Each watch still counts as one API request.
// - kill() makes the agent behave like a process killed by a reboot: calls never return.
import type { Kube, ListOptions, V1DaemonSet, WatchEvent } from '../kube/kube.js';
import type { VirtualTime } from './virtual-time.js';

/** The part of the fake API server's write feed that watches need. */
export interface WriteFeed {
  onWrite(
    listener: (e: { type: 'ADDED' | 'MODIFIED' | 'DELETED'; resource: string; object: unknown }) => void,
  ): () => void;
}

interface DsEvent {
  rv: number;
  key: string;
  event: WatchEvent<V1DaemonSet>;
}

type DsListener = (event: WatchEvent<V1DaemonSet>) => void;

function toEntry(type: DsEvent['event']['type'], object: V1DaemonSet): DsEvent {
  const meta = object.metadata;
  return {
    rv: Number(meta?.resourceVersion ?? 0),
    key: `${meta?.namespace ?? ''}/${meta?.name ?? ''}`,
    event: { type, object },
  };
}

/** DaemonSet changes from the server's write feed, with a short history for resourceVersion replay. */
export class DaemonSetFeed {
  private readonly history: DsEvent[] = [];
  private readonly listeners = new Map<string, Set<DsListener>>();
  private readonly unsubscribe: () => void;

  constructor(feed: WriteFeed) {
    this.unsubscribe = feed.onWrite((e) => {
      if (e.resource !== 'daemonsets') return;
      const entry = toEntry(e.type, structuredClone(e.object) as V1DaemonSet);
      this.history.push(entry);
      if (this.history.length > 256) this.history.shift();
      for (const listener of this.listeners.get(entry.key) ?? []) listener(entry.event);
    });
  }

  /** Calls `listener` for every later change of namespace/name (and for changes after `fromRv`). */
  subscribe(key: string, fromRv: number | undefined, listener: DsListener): () => void {
    if (fromRv !== undefined)
      for (const e of this.history) if (e.key === key && e.rv > fromRv) listener(e.event);
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
}

export function newKubeCounters(): KubeCounters {
  return { watches: 0, calls: {} };
}

export interface TrackedKubeDeps {
  inner: Kube;
  time: VirtualTime;
  gate: SerialGate;
  feed: DaemonSetFeed;
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
  jsonPatchNode: Kube['jsonPatchNode'] = (name, ops, signal) =>
    this.call('jsonPatchNode', (k) => k.jsonPatchNode(name, ops, signal));
  mergePatchNode: Kube['mergePatchNode'] = (name, patch, signal) =>
    this.call('mergePatchNode', (k) => k.mergePatchNode(name, patch, signal));
  listPods = (
    namespace: string | undefined,
    options?: ListOptions,
    signal?: AbortSignal,
  ): ReturnType<Kube['listPods']> => this.call('listPods', (k) => k.listPods(namespace, options, signal));
  evictPod: Kube['evictPod'] = (namespace, name, grace, signal) =>
    this.call('evictPod', (k) => k.evictPod(namespace, name, grace, signal));
  listPodDisruptionBudgets: Kube['listPodDisruptionBudgets'] = (namespace, signal) =>
    this.call('listPodDisruptionBudgets', (k) => k.listPodDisruptionBudgets(namespace, signal));
  listDaemonSets: Kube['listDaemonSets'] = (namespace, options, signal) =>
    this.call('listDaemonSets', (k) => k.listDaemonSets(namespace, options, signal));
  getDaemonSet: Kube['getDaemonSet'] = (namespace, name, signal) =>
    this.call('getDaemonSet', (k) => k.getDaemonSet(namespace, name, signal));
  mergePatchDaemonSet: Kube['mergePatchDaemonSet'] = (namespace, name, patch, signal) =>
    this.call('mergePatchDaemonSet', (k) => k.mergePatchDaemonSet(namespace, name, patch, signal));
  createEvent: Kube['createEvent'] = (namespace, event, signal) =>
    this.call('createEvent', (k) => k.createEvent(namespace, event, signal));
  mergePatchEvent: Kube['mergePatchEvent'] = (namespace, name, patch, signal) =>
    this.call('mergePatchEvent', (k) => k.mergePatchEvent(namespace, name, patch, signal));

  /** The agents never watch nodes; the simulator offers no node watch (it would not be replayable). */
  watchNodes(): Promise<void> {
    return Promise.reject(new Error('the simulated Kube does not watch nodes'));
  }

  watchDaemonSet(
    namespace: string,
    name: string,
    onEvent: (event: WatchEvent<V1DaemonSet>) => void,
    options: { resourceVersion?: string; signal: AbortSignal },
  ): Promise<void> {
    if (this.dead) return never();
    const { signal } = options;
    if (signal.aborted) return Promise.resolve();
    this.deps.counters.watches++;
    const { time, feed } = this.deps;
    const deliver = this.deps.watchEvents ?? true;
    return new Promise<void>((resolve) => {
      const rv = options.resourceVersion === undefined ? undefined : Number(options.resourceVersion);
      const unsubscribe = feed.subscribe(`${namespace}/${name}`, rv, (event) => {
        if (!deliver) return;
        time.schedule(time.nowMs(), () => {
          if (!signal.aborted && !this.dead) onEvent(event);
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
