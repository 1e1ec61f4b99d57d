// The cluster the adapter contract suite runs against: the fake API server (npm test) or a real
// kube-apiserver (npm run test:real-api). The suite's own writes — a third party's, the kubelet's,
// the disruption controller's — go over HTTP to either, so both are held to the same outcomes.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { readFileSync } from 'node:fs';
import { connectKube, ClientNodeKube } from '../../src/kube/client.js';
import type { V1Pod } from '../../src/kube/kube.js';
import { startFakeApiServer, type FakeApiServer } from '../../src/sim/fake-api-server.js';

const STRATEGIC = 'application/strategic-merge-patch+json';

export type Resource =
  | 'nodes'
  | 'pods'
  | 'daemonsets'
  | 'deployments'
  | 'poddisruptionbudgets'
  | 'events'
  | 'persistentvolumes'
  | 'persistentvolumeclaims'
  | 'volumeattachments'
  | 'jobs'
  | 'cronjobs';

/** Where each resource lives (namespaced ones take the namespace). */
function collection(resource: Resource, namespace?: string): string {
  const ns = `namespaces/${namespace ?? 'default'}/`;
  switch (resource) {
    case 'nodes':
      return '/api/v1/nodes';
    case 'pods':
      return `/api/v1/${ns}pods`;
    case 'events':
      return `/api/v1/${ns}events`;
    case 'daemonsets':
      return `/apis/apps/v1/${ns}daemonsets`;
    case 'deployments':
      return `/apis/apps/v1/${ns}deployments`;
    case 'poddisruptionbudgets':
      return `/apis/policy/v1/${ns}poddisruptionbudgets`;
    case 'persistentvolumes':
      return '/api/v1/persistentvolumes';
    case 'persistentvolumeclaims':
      return `/api/v1/${ns}persistentvolumeclaims`;
    case 'volumeattachments':
      return '/apis/storage.k8s.io/v1/volumeattachments';
    case 'jobs':
      return `/apis/batch/v1/${ns}jobs`;
    case 'cronjobs':
      return `/apis/batch/v1/${ns}cronjobs`;
  }
}

interface Endpoint {
  url: string;
  token?: string;
  /** PEM of the server's CA (https). */
  ca?: string;
}

export interface Answer {
  status: number;
  body: unknown;
}

interface Call {
  method: string;
  path: string;
  body?: unknown;
  contentType?: string;
}

