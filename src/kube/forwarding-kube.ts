// A Kube that passes every call on to another (issue 57): the decorators (ViewedKube, ReadOnlyKube,
// the simulator's TrackedKube) extend it and state only what they change, so that a method added to
// Kube is one edit here, not one per decorator. Every call goes through `forward`, which a decorator
// may override to wrap them all (TrackedKube counts, gates and times them).
//
// What it passes on only when asked (`showsClient`): the client's `health` and `serverTime`, the
// view of the API server an agent's /readyz and clock reads take from its client (the simulator's
// and `check`'s decorators do not show them). Never `reviewSelf` (the operator commands ask their own
// client). An optional method the inner client lacks rejects, naming itself.
import type {
  CollectionRef,
  CoreV1Event,
  EvictionOptions,
  JsonPatchOp,
  Kube,
  ListBounds,
  ListOptions,
  NodePage,
  NodeRow,
  ObjectList,
  ObjectRef,
  PageOptions,
  PodPage,
  ServicePage,
  V1DaemonSet,
  V1Deployment,
  V1Lease,
  V1Node,
  V1Pod,
  V1PodDisruptionBudget,
  V1ReplicaSet,
  WatchEvent,
  WatchOptions,
} from './kube.js';

/** The name of a Kube method, as `forward` is told it. */
export type KubeMethod = Exclude<keyof Kube, 'health' | 'serverTime' | 'reviewSelf'>;

/** Kube that passes every call on to `inner` (a Kube, or a decorator of its own kind) through `forward`. */
export class ForwardingKube<Inner extends Kube = Kube> implements Kube {
  constructor(
    protected readonly inner: Inner,
    /** Pass on the inner client's health and serverTime. Default false. */
    private readonly showsClient = false,
  ) {}

  get health(): Kube['health'] {
    return this.showsClient ? this.inner.health : undefined;
  }

  get serverTime(): Kube['serverTime'] {
    return this.showsClient ? this.inner.serverTime : undefined;
  }

  /** How each call reaches the inner client; override to wrap every call. */
  protected forward<T>(_method: KubeMethod, work: (kube: Kube) => Promise<T>): Promise<T> {
    return work(this.inner);
  }

  /** An optional method of the inner client, or a rejection naming it. */
  private optional<K extends 'getObject' | 'listObjects' | 'createObject'>(
    method: K,
    work: (call: NonNullable<Kube[K]>) => Promise<unknown>,
  ): Promise<unknown> {
    return this.forward(method, (kube) => {
      const call = kube[method]?.bind(kube) as NonNullable<Kube[K]> | undefined;
      return call === undefined ? Promise.reject(new Error(`this client has no ${method}`)) : work(call);
    });
  }

