// The Kube an agent works through (issue 42): what it reads of its own Node and pods, and of the
// lock's DaemonSet while it holds a slot, comes from the watches of OwnViews (own-views.ts) while
// they are open (the wait for a turn subscribes to the Node's view itself: turn-gate.ts). Under it, the per-pass read cache
// (pass-reads.ts): a read repeated within one pass shares the first answer. Everything else is passed
// on unchanged.
import type { Clock } from '../clock/clock.js';
import { parseLabelSelector, type Selector } from '../selector/label-selector.js';
import { ForwardingKube } from './forwarding-kube.js';
import { PassReads } from './pass-reads.js';
import type { FollowedObject } from './followed.js';
import type { JsonPatchOp, Kube, ListOptions, V1DaemonSet, V1Node, V1Pod, WatchEvent } from './kube.js';

/** What ViewedKube answers from: OwnViews (own-views.ts). */
export interface OwnSource {
  readonly o: { nodeName: string; clock: Clock; lock?: { namespace: string; name: string } };
  /** The own Node as followed. */
  readonly node: Pick<FollowedObject<V1Node>, 'current' | 'note' | 'spoil'>;
  /** The lock's DaemonSet as followed while a slot is held. */
  readonly lock: Pick<FollowedObject<V1DaemonSet>, 'current' | 'note' | 'spoil'> | undefined;
  nodeSoon(signal?: AbortSignal): Promise<V1Node | undefined>;
  /** May repeated reads share an answer now? */
  shares(): boolean;
  currentPods(selector: Selector, signal?: AbortSignal): Promise<V1Pod[] | undefined>;
}

/** The Kube an agent works through: its own objects from OwnViews, the rest passed on. */
export class ViewedKube extends ForwardingKube<PassReads> {
  /** The last answer about the lock's DaemonSet (a read's or a write's), to start following it from. */
  private lockAnswer: V1DaemonSet | undefined;
  constructor(
    inner: Kube,
    private readonly views: OwnSource,
  ) {
    // the per-pass read cache under the views
    super(new PassReads(inner, views.o.clock, () => views.shares()), true);
  }

  /** A new pass of the decision begins: no answer of the last is shared with it (others moved since). */
  forgetShared(): void {
    this.inner.forgetShared();
  }

  /** The last answer about the lock's DaemonSet at hand (a read's or a write's), if any. */
  lastLockAnswer(): V1DaemonSet | undefined {
    return this.lockAnswer;
  }

  private own(name: string): boolean {
    return name === this.views.o.nodeName;
  }

  private isLock(namespace: string, name: string): boolean {
    const lock = this.views.o.lock;
    return lock?.namespace === namespace && lock.name === name;
  }

  override async getNode(name: string, signal?: AbortSignal): Promise<V1Node> {
    const current = this.own(name) ? await this.views.nodeSoon(signal) : undefined;
    if (current !== undefined) return structuredClone(current);
    const node = await this.inner.getNode(name, signal);
    if (this.own(name)) this.views.node.note(node);
    return node;
  }

  override jsonPatchNode(name: string, ops: JsonPatchOp[], signal?: AbortSignal): Promise<V1Node> {
    return this.writtenNode(name, () => super.jsonPatchNode(name, ops, signal));
  }

  override mergePatchNode(name: string, patch: object, signal?: AbortSignal): Promise<V1Node> {
    return this.writtenNode(name, () => super.mergePatchNode(name, patch, signal));
  }

  /** A write of a Node: the own Node's answer is noted, a failure sends the next read to the server. */
  private async writtenNode(name: string, write: () => Promise<V1Node>): Promise<V1Node> {
    try {
      const node = await write();
      if (this.own(name)) this.views.node.note(node);
      return node;
    } catch (err) {
      if (this.own(name)) this.views.node.spoil();
      throw err;
    }
  }

  /** The own pods (every namespace, fieldSelector spec.nodeName of this node) from the view. */
  override async listPods(
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
    return pods ?? this.inner.listPods(namespace, options, signal);
  }

  /**
   * The lock's DaemonSet from its view while this agent holds a slot (OwnViews.holdLock); otherwise
   * read, a read repeated within one pass sharing the answer.
   */
  override async getDaemonSet(namespace: string, name: string, signal?: AbortSignal): Promise<V1DaemonSet> {
    const lock = this.isLock(namespace, name);
    const followed = lock ? this.views.lock?.current() : undefined;
    if (followed !== undefined) return structuredClone(followed);
    const ds = await this.inner.getDaemonSet(namespace, name, signal); // shared within the pass (PassReads)
    if (lock) {
      this.lockAnswer = ds;
      this.views.lock?.note(ds);
    }
    return ds;
  }

  override async mergePatchDaemonSet(
    namespace: string,
    name: string,
    patch: object,
    signal?: AbortSignal,
  ): Promise<V1DaemonSet> {
    const lock = this.isLock(namespace, name);
    try {
      const ds = await super.mergePatchDaemonSet(namespace, name, patch, signal);
      if (lock) {
        this.lockAnswer = ds;
        this.views.lock?.note(ds);
      }
      return ds;
    } catch (err) {
      if (lock) this.views.lock?.spoil();
      throw err;
    }
  }

  /** A change of the lock's DaemonSet is the last answer about it (PassReads ends its sharing). */
  override watchDaemonSet(
    namespace: string,
    name: string,
    onEvent: (event: WatchEvent<V1DaemonSet>) => void,
    options: { resourceVersion?: string; signal: AbortSignal; timeoutSeconds?: number },
  ): Promise<void> {
    const lock = this.isLock(namespace, name);
    return this.inner.watchDaemonSet(
      namespace,
      name,
      (event) => {
        // what this agent last saw of the lock (the wait for a slot watches it): see OwnViews.fingerprint
        if (lock && event.type !== 'BOOKMARK' && event.type !== 'ERROR') this.lockAnswer = event.object;
        onEvent(event);
      },
      options,
    );
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
