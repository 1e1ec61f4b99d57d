// The Kubernetes API as kured-ts uses it: the only seam between our code and the API server.
// src/kube/client.ts implements it over client-node's KubeConfig; nothing outside src/kube (and the
// fake server in src/sim) imports client-node, and then only its types or its KubeConfig.
import type * as k8s from '@kubernetes/client-node';
import type { ApiHealth } from './api-health.js';
import type { ServerTime } from './server-time.js';

/**
 * An API object as JSON on the wire: client-node's model types with every Date as the RFC 3339
 * string the API server sends (its generated deserializer, which turns them into Dates, is not
 * loaded). Type-only: costs nothing at run time.
 */
type Wire<T> = T extends Date
  ? string
  : T extends (infer U)[]
    ? Wire<U>[]
    : T extends object
      ? { [K in keyof T]: Wire<T[K]> }
      : T;

export type V1Node = Wire<k8s.V1Node>;
export type V1Pod = Wire<k8s.V1Pod>;
export type V1DaemonSet = Wire<k8s.V1DaemonSet>;
export type V1PodDisruptionBudget = Wire<k8s.V1PodDisruptionBudget>;
export type CoreV1Event = Wire<k8s.CoreV1Event>;
export type V1ObjectMeta = Wire<k8s.V1ObjectMeta>;
export type V1Lease = Wire<k8s.V1Lease>;
export type V1Deployment = Wire<k8s.V1Deployment>;
export type V1ReplicaSet = Wire<k8s.V1ReplicaSet>;
export type V1Service = Wire<k8s.V1Service>;

/** One RFC 6902 operation; values are typed JSON, never strings built by formatting. */
export type JsonPatchOp =
  { op: 'add' | 'replace' | 'test'; path: string; value: unknown } | { op: 'remove'; path: string };

/** A Node as its printed row tells it. */
export interface NodeRow {
  name: string;
  /** Its Ready condition is True. */
  ready: boolean;
  /** Ready=False or Unknown ("NotReady"), or no Ready condition at all ("Unknown"). */
  readiness: 'Ready' | 'NotReady' | 'Unknown';
  /** spec.unschedulable (cordoned: "SchedulingDisabled"). */
  unschedulable: boolean;
  /** Its roles (node-role.kubernetes.io/<role> labels), e.g. ['control-plane']. */
  roles: string[];
}

/**
 * What an Eviction carries besides the pod's name: its deleteOptions. The drain, each of its retries
 * and the PDB pre-flight's dry run send the same (src/drain/eviction.ts builds them, once for all).
 */
export interface EvictionOptions {
  /** deleteOptions.gracePeriodSeconds; absent = the pod's own terminationGracePeriodSeconds. */
  gracePeriodSeconds?: number;
  /**
   * deleteOptions.preconditions.uid: only the pod of this UID is evicted. Another pod that took its
   * name meanwhile (a StatefulSet's, recreated elsewhere) is answered 409 Conflict, not evicted.
   */
  uid?: string;
}

/** Query options of a list or watch. */
export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  /** '0': any recent state will do, served from the API server's watch cache (no etcd read). */
  resourceVersion?: string;
}

/** A page of a list: at most `limit` items, continuing where the token of the last page left off. */
export interface PageOptions extends ListOptions {
  limit?: number;
  continue?: string;
}

/** One page of a list and the resourceVersion of the snapshot it was cut from. */
export interface Page<T> {
  items: T[];
  resourceVersion: string;
  /** The token for the next page; undefined on the last. */
  continue?: string;
}

/** One page of Nodes. */
export type NodePage = Page<V1Node>;
/** One page of Pods. */
export type PodPage = Page<V1Pod>;
/** One page of Services (all namespaces). */
export interface ServicePage {
  items: V1Service[];
  /** The token for the next page; undefined on the last. */
  continue?: string;
}

/** Options of a watch. */
export interface WatchOptions {
  /** Start after this version; absent: the server first sends every current object as ADDED. */
  resourceVersion?: string;
  signal: AbortSignal;
  /** The server ends the watch after this long (default 5–10 min, spread at random). */
  timeoutSeconds?: number;
  /** e.g. `metadata.name=n1`: one object only (an agent following its own Node). */
  fieldSelector?: string;
  labelSelector?: string;
}

/** A watch event as the API server streams it. */
export interface WatchEvent<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: T;
}

