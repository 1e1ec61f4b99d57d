// A Kube that reads through and refuses every write: what `kured-ts check` runs the agent's own code
// on, so that a mistake there cannot touch the cluster.

import type {
  CollectionRef,
  ListBounds,
  ObjectList,
  NodeRow,
  CoreV1Event,
  EvictionOptions,
  JsonPatchOp,
  Kube,
  ListOptions,
  NodePage,
  ObjectRef,
  PageOptions,
  PodPage,
  V1DaemonSet,
  V1Deployment,
  V1ReplicaSet,
  V1Lease,
  V1Node,
  V1Pod,
  V1PodDisruptionBudget,
  ServicePage,
  WatchEvent,
  WatchOptions,
} from './kube.js';

/** A write `check` refused: it must never change the cluster. */
class DryRunWrite extends Error {
  override readonly name = 'DryRunWrite';
}

/** Kube that reads through and refuses every write (and records what was attempted). */
export class ReadOnlyKube implements Kube {
  /** The writes refused, as "VERB what". */
  readonly refused: string[] = [];

  constructor(private readonly inner: Kube) {}

  private refuse(what: string): Promise<never> {
    this.refused.push(what);
    return Promise.reject(new DryRunWrite(`dry run: refused to ${what}`));
  }

  getNode(name: string, signal?: AbortSignal): Promise<V1Node> {
    return this.inner.getNode(name, signal);
  }
  listNodes(options?: ListOptions, signal?: AbortSignal): Promise<V1Node[]> {
    return this.inner.listNodes(options, signal);
  }
  listNodeRows(options?: ListOptions, signal?: AbortSignal): Promise<NodeRow[]> {
    return this.inner.listNodeRows(options, signal);
  }
  getObject(ref: ObjectRef, signal?: AbortSignal): Promise<unknown> {
    if (this.inner.getObject === undefined)
      return Promise.reject(new Error('this client reads no other object'));
    return this.inner.getObject(ref, signal);
  }

  listObjects(ref: CollectionRef, bounds: ListBounds, signal?: AbortSignal): Promise<ObjectList> {
    if (this.inner.listObjects === undefined)
      return Promise.reject(new Error('this client lists no other objects'));
    return this.inner.listObjects(ref, bounds, signal);
  }
  listNodesPage(options?: PageOptions, signal?: AbortSignal): Promise<NodePage> {
    return this.inner.listNodesPage(options, signal);
  }
  jsonPatchNode(name: string, ops: JsonPatchOp[]): Promise<V1Node> {
    return this.refuse(`json-patch node ${name}: ${JSON.stringify(ops)}`);
  }
  mergePatchNode(name: string, patch: object): Promise<V1Node> {
    return this.refuse(`merge-patch node ${name}: ${JSON.stringify(patch)}`);
  }
  listPods(namespace: string | undefined, options?: ListOptions, signal?: AbortSignal): Promise<V1Pod[]> {
    return this.inner.listPods(namespace, options, signal);
  }
  listPodsPage(namespace: string | undefined, options?: PageOptions, signal?: AbortSignal): Promise<PodPage> {
    return this.inner.listPodsPage(namespace, options, signal);
  }
  watchPods(onEvent: (event: WatchEvent<V1Pod>) => void, options: WatchOptions): Promise<void> {
    return this.inner.watchPods(onEvent, options);
  }
  evictPod(namespace: string, name: string, options: EvictionOptions): Promise<void> {
    const grace = options.gracePeriodSeconds === undefined ? '' : ` (grace ${options.gracePeriodSeconds}s)`;
    return this.refuse(`evict pod ${namespace}/${name}${grace}`);
  }
  deletePod(namespace: string, name: string): Promise<void> {
    return this.refuse(`delete pod ${namespace}/${name}`);
  }
  /** A dry run writes nothing: the server only judges the eviction (the PDB pre-flight asks it). */
  dryRunEviction(
    namespace: string,
    name: string,
    options: EvictionOptions,
    signal?: AbortSignal,
  ): Promise<void> {
    return this.inner.dryRunEviction(namespace, name, options, signal);
  }
  listPodDisruptionBudgets(
    namespace: string | undefined,
    signal?: AbortSignal,
  ): Promise<V1PodDisruptionBudget[]> {
    return this.inner.listPodDisruptionBudgets(namespace, signal);
  }
  listServicesPage(options?: PageOptions, signal?: AbortSignal): Promise<ServicePage> {
    return this.inner.listServicesPage(options, signal);
  }
  listDaemonSets(
    namespace: string | undefined,
    options?: ListOptions,
    signal?: AbortSignal,
  ): Promise<V1DaemonSet[]> {
    return this.inner.listDaemonSets(namespace, options, signal);
  }

  getDaemonSet(namespace: string, name: string, signal?: AbortSignal): Promise<V1DaemonSet> {
    return this.inner.getDaemonSet(namespace, name, signal);
  }
  mergePatchDaemonSet(namespace: string, name: string, patch: object): Promise<V1DaemonSet> {
    return this.refuse(`merge-patch daemonset ${namespace}/${name}: ${JSON.stringify(patch)}`);
  }
  getDeployment(namespace: string, name: string, signal?: AbortSignal): Promise<V1Deployment> {
    return this.inner.getDeployment(namespace, name, signal);
  }
  mergePatchDeployment(namespace: string, name: string, patch: object): Promise<V1Deployment> {
    return this.refuse(`merge-patch deployment ${namespace}/${name}: ${JSON.stringify(patch)}`);
  }
  getReplicaSet(namespace: string, name: string, signal?: AbortSignal): Promise<V1ReplicaSet> {
    return this.inner.getReplicaSet(namespace, name, signal);
  }
  watchNodes(onEvent: (event: WatchEvent<V1Node>) => void, options: WatchOptions): Promise<void> {
    return this.inner.watchNodes(onEvent, options);
  }
  getLease(namespace: string, name: string, signal?: AbortSignal): Promise<V1Lease> {
    return this.inner.getLease(namespace, name, signal);
  }
  createLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return this.refuse(`create lease ${namespace}/${lease.metadata?.name ?? ''}`);
  }
  replaceLease(namespace: string, name: string): Promise<V1Lease> {
    return this.refuse(`replace lease ${namespace}/${name}`);
  }
  watchDaemonSet(
    namespace: string,
    name: string,
    onEvent: (event: WatchEvent<V1DaemonSet>) => void,
    options: { resourceVersion?: string; signal: AbortSignal },
  ): Promise<void> {
    return this.inner.watchDaemonSet(namespace, name, onEvent, options);
  }
  createEvent(namespace: string, event: CoreV1Event): Promise<CoreV1Event> {
    return this.refuse(`create event ${event.reason ?? ''} in ${namespace}`);
  }
  mergePatchEvent(namespace: string, name: string, patch: object): Promise<CoreV1Event> {
    return this.refuse(`merge-patch event ${namespace}/${name}: ${JSON.stringify(patch)}`);
  }
}
