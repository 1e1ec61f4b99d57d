// A fake Kubernetes API server: an in-memory kube-apiserver on 127.0.0.1 that the real
// @kubernetes/client-node talks to, for adapter tests and the `simulate` command. Tests may also hand
// it the production client's requests in memory (kubeInMemory(), fake-api/memory-exchange.ts):
// served by the same code, without the socket.
//
// Behaves like kube-apiserver where kured-ts depends on it: one global resourceVersion, list and
// watch with label and field selectors, 409 on stale writes, JSON/merge/strategic-merge patches,
// graceful deletion, policy/v1 eviction guarded by PodDisruptionBudgets (status kept current by the
// server), Status objects on every error. Writes to a resource with a status subresource keep the
// stored status, and /status writes change only the status, as in kube; the in-process
// create/update methods write everything.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { ClientNodeKube, type ConnectOptions } from '../kube/client.js';
import type { Exchange } from '../kube/http.js';
import { memoryWire } from './fake-api/memory-exchange.js';
import { startKubeletHeartbeats } from './fake-api/kubelet-heartbeat.js';
import { SystemClock, type Clock } from '../clock/clock.js';
import {
  handleRequest,
  type Chaos,
  type FailureMode,
  type HttpContext,
  type InjectedFailure,
  type RecordedRequest,
} from './fake-api/http.js';
import { toJson, type JsonObject } from './fake-api/json.js';
import { Registry, type PodDeletion } from './fake-api/registry.js';
import { RESOURCES, type KubeObject, type ResourceName, type StoredObject } from './fake-api/resources.js';
import { Store, type Change } from './fake-api/store.js';
import { WatchHub } from './fake-api/watch.js';
import type { Admission } from './fake-api/admission.js';

export type { RecordedRequest };

/** One accepted write, as `onWrite` listeners receive it. */
export interface WriteEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  resource: ResourceName;
  /** The object after the write (for DELETED its last state), as JSON. */
  object: KubeObject;
}

/** How an injected failure answers: its Status causes, and when it strikes (default 'fail'). */
interface FailureOptions {
  causes?: { reason: string; message: string }[];
  /** The Status message. Default `injected failure for METHOD PATH`. */
  message?: string;
  mode?: FailureMode;
}

/** Options of startFakeApiServer. */
export interface FakeApiServerOptions {
  /**
   * 'immediate' (default): DELETE or eviction of a pod removes it at once. 'graceful': a scheduled,
   * non-terminal pod gets metadata.deletionTimestamp/deletionGracePeriodSeconds and stays until a
   * (simulated) kubelet removes it with `delete`.
   */
  podDeletion?: PodDeletion;
  /** Changes kept for watches to resume from (default 10000); older resourceVersions get 410. */
  historyLimit?: number;
  /**
   * Act as kube's node lifecycle controller (default false): right after a Node write, add or remove
   * the NoSchedule taints node.kubernetes.io/unschedulable (spec.unschedulable), not-ready (Ready
   * False) and unreachable (Ready Unknown), as a separate write that watchers see.
   */
  nodeController?: boolean;
  /**
   * Act as the kubelets (default 0 = off): every this many ms of real time, each Node's Ready
   * condition gets a new lastHeartbeatTime, a write of its own that moves the Node's resourceVersion.
   */
  kubeletHeartbeatMs?: number;
  /** Source of creation and deletion timestamps (default: system clock). */
  clock?: Clock;
  /**
   * Times each watch's timeoutSeconds (default: the system clock, whatever `clock` is). Bookmarks
   * (every BOOKMARK_MS to a watch that allows them) go by `clock`, else by this.
   */
  watchClock?: Clock;
  /**
   * The server's clock runs this far ahead of `clock` (negative: behind): every timestamp it writes
   * (creation, deletion, managedFields, Events, PDB status) is off by it, as a control plane's clock
   * may be off from a node's. Default 0.
   */
  clockOffsetMs?: number;
  /** Reviews every HTTP write before it is stored (e.g. CelAdmission with kured-ts's policy). */
  admission?: Admission;
  /**
   * Bound for `requests` in long runs: keeps at least this many of the latest (at most twice as
   * many). Default 0 = keep every request, which tests want.
   */
  maxRecordedRequests?: number;
}

