// What an agent follows of its own node (issue 42): its Node for as long as it runs, and its pods
// (fieldSelector spec.nodeName) while a reboot is wanted, each with one reflector (followed.ts). A
// Kube in front of the agent's client (ViewedKube) answers from them what would otherwise be a
// request: a GET of its own Node, a list of its own pods, a watch of its own Node (the turn wait's),
// so that the agent's code, the lock's and the drain's included, reads and polls as before and costs
// the API server nothing while the watches are open. While a watch cannot be held (not yet listed,
// broken, a 403), every such read goes to the API server: the callers' polls are the fallback.
//
// A write of the own Node answers with the Node as written; until the watch has brought that
// version, reads answer with it (never an older Node than one this agent wrote or read). A write
// that fails (a 409 or 422: the Node changed under a guarded write) sends the next read to the API
// server, so that a retry never plans from the view that made it fail.
import type { Clock } from '../clock/clock.js';
import type { Logger } from '../log/logger.js';
import { matches, type Selector } from '../selector/label-selector.js';
import { Followed, FollowedObject } from './followed.js';
import type { Kube, V1DaemonSet, V1Node, V1Pod } from './kube.js';
import { daemonSetListWatch, nodeListWatch, podsListWatch } from './list-watch.js';
import { WATCH_SILENCE_MS } from './reflector.js';
import { ViewedKube, type OwnSource } from './viewed-kube.js';

/**
 * The own watches ask the server to end them after 4–8 hours, not client-go's 5–10 minutes: a waiter
 * holds its watch for as long as the wave lasts (hours on patch night: 4h35m for 1,000 nodes at
 * concurrency 10), and each new watch is one request more per node, which would grow with the fleet.
 * A hung connection is found by the staleness bound instead (WATCH_SILENCE_MS: the server sends
 * bookmarks about every minute, though only once its resource has changed since the watch began; a
 * watch of a resource nothing changes is read again at the bound, one GET).
 */
const OWN_WATCH_MIN_SECONDS = 4 * 3600;
/** The agent's first read of its Node waits this long for the view's first list before it asks itself. */
const NODE_SYNC_WAIT_MS = 5_000;
/** A read of the own pods waits this long for the pods' first list before it asks the server itself. */
const PODS_SYNC_WAIT_MS = 30_000;

export interface OwnViewsOptions {
  /** The agent's client. */
  kube: Kube;
  /** This node (--node-id). */
  nodeName: string;
  clock: Clock;
  log: Logger;
  /** [0, 1): back-off jitter and the spread of watch timeouts. */
  random: () => number;
  /**
   * Staleness bound of each view (ReflectorOptions.silenceMs): a watch silent this long is given up,
   * and a view that has heard nothing for this long answers no read. Default WATCH_SILENCE_MS, 0 =
   * none (the simulator's feed, which sends no bookmarks).
   */
  silenceMs?: number;
  /** The lock's DaemonSet (--ds-namespace, --ds-name): followed while this agent holds a slot. */
  lock?: { namespace: string; name: string };
}

function podKey(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
}

/** A pod as kept: without its managedFields (nothing of the agent reads them; they are most of a pod). */
function keptPod(pod: V1Pod): V1Pod {
  if (pod.metadata?.managedFields === undefined) return pod;
  const metadata = { ...pod.metadata };
  delete metadata.managedFields;
  return { ...pod, metadata };
}

/** A number in [0, 1) that `text` always gives (FNV-1a): a spread that draws nothing at random. */
function spread(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return hash / 2 ** 32;
}

/**
 * The agent's own Node (for as long as it runs), its own pods (while a reboot is wanted) and the
 * lock's DaemonSet (while it holds a slot: DESIGN §13 leaves the waiters to their own Node), each
 * followed by one reflector; `kube` answers from them.
 */