/**
 * Every call the agent, the commands and the simulator make. Each has a deadline (the client's,
 * 30 s by default) besides the caller's signal. Errors are KubeApiError (HTTP status + Status body),
 * DeadlineError (src/http/request.ts) or a network error; classify them with src/kube/errors.ts,
 * never by message text.
 */
export interface Kube {
  /** What this client saw of the API server's health, when it keeps track (the agent's /readyz). */
  readonly health?: ApiHealth;
  /** The API server's clock as its answers tell it, when the client keeps track. */
  readonly serverTime?: ServerTime;
  getNode(name: string, signal?: AbortSignal): Promise<V1Node>;
  listNodes(options?: ListOptions, signal?: AbortSignal): Promise<V1Node[]>;
  /**
   * The Nodes `options` select, as the rows kube-apiserver prints for them (name, readiness, cordon,
   * roles): a few hundred bytes a Node where the objects are 5–15 KB (node-table.ts). Throws
   * NodeTableError when the answer cannot be read as rows.
   */
  listNodeRows(options?: ListOptions, signal?: AbortSignal): Promise<NodeRow[]>;
  /**
   * One page of a list of the Nodes (`limit`, `continue`), with the resourceVersion of its snapshot
   * to watch from (the coordinator's view of the fleet); `continue` is set when more pages follow.
   */
  listNodesPage(options?: PageOptions, signal?: AbortSignal): Promise<NodePage>;
  /**
   * Streams node changes until the signal aborts or the stream ends (after `timeoutSeconds`, default
   * 5–10 min). Without `resourceVersion` the server first sends every current node as ADDED.
   */
  watchNodes(onEvent: (event: WatchEvent<V1Node>) => void, options: WatchOptions): Promise<void>;
  /** application/json-patch+json */
  jsonPatchNode(name: string, ops: JsonPatchOp[], signal?: AbortSignal): Promise<V1Node>;
  /** application/merge-patch+json */
  mergePatchNode(name: string, patch: object, signal?: AbortSignal): Promise<V1Node>;

  /** namespace undefined = all namespaces. */
  listPods(namespace: string | undefined, options?: ListOptions, signal?: AbortSignal): Promise<V1Pod[]>;
  /**
   * One page of a list of pods (an agent's own: fieldSelector spec.nodeName), with the
   * resourceVersion of its snapshot to watch from; `continue` is set when more pages follow.
   */
  listPodsPage(namespace: string | undefined, options?: PageOptions, signal?: AbortSignal): Promise<PodPage>;
  /**
   * Streams pod changes (in every namespace; an agent's own with fieldSelector spec.nodeName) until
   * the signal aborts or the stream ends (after `timeoutSeconds`, default 5–10 min). Without
   * `resourceVersion` the server first sends every current pod as ADDED.
   */
  watchPods(onEvent: (event: WatchEvent<V1Pod>) => void, options: WatchOptions): Promise<void>;
  /**
   * policy/v1 Eviction; a 429 means a PDB refused, a 404 that the pod is gone, a 409 on the UID
   * precondition that the pod of `options.uid` is gone and another took its name.
   */
  evictPod(namespace: string, name: string, options: EvictionOptions, signal?: AbortSignal): Promise<void>;
  /**
   * DELETE of a pod (--drain-fallback delete: its eviction was refused until --drain-timeout), only
   * while it is still the pod of `uid` (a precondition: 409 when another pod took the name), with
   * `gracePeriodSeconds` when given (else the pod's own). A 404 means it is gone.
   */
  deletePod(
    namespace: string,
    name: string,
    options: { uid?: string | undefined; gracePeriodSeconds?: number | undefined },
    signal?: AbortSignal,
  ): Promise<void>;
  /**
   * Asks the Eviction API whether the pod may be evicted now, evicting nothing (dryRun=All): the
   * server judges the eviction `options` describe (its PodDisruptionBudgets, admission) as it would
   * the drain's. Resolves when it may; a 429 means a PDB refuses, a 500 that more than one PDB covers
   * the pod, a 404 that it is gone, a 409 on the UID precondition that another pod took its name.
   */
  dryRunEviction(
    namespace: string,
    name: string,
    options: EvictionOptions,
    signal?: AbortSignal,
  ): Promise<void>;

  listPodDisruptionBudgets(
    namespace: string | undefined,
    signal?: AbortSignal,
  ): Promise<V1PodDisruptionBudget[]>;

  /**
   * One page of the Services of every namespace (`limit`, `continue`): whether the cluster has a
   * Service of type LoadBalancer (the agent's --lb-drain-wait).
   */
  listServicesPage(options?: PageOptions, signal?: AbortSignal): Promise<ServicePage>;