/** One JSON request; never throws for an HTTP status (the caller looks at it). */
export function send(endpoint: Endpoint, call: Call): Promise<Answer> {
  const { method, path, body, contentType } = call;
  const url = new URL(path, endpoint.url);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (endpoint.token !== undefined) headers.Authorization = `Bearer ${endpoint.token}`;
  if (payload !== undefined) headers['Content-Type'] = contentType ?? 'application/json';
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method, headers, ...(endpoint.ca === undefined ? {} : { ca: endpoint.ca }) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = text === '' ? undefined : JSON.parse(text);
          } catch {
            // not JSON: keep the text
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
      },
    );
    req.on('error', reject);
    req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${path}: no answer in 30 s`)));
    req.end(payload);
  });
}

interface Meta {
  metadata?: { name?: string; namespace?: string; deletionTimestamp?: string };
}

/** The collection path of a rendered manifest object (`/apis/apps/v1/namespaces/x/daemonsets`). */
function collectionOf(obj: { apiVersion: string; kind: string; metadata: { namespace?: string } }): string {
  const group = obj.apiVersion.includes('/') ? `/apis/${obj.apiVersion}` : `/api/${obj.apiVersion}`;
  const plural = obj.kind.toLowerCase().replace(/y$/, 'ie') + 's';
  const ns = obj.metadata.namespace === undefined ? '' : `/namespaces/${obj.metadata.namespace}`;
  return `${group}${ns}/${plural}`;
}

/** A cluster for one test: our code connects through `kube()`, the test plays everyone else. */
export class TestCluster {
  private kubelet: NodeJS.Timeout | undefined;
  private readonly created: { resource: Resource; namespace?: string; name: string }[] = [];
  /** Paths of what apply() created, deleted at close(). */
  private readonly applied: string[] = [];

  private constructor(
    readonly kind: 'fake' | 'real',
    private readonly endpoint: Endpoint,
    private readonly connect: () => ClientNodeKube,
    private readonly fake?: FakeApiServer,
  ) {}

  /** A fresh fake API server that deletes pods gracefully, as kube-apiserver does. */
  static async fake(): Promise<TestCluster> {
    const server = await startFakeApiServer({ podDeletion: 'graceful' });
    return new TestCluster(
      'fake',
      { url: server.url },
      () => new ClientNodeKube(server.kubeConfig()),
      server,
    );
  }

  /**
   * The same fake API server, our code's client talking to it in memory (FakeApiServer.kubeInMemory):
   * holds the in-memory client the other tests use to the contract the real server keeps.
   */
  static async fakeInMemory(): Promise<TestCluster> {
    const server = await startFakeApiServer({ podDeletion: 'graceful' });
    return new TestCluster('fake', { url: server.url }, () => server.kubeInMemory(), server);
  }

  /** The real kube-apiserver that scripts/test-real-api.mjs started (admin credentials). */
  static real(): TestCluster {
    const kubeconfig = process.env.REAL_API_KUBECONFIG;
    if (kubeconfig === undefined)
      throw new Error('REAL_API_KUBECONFIG is not set: run npm run test:real-api');
    const text = readFileSync(kubeconfig, 'utf8');
    const token = /token: "([^"]+)"/.exec(text)?.[1];
    const ca = Buffer.from(process.env.REAL_API_CA ?? '', 'base64').toString('utf8');
    return new TestCluster('real', { url: process.env.REAL_API_URL ?? '', token, ca }, () =>
      connectKube({ kubeconfig }),
    );
  }

  /** The API server's address and CA (PEM), for the kubeconfigs of other identities. */
  get server(): { url: string; ca: string | undefined } {
    return { url: this.endpoint.url, ca: this.endpoint.ca };
  }

  /**
   * Creates a rendered manifest object of any kind the chart ships (RBAC, admission policies,
   * ServiceAccounts, DaemonSets); it is deleted again at close().
   */
  async apply(obj: {
    apiVersion: string;
    kind: string;
    metadata: { name: string; namespace?: string };
  }): Promise<void> {
    const path = collectionOf(obj);
    const answer = await send(this.endpoint, { method: 'POST', path, body: obj });
    if (answer.status !== 201) {
      throw new Error(
        `create ${obj.kind} ${obj.metadata.name}: ${answer.status} ${JSON.stringify(answer.body)}`,
      );
    }
    this.applied.push(`${path}/${obj.metadata.name}`);
  }

  /** Deletes an object apply() created (`helm uninstall` of one manifest), and forgets it. */
  async remove(obj: {
    apiVersion: string;
    kind: string;
    metadata: { name: string; namespace?: string };
  }): Promise<void> {
    const path = `${collectionOf(obj)}/${obj.metadata.name}`;
    const answer = await send(this.endpoint, { method: 'DELETE', path });
    if (answer.status !== 200 && answer.status !== 202 && answer.status !== 404)
      throw new Error(`delete ${obj.kind} ${obj.metadata.name}: ${answer.status}`);
    const at = this.applied.indexOf(path);
    if (at >= 0) this.applied.splice(at, 1);
  }

  /** A ServiceAccount token bound to a pod (TokenRequest), as the kubelet mounts it into that pod. */
  async podToken(
    serviceAccount: { namespace: string; name: string },
    pod: { name: string; uid: string },
  ): Promise<string> {
    const path = `/api/v1/namespaces/${serviceAccount.namespace}/serviceaccounts/${serviceAccount.name}/token`;
    const body = {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        expirationSeconds: 3600,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.name, uid: pod.uid },
      },
    };
    const answer = await send(this.endpoint, { method: 'POST', path, body });
    if (answer.status !== 201)
      throw new Error(`TokenRequest for ${pod.name}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return (answer.body as { status: { token: string } }).status.token;
  }

  /**
   * A pod of `serviceAccount` (on `node`, with `labels`, owned by `owner` when given) and a token
   * bound to it: what the kubelet mounts into an agent's or a coordinator's pod.
   */
  async tokenInPod(
    serviceAccount: { namespace: string; name: string },
    pod: {
      name: string;
      node?: string;
      labels?: Record<string, string>;
      owner?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean };
    },
  ): Promise<string> {
    const created = await this.create<V1Pod>('pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: pod.name,
        namespace: serviceAccount.namespace,
        ...(pod.labels === undefined ? {} : { labels: pod.labels }),
        ...(pod.owner === undefined ? {} : { ownerReferences: [pod.owner] }),
      },
      spec: {
        ...(pod.node === undefined ? {} : { nodeName: pod.node }),
        serviceAccountName: serviceAccount.name,
        containers: [{ name: 'c', image: 'kured-ts' }],
      },
    });
    return this.podToken(serviceAccount, {
      name: created.metadata?.name ?? '',
      uid: created.metadata?.uid ?? '',
    });
  }

  /** One request as the cluster's admin (a resource this helper does not name: a CRD's objects). */
  request(call: Call): Promise<Answer> {
    return send(this.endpoint, call);
  }

  /** A client for the code under test, as the cluster's admin. */
  kube(): ClientNodeKube {
    return this.connect();
  }

  async create<T extends object>(resource: Resource, obj: T): Promise<T> {
    const meta = (obj as Meta).metadata ?? {};
    const answer = await send(this.endpoint, {
      method: 'POST',
      path: collection(resource, meta.namespace),
      body: obj,
    });
    if (answer.status !== 201)
      throw new Error(`create ${resource}/${meta.name}: ${answer.status} ${JSON.stringify(answer.body)}`);
    this.created.push({ resource, namespace: meta.namespace, name: meta.name ?? '' });
    return answer.body as T;
  }

  async get<T extends object>(
    resource: Resource,
    namespace: string | undefined,
    name: string,
  ): Promise<T | undefined> {
    const answer = await send(this.endpoint, {
      method: 'GET',
      path: `${collection(resource, namespace)}/${name}`,
    });
    if (answer.status === 404) return undefined;
    if (answer.status !== 200) throw new Error(`get ${resource}/${name}: ${answer.status}`);
    return answer.body as T;
  }

  async list<T extends object>(resource: Resource, namespace?: string): Promise<T[]> {
    const answer = await send(this.endpoint, { method: 'GET', path: collection(resource, namespace) });
    if (answer.status !== 200) throw new Error(`list ${resource}: ${answer.status}`);
    return (answer.body as { items?: T[] }).items ?? [];
  }

  /** A third party's merge patch (kubectl annotate/label/taint sends one): the answer's status. */
  async patch(
    resource: Resource,
    namespace: string | undefined,
    name: string,
    patch: Record<string, unknown> & { as?: 'merge' | 'kubectl' },
  ): Promise<number> {
    const { as = 'merge', ...body } = patch;
    // kubectl cordon, annotate and label send a strategic merge patch, as field manager kubectl
    const query = as === 'kubectl' ? '?fieldManager=kubectl' : '';
    const path = `${collection(resource, namespace)}/${name}${query}`;
    const contentType = as === 'kubectl' ? STRATEGIC : 'application/merge-patch+json';
    return (await send(this.endpoint, { method: 'PATCH', path, body, contentType })).status;
  }

  /** Writes the status subresource, as the kubelet or a controller does (merge patch). */
  async patchStatus(
    resource: Resource,
    namespace: string | undefined,
    name: string,
    status: Record<string, unknown> & { as?: 'merge' | 'strategic' },
  ): Promise<void> {
    const { as = 'merge', ...fields } = status;
    const path = `${collection(resource, namespace)}/${name}/status`;
    const contentType = as === 'strategic' ? STRATEGIC : 'application/merge-patch+json';
    const answer = await send(this.endpoint, {
      method: 'PATCH',
      path,
      body: { status: fields },
      contentType,
    });
    if (answer.status !== 200)
      throw new Error(`status of ${resource}/${name}: ${answer.status} ${JSON.stringify(answer.body)}`);
  }

  /**
   * Plays the disruption controller for a budget with an integer minAvailable and matchLabels: its
   * status from the healthy pods it selects. The fake API server computes PDB status itself at each
   * eviction (an instant controller), so there this is a no-op; a real one has no controller.
   */
  async syncBudget(namespace: string, name: string): Promise<void> {
    if (this.kind === 'fake') return;
    interface Budget {
      metadata?: { generation?: number };
      spec?: { minAvailable?: number; selector?: { matchLabels?: Record<string, string> } };
    }
    interface Pod {
      metadata?: { labels?: Record<string, string>; deletionTimestamp?: string };
      status?: { conditions?: { type: string; status: string }[] };
    }
    const budget = await this.get<Budget>('poddisruptionbudgets', namespace, name);
    if (budget === undefined) throw new Error(`no PodDisruptionBudget ${namespace}/${name}`);
    const wanted = Object.entries(budget.spec?.selector?.matchLabels ?? {});
    const selected = (await this.list<Pod>('pods', namespace)).filter((p) =>
      wanted.every(([k, v]) => p.metadata?.labels?.[k] === v),
    );
    const healthy = selected.filter(
      (p) =>
        p.metadata?.deletionTimestamp === undefined &&
        p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
    ).length;
    const desired = budget.spec?.minAvailable ?? 0;
    await this.patchStatus('poddisruptionbudgets', namespace, name, {
      observedGeneration: budget.metadata?.generation ?? 1,
      disruptionsAllowed: Math.max(0, healthy - desired),
      currentHealthy: healthy,
      desiredHealthy: desired,
      expectedPods: selected.length,
    });
  }

  /**
   * Plays the kubelet: a pod marked for deletion is removed after `afterMs` (its containers
   * stopped). No kubelet runs against the real server, so without this evicted pods never go.
   */
  startKubelet(afterMs = 50): void {
    const seen = new Set<string>();
    const tick = async (): Promise<void> => {
      for (const ns of ['default', 'kube-system']) {
        for (const pod of await this.list<Meta>('pods', ns).catch(() => [] as Meta[])) {
          const key = `${ns}/${pod.metadata?.name ?? ''}`;
          if (pod.metadata?.deletionTimestamp === undefined || seen.has(key)) continue;
          seen.add(key);
          setTimeout(() => void this.forceDelete('pods', ns, pod.metadata?.name ?? ''), afterMs);
        }
      }
    };
    this.kubelet = setInterval(() => void tick(), 50);
  }

  async forceDelete(resource: Resource, namespace: string | undefined, name: string): Promise<void> {
    const path = `${collection(resource, namespace)}/${name}?gracePeriodSeconds=0`;
    const answer = await send(this.endpoint, { method: 'DELETE', path: path });
    if (answer.status !== 200 && answer.status !== 202 && answer.status !== 404) {
      throw new Error(`delete ${resource}/${name}: ${answer.status}`);
    }
  }

  /** Leaves the cluster as it was found: what this test created is deleted (the fake is closed). */
  async close(): Promise<void> {
    if (this.kubelet !== undefined) clearInterval(this.kubelet);
    if (this.fake !== undefined) {
      await this.fake.close();
      return;
    }
    for (const o of this.created.reverse()) await this.forceDelete(o.resource, o.namespace, o.name);
    for (const path of this.applied.reverse()) await send(this.endpoint, { method: 'DELETE', path });
    for (const ns of ['default', 'kube-system']) {
      await send(this.endpoint, { method: 'DELETE', path: collection('events', ns) });
    }
  }
}