export class OwnViews implements OwnSource {
  readonly node: FollowedObject<V1Node>;
  readonly pods: Followed<V1Pod>;
  /** The lock's DaemonSet; undefined when the agent names none. */
  readonly lock: FollowedObject<V1DaemonSet> | undefined;
  /** The Kube that answers from the views (and passes everything else on). */
  readonly kube: ViewedKube;
  /** run()'s signal: the pods and the lock are followed on demand within it. */
  private running: AbortSignal | undefined;
  /** The pods' reflector, while it runs. */
  private podsRun: AbortController | undefined;
  /** This agent holds a slot (holdLock), whether or not the lock is followed. */
  private slotHeld = false;

  constructor(readonly o: OwnViewsOptions) {
    const silenceMs = o.silenceMs ?? WATCH_SILENCE_MS;
    const common = {
      clock: o.clock,
      log: o.log,
      random: o.random,
      ...(silenceMs > 0 ? { silenceMs } : {}),
    };
    // spread by the node's name, not drawn from `random`: the agent's own draws stay as they were
    const timeoutSeconds = (salt: string): number =>
      Math.round(OWN_WATCH_MIN_SECONDS * (1 + spread(`${o.nodeName}/${salt}`)));
    const node = nodeListWatch(o.kube, o.nodeName, { timeoutSeconds: timeoutSeconds('node') });
    this.node = new FollowedObject(
      new Followed(node, {
        ...common,
        key: () => o.nodeName,
        needs: `get and watch on nodes (${o.nodeName})`,
      }),
      o.nodeName,
    );
    this.pods = new Followed(podsListWatch(o.kube, o.nodeName, { timeoutSeconds: timeoutSeconds('pods') }), {
      ...common,
      key: podKey,
      keep: keptPod,
      needs: 'list and watch on pods (the ClusterRole of the chart grants both)',
    });
    const lock = o.lock;
    this.lock =
      lock === undefined
        ? undefined
        : new FollowedObject(
            new Followed(daemonSetListWatch(o.kube, lock.namespace, lock.name), {
              ...common,
              key: () => lock.name,
              needs: `get and watch on the DaemonSet ${lock.namespace}/${lock.name}`,
            }),
            lock.name,
          );
    this.kube = new ViewedKube(o.kube, this);
  }

