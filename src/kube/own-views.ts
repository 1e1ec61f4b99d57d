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
import { Followed, type Change } from './followed.js';
import type { Kube, V1Node, V1Pod } from './kube.js';
import { nodeListWatch, podsListWatch } from './list-watch.js';
import { ViewedKube, versionOf, type OwnSource } from './viewed-kube.js';

/**
 * The own watches ask the server to end them after 30–60 minutes (kube's own default when a client
 * gives none), not client-go's 5–10: an idle agent then opens about one watch an hour per object.
 * A hung connection is found by the silence bound instead (the server sends bookmarks every minute).
 */
export const OWN_WATCH_MIN_SECONDS = 1800;
/** A watch of the agent's own that brings neither an event nor a bookmark for this long is given up. */
export const OWN_WATCH_SILENCE_MS = 150_000;
/** The agent's first read of its Node waits this long for the view's first list before it asks itself. */
export const NODE_SYNC_WAIT_MS = 5_000;
/** A read of the own pods waits this long for the pods' first list before it asks the server itself. */
export const PODS_SYNC_WAIT_MS = 30_000;

export interface OwnViewsOptions {
  /** The agent's client. */
  kube: Kube;
  /** This node (--node-id). */
  nodeName: string;
  clock: Clock;
  log: Logger;
  /** [0, 1): back-off jitter and the spread of watch timeouts. */
  random: () => number;
  /** Silence bound of each watch; default OWN_WATCH_SILENCE_MS, 0 = none (the simulator's feed). */
  silenceMs?: number;
}

/** Is version `a` at least `b`? Numbers as kube-apiserver's are compared; other tokens only for equality. */
function atLeast(a: string, b: string): boolean {
  if (a === b) return true;
  if (!/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return BigInt(a) >= BigInt(b);
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

/** The agent's own Node and pods, followed; `kube` answers from them. */
export class OwnViews implements OwnSource {
  readonly node: Followed<V1Node>;
  readonly pods: Followed<V1Pod>;
  /** The Kube that answers from the views (and passes everything else on). */
  readonly kube: ViewedKube;
  /** The Node as this agent last wrote (or read past the view) it, until the watch brings it. */
  private noted: V1Node | undefined;
  /** The last write of the Node failed: the next read asks the server. */
  private dirty = false;
  /** run()'s signal: the pods are followed on demand within it. */
  private running: AbortSignal | undefined;
  /** The pods' reflector, while it runs. */
  private podsRun: AbortController | undefined;

  constructor(readonly o: OwnViewsOptions) {
    const silenceMs = o.silenceMs ?? OWN_WATCH_SILENCE_MS;
    const common = {
      clock: o.clock,
      log: o.log,
      random: o.random,
      ...(silenceMs > 0 ? { silenceMs } : {}),
    };
    const timeoutSeconds = (): number => Math.round(OWN_WATCH_MIN_SECONDS * (1 + o.random()));
    this.node = new Followed(nodeListWatch(o.kube, o.nodeName, { timeoutSeconds: timeoutSeconds() }), {
      ...common,
      key: () => o.nodeName,
      needs: `get and watch on nodes (its own, ${o.nodeName})`,
    });
    this.pods = new Followed(podsListWatch(o.kube, o.nodeName, { timeoutSeconds: timeoutSeconds() }), {
      ...common,
      key: podKey,
      keep: keptPod,
      needs: 'list and watch on pods (the ClusterRole of chart 0.2 and later grants watch)',
    });
    this.node.subscribe((change) => {
      this.take(change);
    });
    this.kube = new ViewedKube(o.kube, this);
  }

  /** Follows the own Node until `signal` aborts (and the own pods while held). Never rejects. */
  async run(signal: AbortSignal): Promise<void> {
    this.running = signal;
    try {
      await this.node.run(signal);
    } finally {
      this.running = undefined;
      this.releasePods();
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

  /** Is the own Node followed now? */
  get following(): boolean {
    return this.node.following;
  }

  /** The next change of the own Node (and of the own pods with `pods`), a break, or `ms`. */
  async changed(ms: number, signal: AbortSignal, pods: boolean): Promise<void> {
    if (!pods || this.podsRun === undefined) return this.node.changed(ms, signal);
    const stop = new AbortController();
    const both = AbortSignal.any([signal, stop.signal]);
    await Promise.race([this.node.changed(ms, both), this.pods.changed(ms, both)]);
    stop.abort();
  }

  /** Calls `listener` with the own Node's annotations at each change. */
  onNodeChange(listener: (annotations: Record<string, string>) => void): () => void {
    return this.node.subscribe(() => {
      const node = this.currentNode();
      if (node !== undefined) listener({ ...node.metadata?.annotations });
    });
  }

  /** The own Node's labels, annotations and spec as followed; undefined while not followed. */
  fingerprint(): string | undefined {
    const node = this.currentNode();
    if (node === undefined) return undefined;
    return JSON.stringify([node.metadata?.labels, node.metadata?.annotations, node.spec]);
  }

  /** The own Node as best known without a request; undefined when a read must ask the server. */
  currentNode(): V1Node | undefined {
    if (this.dirty) return undefined;
    const watched = this.node.get(this.o.nodeName);
    if (watched === undefined) return undefined;
    return this.noted ?? watched;
  }

  /**
   * currentNode(), after waiting up to NODE_SYNC_WAIT_MS for the view's first list when it is being
   * taken (the agent's first pass starts with the view): one GET, not two.
   */
  async nodeSoon(signal?: AbortSignal): Promise<V1Node | undefined> {
    if (this.running !== undefined && !this.dirty && !this.node.following && this.node.changes === 0)
      await this.node.synced(NODE_SYNC_WAIT_MS, signal);
    return this.currentNode();
  }

  /** A Node this agent wrote or read from the server: newer than the view until the view has it. */
  note(node: V1Node): void {
    this.dirty = false;
    const watched = this.node.get(this.o.nodeName);
    this.noted = watched !== undefined && atLeast(versionOf(watched), versionOf(node)) ? undefined : node;
  }

  /** A write of the Node failed: the next read asks the server. */
  spoil(): void {
    this.dirty = true;
    this.noted = undefined;
  }

  /** The own pods that `selector` selects, as followed; undefined when a read must ask the server. */
  async currentPods(selector: Selector, signal?: AbortSignal): Promise<V1Pod[] | undefined> {
    this.holdPods();
    if (this.podsRun === undefined || !(await this.pods.synced(PODS_SYNC_WAIT_MS, signal))) return undefined;
    return this.pods.items()?.filter((p) => matches(selector, p.metadata?.labels));
  }

  /** The view's Node moved: what was noted is old once the view has its version. */
  private take(change: Change<V1Node>): void {
    const noted = this.noted;
    if (noted === undefined) return;
    const watched = this.node.get(this.o.nodeName);
    if (
      change.type === 'RELISTED' ||
      (watched !== undefined && atLeast(versionOf(watched), versionOf(noted)))
    )
      this.noted = undefined;
  }
}
