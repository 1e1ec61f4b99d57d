// The Kube seam over client-node's KubeConfig: the few requests kured-ts sends, sent by KubeTransport
// (src/kube/http.ts) with a deadline each, on keep-alive connections, with field manager kured-ts.
//
// Only KubeConfig is loaded from client-node, from its own module: the package's index would load
// every generated API class and model. scripts/build.mjs also keeps config.js's import of the
// generated index out of the bundle (kured-ts never calls makeApiClient); see CONTRIBUTING.md,
// "Dependencies".
import type { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { loadKubeConfig, type ConnectOptions } from './kubeconfig.js';
import { SystemClock, type Clock } from '../clock/clock.js';
import { ApiHealth } from './api-health.js';
import { isRetryableRead, retryAfterSeconds } from './errors.js';
import { retry } from './retry.js';
import { ServerTime } from './server-time.js';
import { FIELD_MANAGER, KubeTransport, TABLE_ACCEPT, type KubeRequest } from './http.js';
import { nodeRows } from './node-table.js';
import { impersonatingTransport, type Identity, type Transport } from './impersonation.js';
import { objectListOf, pageOf, type ListAnswer } from './lists.js';
import { evictionBody, type EvictionBody } from './eviction-body.js';
import { appsPath, collectionPath, daemonSetPath, leasePath, objectPath, podsPath } from './object-path.js';
import type {
  CollectionRef,
  ListBounds,
  ObjectList,
  NodeRow,
  ObjectRef,
  CoreV1Event,
  EvictionOptions,
  JsonPatchOp,
  Kube,
  ListOptions,
  NodePage,
  Page,
  PageOptions,
  PodPage,
  SelfIdentity,
  V1DaemonSet,
  V1Deployment,
  V1ReplicaSet,
  V1Node,
  V1Pod,
  V1Lease,
  V1PodDisruptionBudget,
  V1Service,
  ServicePage,
  WatchEvent,
  WatchOptions,
} from './kube.js';
export type { ConnectOptions } from './kubeconfig.js';
export type { Identity } from './impersonation.js';

/** A GET or LIST answered 429 or 5xx is sent again inside the call: this many attempts in all. */
export const READ_ATTEMPTS = 6;
/** The longest Retry-After honoured between two attempts of a read; longer ones wait this long. */
const RETRY_AFTER_CAP_MS = 10_000;

/** The Kube for these options; close() it when done (idle connections do not keep a process alive). */
export function connectKube(options: ConnectOptions = {}): ClientNodeKube {
  return new ClientNodeKube(loadKubeConfig(options), options);
}

/** A watch asks the server to end it after 5–10 minutes, as client-go's reflector does. */
const WATCH_MIN_SECONDS = 300;

const enc = encodeURIComponent;
const MERGE_PATCH = 'application/merge-patch+json';
const JSON_PATCH = 'application/json-patch+json';

/**
 * Kube over client-node's KubeConfig (auth, TLS, proxies) and our own requests. The constructor
 * changes how `kubeConfig` builds HTTP agents (keep-alive.ts): give each client its own KubeConfig.
 */
export class ClientNodeKube implements Kube {
  readonly health = new ApiHealth();
  readonly serverTime: ServerTime;
  private readonly http: Transport;
  private readonly random: () => number;
  private readonly clock: Clock;

  constructor(
    readonly kubeConfig: KubeConfig,
    options: Pick<ConnectOptions, 'deadlineMs' | 'watchGraceMs' | 'random' | 'clock' | 'exchange'> = {},
    /** Share another client's connections and view of the server's clock (impersonating). */
    shared?: { transport: Transport; serverTime: ServerTime },
  ) {
    this.serverTime = shared?.serverTime ?? new ServerTime();
    this.http =
      shared?.transport ??
      new KubeTransport(kubeConfig, {
        deadlineMs: options.deadlineMs,
        watchGraceMs: options.watchGraceMs,
        health: this.health,
        serverTime: this.serverTime,
        exchange: options.exchange,
      });
    this.random = options.random ?? Math.random;
    this.clock = options.clock ?? new SystemClock();
  }

  /**
   * This client's connections, acting as `identity` (kube's impersonation; the caller needs the
   * `impersonate` permission). The simulator gives each agent its own identity this way, as its
   * own bound ServiceAccount token would; close() of the result leaves the connections open.
   */
  impersonating(identity: Identity): ClientNodeKube {
    return new ClientNodeKube(
      this.kubeConfig,
      { random: this.random, clock: this.clock },
      { transport: impersonatingTransport(this.http, identity), serverTime: this.serverTime },
    );
  }

  /** Closes every connection to the API server, ending calls and watches in flight. */
  close(): void {
    this.http.close();
  }

  getNode(name: string, signal?: AbortSignal): Promise<V1Node> {
    return this.retried({ method: 'GET', path: `/api/v1/nodes/${enc(name)}`, signal });
  }

  async listNodes(options: ListOptions = {}, signal?: AbortSignal): Promise<V1Node[]> {
    return this.items({ method: 'GET', path: '/api/v1/nodes', query: { ...options }, signal });
  }

  getObject(ref: ObjectRef, signal?: AbortSignal): Promise<unknown> {
    return this.retried({ method: 'GET', path: objectPath(ref), signal });
  }

  createObject(ref: CollectionRef, body: object, signal?: AbortSignal): Promise<unknown> {
    return this.http.json({
      method: 'POST',
      path: collectionPath(ref),
      query: { fieldManager: FIELD_MANAGER },
      body,
      signal,
    });
  }

  async listObjects(ref: CollectionRef, bounds: ListBounds, signal?: AbortSignal): Promise<ObjectList> {
    const path = collectionPath(ref);
    const query = { limit: bounds.limit };
    return objectListOf(
      await this.retried({ method: 'GET', path, query, maxBytes: bounds.maxBytes, signal }),
    );
  }

  async listNodeRows(options: ListOptions = {}, signal?: AbortSignal): Promise<NodeRow[]> {
    const answer = await this.retried<unknown>({
      method: 'GET',
      path: '/api/v1/nodes',
      query: { ...options, includeObject: 'None' },
      accept: TABLE_ACCEPT,
      signal,
    });
    return nodeRows(answer);
  }

  listNodesPage(options: PageOptions = {}, signal?: AbortSignal): Promise<NodePage> {
    return this.page('/api/v1/nodes', options, signal);
  }

  watchNodes(onEvent: (event: WatchEvent<V1Node>) => void, options: WatchOptions): Promise<void> {
    return this.watchCollection('/api/v1/nodes', onEvent, options);
  }

  listPodsPage(
    namespace: string | undefined,
    options: PageOptions = {},
    signal?: AbortSignal,
  ): Promise<PodPage> {
    return this.page(podsPath(namespace), options, signal);
  }

  watchPods(onEvent: (event: WatchEvent<V1Pod>) => void, options: WatchOptions): Promise<void> {
    return this.watchCollection(podsPath(undefined), onEvent, options);
  }

  /** One page of the collection at `path`, with the resourceVersion of its snapshot. */
  private async page<T>(path: string, options: PageOptions, signal?: AbortSignal): Promise<Page<T>> {
    return pageOf(
      await this.retried<ListAnswer<T> | undefined>({ method: 'GET', path, query: { ...options }, signal }),
    );
  }

  /** A watch of the collection at `path` (with bookmarks), each line handed to `onEvent`. */
  private async watchCollection<T>(
    path: string,
    onEvent: (event: WatchEvent<T>) => void,
    options: WatchOptions,
  ): Promise<void> {
    await this.http.watch(
      {
        method: 'GET',
        path,
        query: {
          allowWatchBookmarks: true,
          resourceVersion: options.resourceVersion,
          fieldSelector: options.fieldSelector,
          labelSelector: options.labelSelector,
        },
        signal: options.signal,
        timeoutSeconds: this.watchSeconds(options.timeoutSeconds),
      },
      (line) => {
        onEvent(line as WatchEvent<T>);
      },
    );
  }

  jsonPatchNode(name: string, ops: JsonPatchOp[], signal?: AbortSignal): Promise<V1Node> {
    return this.patch(`/api/v1/nodes/${enc(name)}`, JSON_PATCH, ops, signal);
  }

  mergePatchNode(name: string, patch: object, signal?: AbortSignal): Promise<V1Node> {
    return this.patch(`/api/v1/nodes/${enc(name)}`, MERGE_PATCH, patch, signal);
  }

  listPods(namespace: string | undefined, options: ListOptions = {}, signal?: AbortSignal): Promise<V1Pod[]> {
    return this.items({ method: 'GET', path: podsPath(namespace), query: { ...options }, signal });
  }

  /** Sent again inside the call like a read (retried): a dry run changes nothing, however often sent. */
  dryRunEviction(
    namespace: string,
    name: string,
    options: EvictionOptions,
    signal?: AbortSignal,
  ): Promise<void> {
    return this.postEviction(evictionBody(namespace, name, options, true), signal, true);
  }

  /** Sent once: the drain judges a failed eviction by what the cluster then shows (kube-drainer.ts). */
  evictPod(namespace: string, name: string, options: EvictionOptions, signal?: AbortSignal): Promise<void> {
    return this.postEviction(evictionBody(namespace, name, options, false), signal, false);
  }

  async deletePod(
    namespace: string,
    name: string,
    options: { uid?: string | undefined; gracePeriodSeconds?: number | undefined },
    signal?: AbortSignal,
  ): Promise<void> {
    const { uid, gracePeriodSeconds } = options;
    const body = { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid }, gracePeriodSeconds };
    const path = `/api/v1/namespaces/${enc(namespace)}/pods/${enc(name)}`;
    await this.http.json({ method: 'DELETE', path, body, signal });
  }

  /** POSTs a policy/v1 Eviction of the pod; a dry run says so in the query too, as kubectl does. */
  private async postEviction(
    body: EvictionBody,
    signal: AbortSignal | undefined,
    again: boolean,
  ): Promise<void> {
    const { namespace, name } = body.metadata;
    const req: KubeRequest = {
      method: 'POST',
      path: `/api/v1/namespaces/${enc(namespace)}/pods/${enc(name)}/eviction`,
      ...(body.deleteOptions?.dryRun === undefined ? {} : { query: { dryRun: 'All' } }),
      body,
      signal,
    };
    await (again ? this.retried(req) : this.http.json(req));
  }

  listPodDisruptionBudgets(
    namespace: string | undefined,
    signal?: AbortSignal,
  ): Promise<V1PodDisruptionBudget[]> {
    const path =
      namespace === undefined
        ? '/apis/policy/v1/poddisruptionbudgets'
        : `/apis/policy/v1/namespaces/${enc(namespace)}/poddisruptionbudgets`;
    return this.items({ method: 'GET', path, signal });
  }

  listServicesPage(options: PageOptions = {}, signal?: AbortSignal): Promise<ServicePage> {
    return this.page<V1Service>('/api/v1/services', options, signal);
  }

  listDaemonSets(
    namespace: string | undefined,
    options: ListOptions = {},
    signal?: AbortSignal,
  ): Promise<V1DaemonSet[]> {
    const path =
      namespace === undefined
        ? '/apis/apps/v1/daemonsets'
        : `/apis/apps/v1/namespaces/${enc(namespace)}/daemonsets`;
    return this.items({ method: 'GET', path, query: { ...options }, signal });
  }

  getDaemonSet(namespace: string, name: string, signal?: AbortSignal): Promise<V1DaemonSet> {
    return this.retried({ method: 'GET', path: daemonSetPath(namespace, name), signal });
  }

  mergePatchDaemonSet(
    namespace: string,
    name: string,
    patch: object,
    signal?: AbortSignal,
  ): Promise<V1DaemonSet> {
    return this.patch(daemonSetPath(namespace, name), MERGE_PATCH, patch, signal);
  }

  watchDaemonSet(
    namespace: string,
    name: string,
    onEvent: (event: WatchEvent<V1DaemonSet>) => void,
    options: { resourceVersion?: string; signal: AbortSignal; timeoutSeconds?: number },
  ): Promise<void> {
    const path = `/apis/apps/v1/namespaces/${enc(namespace)}/daemonsets`;
    return this.watchCollection(path, onEvent, { ...options, fieldSelector: `metadata.name=${name}` });
  }

  /** The given timeout, or 5–10 minutes spread at random so that watches do not end together. */
  private watchSeconds(given: number | undefined): number {
    return given ?? Math.round(WATCH_MIN_SECONDS * (1 + this.random()));
  }

  getDeployment(namespace: string, name: string, signal?: AbortSignal): Promise<V1Deployment> {
    return this.retried({ method: 'GET', path: appsPath(namespace, 'deployments', name), signal });
  }

  mergePatchDeployment(
    namespace: string,
    name: string,
    patch: object,
    signal?: AbortSignal,
  ): Promise<V1Deployment> {
    return this.patch(appsPath(namespace, 'deployments', name), MERGE_PATCH, patch, signal);
  }

  getReplicaSet(namespace: string, name: string, signal?: AbortSignal): Promise<V1ReplicaSet> {
    return this.retried({ method: 'GET', path: appsPath(namespace, 'replicasets', name), signal });
  }

  getLease(namespace: string, name: string, signal?: AbortSignal): Promise<V1Lease> {
    return this.retried({ method: 'GET', path: leasePath(namespace, name), signal });
  }

  createLease(namespace: string, lease: V1Lease, signal?: AbortSignal): Promise<V1Lease> {
    return this.http.json({
      method: 'POST',
      path: `/apis/coordination.k8s.io/v1/namespaces/${enc(namespace)}/leases`,
      query: { fieldManager: FIELD_MANAGER },
      body: lease,
      signal,
    });
  }

  /** Not retried inside the call: the caller's election loop decides again from a fresh read. */
  replaceLease(namespace: string, name: string, lease: V1Lease, signal?: AbortSignal): Promise<V1Lease> {
    return this.http.json({
      method: 'PUT',
      path: leasePath(namespace, name),
      query: { fieldManager: FIELD_MANAGER },
      body: lease,
      signal,
    });
  }

  createEvent(namespace: string, event: CoreV1Event, signal?: AbortSignal): Promise<CoreV1Event> {
    return this.http.json({
      method: 'POST',
      path: `/api/v1/namespaces/${enc(namespace)}/events`,
      query: { fieldManager: FIELD_MANAGER },
      body: event,
      signal,
    });
  }

  mergePatchEvent(
    namespace: string,
    name: string,
    patch: object,
    signal?: AbortSignal,
  ): Promise<CoreV1Event> {
    return this.patch(`/api/v1/namespaces/${enc(namespace)}/events/${enc(name)}`, MERGE_PATCH, patch, signal);
  }

  async reviewSelf(signal?: AbortSignal): Promise<SelfIdentity> {
    type Review = { status?: { userInfo?: { username?: string; groups?: string[] } } };
    const review = await this.http.json<Review | undefined>({
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      signal,
    });
    const user = review?.status?.userInfo;
    return { username: user?.username ?? '', groups: user?.groups ?? [] };
  }

  private async items<T>(req: KubeRequest): Promise<T[]> {
    const list = await this.retried<ListAnswer<T> | undefined>(req);
    return list?.items ?? [];
  }

  /**
   * A request that is safe to send again, sent again inside the call when the answer is about the
   * server (isRetryableRead: 5xx but the 500 of a pod under two budgets, a 429 of API Priority and
   * Fairness, a reset connection; not a PodDisruptionBudget's 429, a denial, or a call past its
   * deadline) (READ_ATTEMPTS in all, jittered backoff, the server's Retry-After honoured up to
   * RETRY_AFTER_CAP_MS), as client-go does; one overloaded moment should not cost a whole tick.
   * Safe: a GET or LIST; a dry-run eviction; and every PATCH we send, because each is a merge patch
   * (the same patch twice leaves the same object) or guarded (by resourceVersion, or a JSON patch's
   * leading `test`: a repeat of one that was committed before the error answers 409/422, and the
   * caller re-reads and finds its change made). Other POSTs (an Event, an eviction) are not
   * repeated here.
   */
  private retried<T>(req: KubeRequest): Promise<T> {
    return retry(() => this.http.json<T>(req), {
      attempts: READ_ATTEMPTS,
      baseMs: 200,
      maxMs: 2_000,
      retryOn: isRetryableRead,
      minDelayMs: (err) => Math.min(RETRY_AFTER_CAP_MS, (retryAfterSeconds(err) ?? 0) * 1000),
      clock: this.clock,
      random: this.random,
      ...(req.signal === undefined ? {} : { signal: req.signal }),
    });
  }

  private patch<T>(path: string, contentType: string, body: unknown, signal?: AbortSignal): Promise<T> {
    return this.retried({
      method: 'PATCH',
      path,
      query: { fieldManager: FIELD_MANAGER },
      contentType,
      body,
      signal,
    });
  }
}
