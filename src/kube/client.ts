// The Kube seam implemented with @kubernetes/client-node 1.4.0 (CoreV1Api, AppsV1Api, PolicyV1Api, Watch).
import {
  AppsV1Api,
  CoreV1Api,
  KubeConfig,
  Observable,
  PatchStrategy,
  PolicyV1Api,
  V1Eviction,
  Watch,
  setHeaderOptions,
  type ConfigurationOptions,
  type CoreV1Event,
  type ObservableMiddleware,
  type RequestContext,
  type ResponseContext,
  type V1DaemonSet,
  type V1Node,
  type V1Pod,
  type V1PodDisruptionBudget,
} from '@kubernetes/client-node';
import { abortReason } from '../clock/clock.js';
import { installKeepAliveAgents, type KeepAliveAgents } from './keep-alive.js';
import type { JsonPatchOp, Kube, ListOptions, WatchEvent } from './kube.js';

/** Where the API server is. */
export interface ConnectOptions {
  /** Path of a kubeconfig file (--kubeconfig). */
  kubeconfig?: string;
  /** Plain URL of an API server without auth (tests, the simulator); wins over kubeconfig. */
  url?: string;
}

/**
 * A KubeConfig for `options`: a URL becomes one cluster with skipTLSVerify; a path is loaded as a
 * kubeconfig file; otherwise client-node's default loading (KUBECONFIG, ~/.kube/config, in-cluster).
 */
export function loadKubeConfig(options: ConnectOptions = {}): KubeConfig {
  const kc = new KubeConfig();
  if (options.url !== undefined && options.url !== '') {
    kc.loadFromOptions({
      clusters: [{ name: 'cluster', server: options.url, skipTLSVerify: true }],
      users: [{ name: 'user' }],
      contexts: [{ name: 'context', cluster: 'cluster', user: 'user' }],
      currentContext: 'context',
    });
  } else if (options.kubeconfig !== undefined && options.kubeconfig !== '') {
    kc.loadFromFile(options.kubeconfig);
  } else {
    kc.loadFromDefault();
  }
  return kc;
}

/** The Kube for these options; close() it when done (idle connections do not keep a process alive). */
export function connectKube(options: ConnectOptions = {}): ClientNodeKube {
  return new ClientNodeKube(loadKubeConfig(options));
}

/** A middleware that hands the AbortSignal to the HTTP request. */
function signalMiddleware(signal: AbortSignal): ObservableMiddleware {
  return {
    pre: (ctx: RequestContext) => {
      ctx.setSignal(signal);
      return new Observable(Promise.resolve(ctx));
    },
    post: (ctx: ResponseContext) => new Observable(Promise.resolve(ctx)),
  };
}

/** Per-call options: the signal and, for patches, the explicit content type. */
function callOptions(signal?: AbortSignal, contentType?: string): ConfigurationOptions | undefined {
  const base: ConfigurationOptions | undefined =
    signal === undefined
      ? undefined
      : { middleware: [signalMiddleware(signal)], middlewareMergeStrategy: 'append' };
  return contentType === undefined ? base : setHeaderOptions('Content-Type', contentType, base);
}

/** Runs an API call; an aborted signal wins over whatever node-fetch threw. */
async function call<T>(signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
  signal?.throwIfAborted();
  try {
    return await fn();
  } catch (err) {
    if (signal?.aborted) throw abortReason(signal);
    throw err;
  }
}

/**
 * Kube on client-node. Every patch names its content type; client-node 1.x would send JSON patch.
 * Calls share keep-alive connections (see keep-alive.ts): the constructor changes how `kubeConfig`
 * builds HTTP agents, so give each ClientNodeKube its own KubeConfig.
 */
export class ClientNodeKube implements Kube {
  private readonly core: CoreV1Api;
  private readonly apps: AppsV1Api;
  private readonly policy: PolicyV1Api;
  private readonly watcher: Watch;
  private readonly agents: KeepAliveAgents;

  constructor(readonly kubeConfig: KubeConfig) {
    this.agents = installKeepAliveAgents(kubeConfig);
    this.core = kubeConfig.makeApiClient(CoreV1Api);
    this.apps = kubeConfig.makeApiClient(AppsV1Api);
    this.policy = kubeConfig.makeApiClient(PolicyV1Api);
    this.watcher = new Watch(kubeConfig);
  }

  /** Closes every connection to the API server, ending calls and watches in flight. */
  close(): void {
    this.agents.close();
  }

  getNode(name: string, signal?: AbortSignal): Promise<V1Node> {
    return call(signal, () => this.core.readNode({ name }, callOptions(signal)));
  }

  listNodes(options: ListOptions = {}, signal?: AbortSignal): Promise<V1Node[]> {
    return call(signal, async () => (await this.core.listNode({ ...options }, callOptions(signal))).items);
  }

  jsonPatchNode(name: string, ops: JsonPatchOp[], signal?: AbortSignal): Promise<V1Node> {
    return call(signal, () =>
      this.core.patchNode({ name, body: ops }, callOptions(signal, PatchStrategy.JsonPatch)),
    );
  }