  /** Follows the own Node until `signal` aborts (and the pods and the lock while held). Never rejects. */
  async run(signal: AbortSignal): Promise<void> {
    this.running = signal;
    this.node.hold(signal);
    try {
      await new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        else
          signal.addEventListener(
            'abort',
            () => {
              resolve();
            },
            { once: true },
          );
      });
    } finally {
      this.running = undefined;
      this.node.release();
      this.releasePods();
      this.releaseLock();
    }
  }

  /** Starts following the own pods, unless they are followed already or run() is not running. */
  holdPods(): void {
    const running = this.running;
    if (running === undefined || this.podsRun !== undefined) return;
    const stop = new AbortController();
    this.podsRun = stop;
    void this.pods.run(AbortSignal.any([running, stop.signal])).finally(() => {
      if (this.podsRun === stop) this.podsRun = undefined;
    });
  }

  /** Stops following the own pods (an idle agent needs none of them). */
  releasePods(): void {
    this.podsRun?.abort();
    this.podsRun = undefined;
  }

  /**
   * Follows the lock's DaemonSet (this agent holds a slot: its cycle reads the lock again and again),
   * from the last answer about it at hand, unless followed already or run() is not running.
   */
  holdLock(): void {
    this.slotHeld = true;
    const running = this.running;
    if (running === undefined || this.lock === undefined || this.lock.held) return;
    this.lock.hold(running, this.kube.lastLockAnswer());
  }

  /** Stops following the lock (the slot is given back, or none is held). */
  releaseLock(): void {
    this.slotHeld = false;
    this.lock?.release();
  }

  /** A new pass of the decision begins: it shares no answer of the pass before. */
  newPass(): void {
    this.kube.forgetShared();
  }

  /**
   * May repeated reads share an answer (ViewedKube)? While the views run and no slot is held: a
   * holder's looks at its slot (the drain's, the re-verify's) come from the lock's view or the server.
   */
  shares(): boolean {
    return this.running !== undefined && !this.slotHeld;
  }

  /** How long since each view it runs last heard from the API server (kured_ts_view_age_seconds). */
  ages(): { view: 'node' | 'pods' | 'lock'; seconds: number | undefined }[] {
    const seconds = (ms: number | undefined): number | undefined =>
      ms === undefined ? undefined : ms / 1000;
    return [
      { view: 'node' as const, seconds: seconds(this.node.followed.ageMs()) },
      ...(this.podsRun === undefined ? [] : [{ view: 'pods' as const, seconds: seconds(this.pods.ageMs()) }]),
      ...(this.lock?.held === true
        ? [{ view: 'lock' as const, seconds: seconds(this.lock.followed.ageMs()) }]
        : []),
    ];
  }

  /** The first of its views that is stale (Followed.stale), in words; undefined when none is. */
  stale(): string | undefined {
    const views: { stale(): string | undefined }[] = [this.node.followed];
    if (this.podsRun !== undefined) views.push(this.pods);
    if (this.lock?.held === true) views.push(this.lock.followed);
    for (const view of views) {
      const stale = view.stale();
      if (stale !== undefined) return stale;
    }
    return undefined;
  }

  /** Is the own Node followed now? */
  get following(): boolean {
    return this.node.followed.following;
  }

  /** Changes of the own Node and pods taken in so far: `since` of changed(). */
  version(): number {
    return this.node.followed.changes + this.pods.changes;
  }

  /**
   * The next change of the own Node (and of the own pods with `pods`), a break, or `ms`; at once when
   * a change came since the caller read `since` (version()).
   */
  async changed(ms: number, signal: AbortSignal, pods: boolean, since?: number): Promise<void> {
    if (since !== undefined && this.version() !== since) return;
    if (!pods || this.podsRun === undefined) return this.node.followed.changed(ms, signal);
    const stop = new AbortController();
    const both = AbortSignal.any([signal, stop.signal]);
    await Promise.race([this.node.followed.changed(ms, both), this.pods.changed(ms, both)]);
    stop.abort();
  }

  /** The own pods' changes, for the drain's wait until its evicted pods are gone (drain-wait.ts). */
  podChanges(): {
    version(): number;
    changed(ms: number, signal: AbortSignal | undefined, since: number): Promise<void>;
  } {
    return {
      version: () => this.pods.changes,
      changed: (ms, signal, since) => this.pods.changed(ms, signal, since),
    };
  }

  /** Calls `listener` with the own Node's annotations at each change. */
  onNodeChange(listener: (annotations: Record<string, string>) => void): () => void {
    return this.node.followed.subscribe(() => {
      const node = this.node.current();
      if (node !== undefined) listener({ ...node.metadata?.annotations });
    });
  }

  /**
   * The own Node's labels, annotations and spec as followed, and the lock's annotations as last seen;
   * undefined while the Node is not followed.
   */
  fingerprint(): string | undefined {
    const node = this.node.current();
    if (node === undefined) return undefined;
    // and the lock's annotations as last seen (read, written, or watched by a wait for a slot: a
    // change it saw means a pass, even when its wait ended on its timeout)
    const lock = this.kube.lastLockAnswer()?.metadata?.annotations;
    return JSON.stringify([node.metadata?.labels, node.metadata?.annotations, node.spec, lock]);
  }

  /**
   * The own Node as followed, after waiting up to NODE_SYNC_WAIT_MS for the view's first list when it
   * is being taken (the agent's first pass starts with the view): one GET, not two.
   */
  async nodeSoon(signal?: AbortSignal): Promise<V1Node | undefined> {
    if (this.running !== undefined) await this.node.followed.synced(NODE_SYNC_WAIT_MS, signal);
    return this.node.current();
  }

  /** The own pods that `selector` selects, as followed; undefined when a read must ask the server. */
  async currentPods(selector: Selector, signal?: AbortSignal): Promise<V1Pod[] | undefined> {
    this.holdPods();
    if (this.podsRun === undefined || !(await this.pods.synced(PODS_SYNC_WAIT_MS, signal))) return undefined;
    return this.pods.items()?.filter((p) => matches(selector, p.metadata?.labels));
  }
}
