// The Kube an agent works through (issue 42): what it reads of its own Node and pods comes from the
// watches of OwnViews (own-views.ts) while they are open, a watch of its own Node is the view's, reads
// of the lock's DaemonSet within one pass share one answer; everything else is passed on unchanged.
import { monotonicMs } from '../clock/clock.js';
import { parseLabelSelector, type Selector } from '../selector/label-selector.js';
import type {
  CoreV1Event,
  JsonPatchOp,
  Kube,
  ListOptions,
  NodePage,
  PageOptions,
  PodPage,
  V1DaemonSet,
  V1Lease,
  V1Node,
  V1Pod,
  V1PodDisruptionBudget,
  WatchEvent,
  WatchOptions,
} from './kube.js';
import type { Clock } from '../clock/clock.js';
import type { Followed } from './followed.js';

/** The version of an object ('' when it has none). */
export function versionOf(object: { metadata?: { resourceVersion?: string } } | undefined): string {
  return object?.metadata?.resourceVersion ?? '';
}

/** What ViewedKube answers from: OwnViews (own-views.ts). */
export interface OwnSource {
  readonly o: { nodeName: string; clock: Clock };
  /** The own Node as followed. */
  readonly node: Pick<Followed<V1Node>, 'subscribe' | 'following'>;
  currentNode(): V1Node | undefined;
  nodeSoon(signal?: AbortSignal): Promise<V1Node | undefined>;
  note(node: V1Node): void;
  spoil(): void;
  currentPods(selector: Selector, signal?: AbortSignal): Promise<V1Pod[] | undefined>;
}

/** Reads of the lock's DaemonSet this close together share one answer (one pass of the decision). */
export const SHARED_READ_MS = 1_000;

/** The Kube an agent works through: its own Node and pods from OwnViews, the rest passed on. */
export class ViewedKube implements Kube {
  /** The last answer about a DaemonSet (the lock's), shared by reads within SHARED_READ_MS. */
  private sharedDaemonSet: { key: string; at: number; object: V1DaemonSet } | undefined;

  constructor(
    private readonly inner: Kube,
    private readonly views: OwnSource,
  ) {}

  /**
   * A request of any kind but a read of the DaemonSet: the next read of the DaemonSet is its own.
   * (Only reads one right after the other, nothing asked or written in between, share an answer.)
   */
  private ask<T>(work: () => Promise<T>): Promise<T> {
    this.sharedDaemonSet = undefined;
    return work();
  }

  get health(): Kube['health'] {
    return this.inner.health;
  }

  get serverTime(): Kube['serverTime'] {
    return this.inner.serverTime;
  }

  private own(name: string): boolean {
    return name === this.views.o.nodeName;
  }

  async getNode(name: string, signal?: AbortSignal): Promise<V1Node> {
    const current = this.own(name) ? await this.views.nodeSoon(signal) : undefined;
    if (current !== undefined) return structuredClone(current);
    const node = await this.ask(() => this.inner.getNode(name, signal));
    if (this.own(name)) this.views.note(node);
    return node;
  }

  listNodes(options?: ListOptions, signal?: AbortSignal): Promise<V1Node[]> {
    return this.ask(() => this.inner.listNodes(options, signal));
  }

  listNodesPage(options?: PageOptions, signal?: AbortSignal): Promise<NodePage> {
    return this.ask(() => this.inner.listNodesPage(options, signal));
  }

  /**
   * A watch of the own Node while the view follows it is the view's: no request. It first sends the
   * Node as it is now when the watcher's version is another, then each change, and ends when the view
   * stops following (the watcher then watches again: through the API server while the view cannot).
   */
  watchNodes(onEvent: (event: WatchEvent<V1Node>) => void, options: WatchOptions): Promise<void> {
    const own = options.fieldSelector === `metadata.name=${this.views.o.nodeName}`;
    const current = own ? this.views.currentNode() : undefined;
    if (current === undefined || options.signal.aborted)
      return this.ask(() => this.inner.watchNodes(onEvent, options));
    if (options.resourceVersion !== versionOf(current))
      onEvent({ type: 'MODIFIED', object: structuredClone(current) });
    return new Promise<void>((resolve) => {
      const end = (): void => {
        unsubscribe();
        options.signal.removeEventListener('abort', end);
        resolve();
      };
      const unsubscribe = this.views.node.subscribe((change) => {
        const now = this.views.currentNode();
        if (!this.views.node.following) end();
        else if (change.type === 'DELETED') onEvent({ type: 'DELETED', object: change.object });
        else if (now !== undefined) onEvent({ type: 'MODIFIED', object: structuredClone(now) });
      });
      options.signal.addEventListener('abort', end, { once: true });
    });
  }

  async jsonPatchNode(name: string, ops: JsonPatchOp[], signal?: AbortSignal): Promise<V1Node> {
    return this.written(name, () => this.inner.jsonPatchNode(name, ops, signal));
  }

  async mergePatchNode(name: string, patch: object, signal?: AbortSignal): Promise<V1Node> {
    return this.written(name, () => this.inner.mergePatchNode(name, patch, signal));
  }

  /** A write of a Node: the own Node's answer is noted, a failure spoils the view for the next read. */
  private async written(name: string, write: () => Promise<V1Node>): Promise<V1Node> {
    try {
      const node = await this.ask(write);
      if (this.own(name)) this.views.note(node);
      return node;
    } catch (err) {
      if (this.own(name)) this.views.spoil();
      throw err;
    }
  }

