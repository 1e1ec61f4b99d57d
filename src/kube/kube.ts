// The Kubernetes API as kured-ts uses it: the only seam between our code and @kubernetes/client-node.
// src/kube/client.ts implements it with client-node; nothing outside src/kube imports client-node.
import type { CoreV1Event, V1DaemonSet, V1Node, V1Pod, V1PodDisruptionBudget } from '@kubernetes/client-node';

export type { CoreV1Event, V1DaemonSet, V1Node, V1Pod, V1PodDisruptionBudget };

/** One RFC 6902 operation; values are typed JSON, never strings built by formatting. */
export type JsonPatchOp =
  { op: 'add' | 'replace' | 'test'; path: string; value: unknown } | { op: 'remove'; path: string };

/** Query options of a list or watch. */
export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
}

/** A watch event as the API server streams it. */
export interface WatchEvent<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: T;
}

/**
 * Every call the agent, the commands and the simulator make. Errors are client-node's ApiException
 * (or a network error); classify them with src/kube/errors.ts, never by message text.
 */
export interface Kube {
  getNode(name: string, signal?: AbortSignal): Promise<V1Node>;
  listNodes(options?: ListOptions, signal?: AbortSignal): Promise<V1Node[]>;
  /** application/json-patch+json */
  jsonPatchNode(name: string, ops: JsonPatchOp[], signal?: AbortSignal): Promise<V1Node>;
  /** application/merge-patch+json */
  mergePatchNode(name: string, patch: object, signal?: AbortSignal): Promise<V1Node>;

  /** namespace undefined = all namespaces. */
  listPods(namespace: string | undefined, options?: ListOptions, signal?: AbortSignal): Promise<V1Pod[]>;
  getPod(namespace: string, name: string, signal?: AbortSignal): Promise<V1Pod>;
  /** policy/v1 Eviction; a 429 means a PDB refused, a 404 that the pod is gone. */
  evictPod(namespace: string, name: string, gracePeriodSeconds?: number, signal?: AbortSignal): Promise<void>;

  listPodDisruptionBudgets(
    namespace: string | undefined,
    signal?: AbortSignal,
  ): Promise<V1PodDisruptionBudget[]>;

  getDaemonSet(namespace: string, name: string, signal?: AbortSignal): Promise<V1DaemonSet>;
  jsonPatchDaemonSet(
    namespace: string,
    name: string,
    ops: JsonPatchOp[],
    signal?: AbortSignal,
  ): Promise<V1DaemonSet>;
  mergePatchDaemonSet(
    namespace: string,
    name: string,
    patch: object,
    signal?: AbortSignal,
  ): Promise<V1DaemonSet>;
  /**
   * Streams changes of one DaemonSet until the signal aborts or the stream ends; resolves then.
   * Starts at `resourceVersion` when given.
   */
  watchDaemonSet(
    namespace: string,
    name: string,
    onEvent: (event: WatchEvent<V1DaemonSet>) => void,
    options: { resourceVersion?: string; signal: AbortSignal },
  ): Promise<void>;

  createEvent(namespace: string, event: CoreV1Event, signal?: AbortSignal): Promise<CoreV1Event>;
  mergePatchEvent(namespace: string, name: string, patch: object, signal?: AbortSignal): Promise<CoreV1Event>;
}