  mergePatchNode(name: string, patch: object, signal?: AbortSignal): Promise<V1Node> {
    return call(signal, () =>
      this.core.patchNode({ name, body: patch }, callOptions(signal, PatchStrategy.MergePatch)),
    );
  }

  listPods(namespace: string | undefined, options: ListOptions = {}, signal?: AbortSignal): Promise<V1Pod[]> {
    return call(signal, async () => {
      const list =
        namespace === undefined
          ? await this.core.listPodForAllNamespaces({ ...options }, callOptions(signal))
          : await this.core.listNamespacedPod({ namespace, ...options }, callOptions(signal));
      return list.items;
    });
  }

  getPod(namespace: string, name: string, signal?: AbortSignal): Promise<V1Pod> {
    return call(signal, () => this.core.readNamespacedPod({ namespace, name }, callOptions(signal)));
  }

  async evictPod(
    namespace: string,
    name: string,
    gracePeriodSeconds?: number,
    signal?: AbortSignal,
  ): Promise<void> {
    const body = Object.assign(new V1Eviction(), {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name, namespace },
      ...(gracePeriodSeconds === undefined ? {} : { deleteOptions: { gracePeriodSeconds } }),
    });
    await call(signal, () =>
      this.core.createNamespacedPodEviction({ namespace, name, body }, callOptions(signal)),
    );
  }

  listPodDisruptionBudgets(
    namespace: string | undefined,
    signal?: AbortSignal,
  ): Promise<V1PodDisruptionBudget[]> {
    return call(signal, async () => {
      const list =
        namespace === undefined
          ? await this.policy.listPodDisruptionBudgetForAllNamespaces({}, callOptions(signal))
          : await this.policy.listNamespacedPodDisruptionBudget({ namespace }, callOptions(signal));
      return list.items;
    });
  }

  getDaemonSet(namespace: string, name: string, signal?: AbortSignal): Promise<V1DaemonSet> {
    return call(signal, () => this.apps.readNamespacedDaemonSet({ namespace, name }, callOptions(signal)));
  }

  jsonPatchDaemonSet(
    namespace: string,
    name: string,
    ops: JsonPatchOp[],
    signal?: AbortSignal,
  ): Promise<V1DaemonSet> {
    return call(signal, () =>
      this.apps.patchNamespacedDaemonSet(
        { namespace, name, body: ops },
        callOptions(signal, PatchStrategy.JsonPatch),
      ),
    );
  }

  mergePatchDaemonSet(
    namespace: string,
    name: string,
    patch: object,
    signal?: AbortSignal,
  ): Promise<V1DaemonSet> {
    return call(signal, () =>
      this.apps.patchNamespacedDaemonSet(
        { namespace, name, body: patch },
        callOptions(signal, PatchStrategy.MergePatch),
      ),
    );
  }

  async watchDaemonSet(
    namespace: string,
    name: string,
    onEvent: (event: WatchEvent<V1DaemonSet>) => void,
    options: { resourceVersion?: string; signal: AbortSignal },
  ): Promise<void> {
    const { signal } = options;
    const path = `/apis/apps/v1/namespaces/${encodeURIComponent(namespace)}/daemonsets`;
    const query: Record<string, string | boolean> = {
      fieldSelector: `metadata.name=${name}`,
      allowWatchBookmarks: true,
    };
    if (options.resourceVersion !== undefined) query.resourceVersion = options.resourceVersion;
    let finish: (err?: unknown) => void = () => undefined;
    const done = new Promise<void>((resolve, reject) => {
      finish = (err?: unknown): void => {
        if (err === undefined || err === null || signal.aborted) resolve();
        else reject(err instanceof Error ? err : new Error('watch failed', { cause: err }));
      };
    });
    const controller = await this.watcher.watch(
      path,
      query,
      (type: string, object: unknown) => {
        onEvent({ type: type as WatchEvent<V1DaemonSet>['type'], object: object as V1DaemonSet });
      },
      (err: unknown) => {
        finish(err);
      },
    );
    const stop = (): void => {
      controller.abort();
      finish();
    };
    signal.addEventListener('abort', stop, { once: true });
    if (signal.aborted) stop();
    try {
      await done;
    } finally {
      signal.removeEventListener('abort', stop);
    }
  }

  createEvent(namespace: string, event: CoreV1Event, signal?: AbortSignal): Promise<CoreV1Event> {
    return call(signal, () =>
      this.core.createNamespacedEvent({ namespace, body: event }, callOptions(signal)),
    );
  }

  mergePatchEvent(
    namespace: string,
    name: string,
    patch: object,
    signal?: AbortSignal,
  ): Promise<CoreV1Event> {
    return call(signal, () =>
      this.core.patchNamespacedEvent(
        { namespace, name, body: patch },
        callOptions(signal, PatchStrategy.MergePatch),
      ),
    );
  }
}