  getDaemonSet(namespace: string, name: string, signal?: AbortSignal): Promise<V1DaemonSet>;
  /** DaemonSets in `namespace`, or in every namespace when undefined (operator commands only). */
  listDaemonSets(
    namespace: string | undefined,
    options?: ListOptions,
    signal?: AbortSignal,
  ): Promise<V1DaemonSet[]>;
  mergePatchDaemonSet(
    namespace: string,
    name: string,
    patch: object,
    signal?: AbortSignal,
  ): Promise<V1DaemonSet>;
  /**
   * Streams changes of one DaemonSet until the signal aborts or the stream ends (the server ends it
   * after `timeoutSeconds`, default 5–10 min); resolves then. Starts at `resourceVersion` when given.
   */
  watchDaemonSet(
    namespace: string,
    name: string,
    onEvent: (event: WatchEvent<V1DaemonSet>) => void,
    options: { resourceVersion?: string; signal: AbortSignal; timeoutSeconds?: number },
  ): Promise<void>;

  /**
   * apps/v1 Deployments and ReplicaSets (--single-replica restart: a pod's owner chain, and the
   * rollout restart, a merge patch of one pod template annotation guarded by metadata.resourceVersion).
   */
  getDeployment(namespace: string, name: string, signal?: AbortSignal): Promise<V1Deployment>;
  mergePatchDeployment(
    namespace: string,
    name: string,
    patch: object,
    signal?: AbortSignal,
  ): Promise<V1Deployment>;
  getReplicaSet(namespace: string, name: string, signal?: AbortSignal): Promise<V1ReplicaSet>;

  /** coordination.k8s.io/v1 Leases: the coordinator's election (src/coordinator). */
  getLease(namespace: string, name: string, signal?: AbortSignal): Promise<V1Lease>;
  createLease(namespace: string, lease: V1Lease, signal?: AbortSignal): Promise<V1Lease>;
  /** PUT: guarded by the lease's metadata.resourceVersion (409 when it changed). */
  replaceLease(namespace: string, name: string, lease: V1Lease, signal?: AbortSignal): Promise<V1Lease>;

  createEvent(namespace: string, event: CoreV1Event, signal?: AbortSignal): Promise<CoreV1Event>;
  mergePatchEvent(namespace: string, name: string, patch: object, signal?: AbortSignal): Promise<CoreV1Event>;

  /**
   * Any object, as JSON, by its group, version, resource (plural), namespace and name (the health
   * checks, --health-check: the chart grants `get` on exactly those). Absent where not implemented.
   */
  getObject?(ref: ObjectRef, signal?: AbortSignal): Promise<unknown>;

  /**
   * One page of a collection named by group, version, resource and namespace (--node-check): at most
   * `limit` items and `maxBytes` of answer (past it the read fails); `more` when the server has more.
   * Absent where not implemented.
   */
  listObjects?(ref: CollectionRef, bounds: ListBounds, signal?: AbortSignal): Promise<ObjectList>;

  /**
   * POST of `body` to a collection named by group, version, resource and namespace (the hooks' Jobs:
   * the chart grants `create` on Jobs in its namespace only). Not retried: a 409 is the caller's to
   * read. Absent where not implemented.
   */
  createObject?(ref: CollectionRef, body: object, signal?: AbortSignal): Promise<unknown>;

  /**
   * Who the API server says this client is (authentication.k8s.io/v1 SelfSubjectReview, Kubernetes
   * 1.28+): for the operator commands that record who acted. Absent where not implemented.
   */
  reviewSelf?(signal?: AbortSignal): Promise<SelfIdentity>;
}

/** An object by its resource's group ('' = core), version and plural name, and its own namespace and name. */
export interface ObjectRef {
  group: string;
  version: string;
  resource: string;
  /** undefined: a cluster-scoped object. */
  namespace?: string;
  name: string;
}

/** A collection: every object of a resource in one namespace, or in the whole cluster (undefined). */
export type CollectionRef = Omit<ObjectRef, 'name'>;

/** The most one read of a collection takes in. */
export interface ListBounds {
  limit: number;
  maxBytes: number;
}

/** A page of a collection as JSON, and whether the server holds more. */
export interface ObjectList {
  items: unknown[];
  more: boolean;
}

/** A user as the API server authenticated it. */
export interface SelfIdentity {
  username: string;
  groups: string[];
}