  /** The own pods (every namespace, fieldSelector spec.nodeName of this node) from the view. */
  async listPods(
    namespace: string | undefined,
    options?: ListOptions,
    signal?: AbortSignal,
  ): Promise<V1Pod[]> {
    const own =
      namespace === undefined &&
      options?.fieldSelector === `spec.nodeName=${this.views.o.nodeName}` &&
      options.resourceVersion === undefined;
    const selector = own ? selectorOf(options.labelSelector) : undefined;
    const pods = selector === undefined ? undefined : await this.views.currentPods(selector, signal);
    return pods ?? this.ask(() => this.inner.listPods(namespace, options, signal));
  }

  listPodsPage(namespace: string | undefined, options?: PageOptions, signal?: AbortSignal): Promise<PodPage> {
    return this.ask(() => this.inner.listPodsPage(namespace, options, signal));
  }

  watchPods(onEvent: (event: WatchEvent<V1Pod>) => void, options: WatchOptions): Promise<void> {
    return this.ask(() => this.inner.watchPods(onEvent, options));
  }

  evictPod(
    namespace: string,
    name: string,
    gracePeriodSeconds?: number,
    signal?: AbortSignal,
  ): Promise<void> {
    return this.ask(() => this.inner.evictPod(namespace, name, gracePeriodSeconds, signal));
  }

  deletePod(
    namespace: string,
    name: string,
    options: { uid?: string | undefined; gracePeriodSeconds?: number | undefined },
    signal?: AbortSignal,
  ): Promise<void> {
    return this.ask(() => this.inner.deletePod(namespace, name, options, signal));
  }

  dryRunEviction(namespace: string, name: string, signal?: AbortSignal): Promise<void> {
    return this.ask(() => this.inner.dryRunEviction(namespace, name, signal));
  }

  listPodDisruptionBudgets(
    namespace: string | undefined,
    signal?: AbortSignal,
  ): Promise<V1PodDisruptionBudget[]> {
    return this.ask(() => this.inner.listPodDisruptionBudgets(namespace, signal));
  }

  /**
   * Reads of the lock's DaemonSet one right after the other (within SHARED_READ_MS, nothing asked or
   * written in between) share one answer: one pass of the decision reads it for the slot it holds,
   * the pause and whether it would take a slot. Any other request (a write of it above all) and a
   * watch event of it end the sharing: an acquisition, a retry after a conflict, a waiter woken by a
   * change and the re-verify before a reboot read it afresh.
   */
  async getDaemonSet(namespace: string, name: string, signal?: AbortSignal): Promise<V1DaemonSet> {
    const key = `${namespace}/${name}`;
    const shared = this.sharedDaemonSet;
    const now = monotonicMs(this.views.o.clock);
    if (shared?.key === key && now - shared.at < SHARED_READ_MS) return structuredClone(shared.object);
    const object = await this.inner.getDaemonSet(namespace, name, signal);
    this.sharedDaemonSet = { key, at: monotonicMs(this.views.o.clock), object };
    return object;
  }

  listDaemonSets(
    namespace: string | undefined,
    options?: ListOptions,
    signal?: AbortSignal,
  ): Promise<V1DaemonSet[]> {
    return this.ask(() => this.inner.listDaemonSets(namespace, options, signal));
  }

  mergePatchDaemonSet(
    namespace: string,
    name: string,
    patch: object,
    signal?: AbortSignal,
  ): Promise<V1DaemonSet> {
    return this.ask(() => this.inner.mergePatchDaemonSet(namespace, name, patch, signal));
  }

  watchDaemonSet(
    namespace: string,
    name: string,
    onEvent: (event: WatchEvent<V1DaemonSet>) => void,
    options: { resourceVersion?: string; signal: AbortSignal; timeoutSeconds?: number },
  ): Promise<void> {
    return this.inner.watchDaemonSet(
      namespace,
      name,
      (event) => {
        if (event.type !== 'BOOKMARK') this.sharedDaemonSet = undefined;
        onEvent(event);
      },
      options,
    );
  }

  getLease(namespace: string, name: string, signal?: AbortSignal): Promise<V1Lease> {
    return this.ask(() => this.inner.getLease(namespace, name, signal));
  }

  createLease(namespace: string, lease: V1Lease, signal?: AbortSignal): Promise<V1Lease> {
    return this.ask(() => this.inner.createLease(namespace, lease, signal));
  }

  replaceLease(namespace: string, name: string, lease: V1Lease, signal?: AbortSignal): Promise<V1Lease> {
    return this.ask(() => this.inner.replaceLease(namespace, name, lease, signal));
  }

  createEvent(namespace: string, event: CoreV1Event, signal?: AbortSignal): Promise<CoreV1Event> {
    return this.ask(() => this.inner.createEvent(namespace, event, signal));
  }

  mergePatchEvent(
    namespace: string,
    name: string,
    patch: object,
    signal?: AbortSignal,
  ): Promise<CoreV1Event> {
    return this.ask(() => this.inner.mergePatchEvent(namespace, name, patch, signal));
  }
}

/** A label selector of a list, parsed; undefined when it cannot be (the server judges it then). */
function selectorOf(text: string | undefined): Selector | undefined {
  try {
    return parseLabelSelector(text ?? '');
  } catch {
    return undefined;
  }
}