export interface FakeApiServer {
  /** http://127.0.0.1:PORT */
  readonly url: string;
  /** A client-node KubeConfig for this server (skipTLSVerify, no credentials). */
  kubeConfig(): KubeConfig;
  /**
   * Hands a request to this server in memory (ConnectOptions.exchange): served as one over HTTP is,
   * without the socket (fake-api/memory-exchange.ts).
   */
  readonly exchange: Exchange;
  /**
   * The production client (ClientNodeKube) talking to this server in memory: every Kube method, its
   * retries, deadlines and impersonation as over HTTP, and every request recorded, failed on demand
   * and reviewed by admission as over HTTP. A new Kube method works here as soon as the server
   * serves its request.
   */
  kubeInMemory(
    options?: Pick<ConnectOptions, 'deadlineMs' | 'watchGraceMs' | 'random' | 'clock'>,
  ): ClientNodeKube;
  /**
   * Direct in-memory access for tests and the simulator (no HTTP). Writes bump resourceVersion and
   * notify watchers and onWrite listeners exactly like HTTP writes. Objects returned are fresh JSON
   * copies (timestamps as RFC 3339 strings, as on the wire), safe to mutate.
   */
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the model type it expects
  get<T extends object>(resource: ResourceName, namespace: string | undefined, name: string): T | undefined;
  list<T extends object>(resource: ResourceName, namespace?: string): T[];
  /** Fills uid, resourceVersion, creationTimestamp; throws ApiError (409) when it exists. */
  create<T extends object>(resource: ResourceName, obj: T): T;
  /** Unconditional write of the whole object, status included (ignores resourceVersion); 404 if absent. */
  update<T extends object>(resource: ResourceName, obj: T): T;
  /** Removes the object at once (whatever podDeletion says); throws ApiError (404) when absent. */
  delete(resource: ResourceName, namespace: string | undefined, name: string): void;
  /** Every HTTP request served, in order of arrival (the latest ones with maxRecordedRequests). */
  readonly requests: RecordedRequest[];
  /** Bytes of every answer's body so far (what the server serialized; watch streams aside). */
  readonly responseBytes: number;
  /** The requests that have arrived so far from the agent of `node` (its node claim; never trimmed). */
  requestsBy(node: string): number;
  /** Called synchronously after every accepted write; returns the unsubscribe function. */
  onWrite(listener: (e: WriteEvent) => void): () => void;
  /**
   * The next `count` requests whose method matches (case-insensitive; any when absent) and whose
   * path-with-query contains `pathIncludes` fail with a Status of HTTP `status`.
   */
  injectFailure(
    match: { method?: string; pathIncludes?: string },
    status: number,
    count: number,
    options?: FailureOptions,
  ): void;
  /** Drops every injected failure not yet met. */
  clearFailures(): void;
  /** From now on a random fraction of requests fails (undefined: stops it); watches only when it says so. */
  chaos(chaos: Chaos | undefined): void;
  /** Ends every open watch stream cleanly, as an API server restart does; clients re-watch. */
  endWatches(): void;
  /**
   * Every watch of `resource` open now goes silent (no event, no bookmark) but stays open: a
   * connection hung after its first events. Later watches are served as usual.
   */
  silenceWatches(resource: string): void;
  /** Ends watches, closes connections and the listener. */
  close(): Promise<void>;
}

/** The kubelets' heartbeats when asked for; the function that stops them. */
function kubelets(store: Store, options: FakeApiServerOptions): () => void {
  const every = options.kubeletHeartbeatMs ?? 0;
  if (every <= 0) return () => undefined;
  const clock = offsetClock(options.clock ?? new SystemClock(), options.clockOffsetMs ?? 0);
  return startKubeletHeartbeats(store, clock, every);
}