  getNode(name: string, signal?: AbortSignal): Promise<V1Node> {
    return this.forward('getNode', (k) => k.getNode(name, signal));
  }
  listNodes(options?: ListOptions, signal?: AbortSignal): Promise<V1Node[]> {
    return this.forward('listNodes', (k) => k.listNodes(options, signal));
  }
  listNodeRows(options?: ListOptions, signal?: AbortSignal): Promise<NodeRow[]> {
    return this.forward('listNodeRows', (k) => k.listNodeRows(options, signal));
  }
  listNodesPage(options?: PageOptions, signal?: AbortSignal): Promise<NodePage> {
    return this.forward('listNodesPage', (k) => k.listNodesPage(options, signal));
  }
  watchNodes(onEvent: (event: WatchEvent<V1Node>) => void, options: WatchOptions): Promise<void> {
    return this.forward('watchNodes', (k) => k.watchNodes(onEvent, options));
  }
  jsonPatchNode(name: string, ops: JsonPatchOp[], signal?: AbortSignal): Promise<V1Node> {
    return this.forward('jsonPatchNode', (k) => k.jsonPatchNode(name, ops, signal));
  }
  mergePatchNode(name: string, patch: object, signal?: AbortSignal): Promise<V1Node> {
    return this.forward('mergePatchNode', (k) => k.mergePatchNode(name, patch, signal));
  }
  listPods(namespace: string | undefined, options?: ListOptions, signal?: AbortSignal): Promise<V1Pod[]> {
    return this.forward('listPods', (k) => k.listPods(namespace, options, signal));
  }
  listPodsPage(namespace: string | undefined, options?: PageOptions, signal?: AbortSignal): Promise<PodPage> {
    return this.forward('listPodsPage', (k) => k.listPodsPage(namespace, options, signal));
  }
  watchPods(onEvent: (event: WatchEvent<V1Pod>) => void, options: WatchOptions): Promise<void> {
    return this.forward('watchPods', (k) => k.watchPods(onEvent, options));
  }
  evictPod(namespace: string, name: string, options: EvictionOptions, signal?: AbortSignal): Promise<void> {
    return this.forward('evictPod', (k) => k.evictPod(namespace, name, options, signal));
  }
  deletePod(
    namespace: string,
    name: string,
    options: Parameters<Kube['deletePod']>[2],
    signal?: AbortSignal,
  ): Promise<void> {
    return this.forward('deletePod', (k) => k.deletePod(namespace, name, options, signal));
  }
  dryRunEviction(
    namespace: string,
    name: string,
    options: EvictionOptions,
    signal?: AbortSignal,
  ): Promise<void> {
    return this.forward('dryRunEviction', (k) => k.dryRunEviction(namespace, name, options, signal));
  }
  listPodDisruptionBudgets(
    namespace: string | undefined,
    signal?: AbortSignal,
  ): Promise<V1PodDisruptionBudget[]> {
    return this.forward('listPodDisruptionBudgets', (k) => k.listPodDisruptionBudgets(namespace, signal));
  }
  listServicesPage(options?: PageOptions, signal?: AbortSignal): Promise<ServicePage> {
    return this.forward('listServicesPage', (k) => k.listServicesPage(options, signal));
  }
  getDaemonSet(namespace: string, name: string, signal?: AbortSignal): Promise<V1DaemonSet> {
    return this.forward('getDaemonSet', (k) => k.getDaemonSet(namespace, name, signal));
  }
  listDaemonSets(
    namespace: string | undefined,
    options?: ListOptions,
    signal?: AbortSignal,
  ): Promise<V1DaemonSet[]> {
    return this.forward('listDaemonSets', (k) => k.listDaemonSets(namespace, options, signal));
  }
  mergePatchDaemonSet(
    namespace: string,
    name: string,
    patch: object,
    signal?: AbortSignal,
  ): Promise<V1DaemonSet> {
    return this.forward('mergePatchDaemonSet', (k) => k.mergePatchDaemonSet(namespace, name, patch, signal));
  }
  watchDaemonSet(
    namespace: string,
    name: string,
    onEvent: (event: WatchEvent<V1DaemonSet>) => void,
    options: { resourceVersion?: string; signal: AbortSignal },
  ): Promise<void> {
    return this.forward('watchDaemonSet', (k) => k.watchDaemonSet(namespace, name, onEvent, options));
  }
  getDeployment(namespace: string, name: string, signal?: AbortSignal): Promise<V1Deployment> {
    return this.forward('getDeployment', (k) => k.getDeployment(namespace, name, signal));
  }
  mergePatchDeployment(
    namespace: string,
    name: string,
    patch: object,
    signal?: AbortSignal,
  ): Promise<V1Deployment> {
    return this.forward('mergePatchDeployment', (k) =>
      k.mergePatchDeployment(namespace, name, patch, signal),
    );
  }
  getReplicaSet(namespace: string, name: string, signal?: AbortSignal): Promise<V1ReplicaSet> {
    return this.forward('getReplicaSet', (k) => k.getReplicaSet(namespace, name, signal));
  }
  getLease(namespace: string, name: string, signal?: AbortSignal): Promise<V1Lease> {
    return this.forward('getLease', (k) => k.getLease(namespace, name, signal));
  }
  createLease(namespace: string, lease: V1Lease, signal?: AbortSignal): Promise<V1Lease> {
    return this.forward('createLease', (k) => k.createLease(namespace, lease, signal));
  }
  replaceLease(namespace: string, name: string, lease: V1Lease, signal?: AbortSignal): Promise<V1Lease> {
    return this.forward('replaceLease', (k) => k.replaceLease(namespace, name, lease, signal));
  }
  createEvent(namespace: string, event: CoreV1Event, signal?: AbortSignal): Promise<CoreV1Event> {
    return this.forward('createEvent', (k) => k.createEvent(namespace, event, signal));
  }
  mergePatchEvent(
    namespace: string,
    name: string,
    patch: object,
    signal?: AbortSignal,
  ): Promise<CoreV1Event> {
    return this.forward('mergePatchEvent', (k) => k.mergePatchEvent(namespace, name, patch, signal));
  }
  getObject(ref: ObjectRef, signal?: AbortSignal): Promise<unknown> {
    return this.optional('getObject', (call) => call(ref, signal));
  }
  listObjects(ref: CollectionRef, bounds: ListBounds, signal?: AbortSignal): Promise<ObjectList> {
    return this.optional('listObjects', (call) => call(ref, bounds, signal)) as Promise<ObjectList>;
  }
  createObject(ref: CollectionRef, body: object, signal?: AbortSignal): Promise<unknown> {
    return this.optional('createObject', (call) => call(ref, body, signal));
  }
}