/** Starts a fake API server on 127.0.0.1 at an ephemeral port. */
export async function startFakeApiServer(options: FakeApiServerOptions = {}): Promise<FakeApiServer> {
  const store = new Store(options.historyLimit ?? 10000);
  const registry = new Registry(
    store,
    offsetClock(options.clock ?? new SystemClock(), options.clockOffsetMs ?? 0),
    {
      podDeletion: options.podDeletion ?? 'immediate',
      nodeController: options.nodeController ?? false,
      ...(options.admission ? { admission: options.admission } : {}),
    },
  );
  const ctx: HttpContext = {
    store,
    registry,
    hub: new WatchHub(store, options.watchClock, options.clock ?? options.watchClock),
    requests: [],
    maxRecordedRequests: options.maxRecordedRequests ?? 0,
    failures: [],
    served: { bytes: 0, byNode: new Map() },
  };
  const server = createServer((req, res) => {
    void handleRequest(ctx, req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return new FakeServer(`http://127.0.0.1:${String(port)}`, server, ctx, kubelets(store, options));
}

/** `clock` read `offsetMs` ahead (its timers unchanged). */
function offsetClock(clock: Clock, offsetMs: number): Clock {
  if (offsetMs === 0) return clock;
  return {
    now: () => new Date(clock.now().getTime() + offsetMs),
    sleep: (ms, signal) => clock.sleep(ms, signal),
  };
}

/** A fresh copy of a stored object, as JSON (what a GET returns). */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the type it expects
function typed<T>(_resource: ResourceName, obj: StoredObject): T {
  return toJson(obj) as unknown as T;
}

function rethrowLater(err: unknown): void {
  // a listener's fault must not fail the write it observes, nor vanish: surface it as uncaught
  queueMicrotask(() => {
    throw err;
  });
}

class FakeServer implements FakeApiServer {
  readonly requests: RecordedRequest[];
  readonly exchange: Exchange;
  /** Drops the in-memory exchanges still open. */
  private readonly resetMemory: () => void;

  constructor(
    readonly url: string,
    private readonly server: Server,
    private readonly ctx: HttpContext,
    private readonly stopHeartbeats: () => void = () => undefined,
  ) {
    this.requests = ctx.requests;
    const wire = memoryWire(ctx);
    this.exchange = wire.exchange;
    this.resetMemory = wire.reset;
  }

  kubeInMemory(
    options: Pick<ConnectOptions, 'deadlineMs' | 'watchGraceMs' | 'random' | 'clock'> = {},
  ): ClientNodeKube {
    return new ClientNodeKube(this.kubeConfig(), { ...options, exchange: this.exchange });
  }

  /** Bytes of every answer's body so far (what the server serialized; watch streams aside). */
  get responseBytes(): number {
    return this.ctx.served.bytes;
  }

  /** The requests that have arrived so far from the agent of `node` (its node claim). */
  requestsBy(node: string): number {
    return this.ctx.served.byNode.get(node) ?? 0;
  }

  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: this.url, skipTLSVerify: true }],
      users: [{ name: 'fake' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'fake' }],
      currentContext: 'fake',
    });
    return kc;
  }

  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the model type it expects
  get<T extends object>(resource: ResourceName, namespace: string | undefined, name: string): T | undefined {
    const def = RESOURCES[resource];
    const obj = this.ctx.store.get(resource, def.namespaced ? namespace : undefined, name);
    return obj ? typed<T>(resource, obj) : undefined;
  }

  list<T extends object>(resource: ResourceName, namespace?: string): T[] {
    return this.ctx.store.list(resource, namespace).map((o) => typed<T>(resource, o));
  }

  create<T extends object>(resource: ResourceName, obj: T): T {
    const json = toJson(obj) as unknown as JsonObject;
    return typed<T>(resource, this.ctx.registry.create(RESOURCES[resource], undefined, json));
  }

  update<T extends object>(resource: ResourceName, obj: T): T {
    return typed<T>(
      resource,
      this.ctx.registry.put(RESOURCES[resource], toJson(obj) as unknown as JsonObject),
    );
  }

  delete(resource: ResourceName, namespace: string | undefined, name: string): void {
    this.ctx.registry.removeNow(RESOURCES[resource], namespace, name);
  }

  onWrite(listener: (e: WriteEvent) => void): () => void {
    return this.ctx.store.subscribe((change: Change) => {
      try {
        listener({
          type: change.type,
          resource: change.resource,
          object: typed<KubeObject>(change.resource, change.object),
        });
      } catch (err) {
        rethrowLater(err);
      }
    });
  }

  injectFailure(
    match: { method?: string; pathIncludes?: string },
    status: number,
    count: number,
    options: FailureOptions = {},
  ): void {
    const failure: InjectedFailure = { status, remaining: count, ...options };
    if (match.method !== undefined) failure.method = match.method;
    if (match.pathIncludes !== undefined) failure.pathIncludes = match.pathIncludes;
    this.ctx.failures.push(failure);
  }

  clearFailures(): void {
    this.ctx.failures.length = 0;
  }

  chaos(chaos: Chaos | undefined): void {
    if (chaos === undefined) delete this.ctx.chaos;
    else this.ctx.chaos = chaos;
  }

  endWatches(): void {
    this.ctx.hub.closeAll();
  }

  silenceWatches(resource: string): void {
    this.ctx.hub.silenceOpen(resource);
  }

  async close(): Promise<void> {
    this.stopHeartbeats();
    this.ctx.hub.closeAll();
    this.resetMemory();
    const closed = new Promise<void>((resolve, reject) => {
      this.server.close((err) => {
        if (err) reject(err);
        else resolve();
      });
    });
    this.server.closeAllConnections();
    await closed;
  }
}
