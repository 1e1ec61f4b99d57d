// ClientNodeKube: the Kube seam on client-node 1.4.0, against the fake API server.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { waitFor } from '../../fakes/wait-for.js';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { Agent } from 'node:http';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AgentOptions } from 'node:https';
import { connect, createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { KubeConfig } from '@kubernetes/client-node';
import { ClientNodeKube, READ_ATTEMPTS, connectKube } from '../../../src/kube/client.js';
import {
  isConflict,
  isInvalid,
  isNotFound,
  isTooManyRequests,
  statusBody,
} from '../../../src/kube/errors.js';
import { IDLE_SOCKET_MS, KeepAliveAgents, installKeepAliveAgents } from '../../../src/kube/keep-alive.js';
import type {
  Kube,
  V1DaemonSet,
  V1Node,
  V1Pod,
  V1PodDisruptionBudget,
  WatchEvent,
} from '../../../src/kube/kube.js';
import { startFakeApiServer, type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { kuredDaemonSet } from '../../fakes/kube-objects.js';
import { writeKubeconfig } from '../../fakes/kubeconfig-file.js';

let server: FakeApiServer;
let kube: ClientNodeKube;

beforeEach(async () => {
  server = await startFakeApiServer();
  kube = connectKube({ url: server.url });
  server.create<V1Node>('nodes', { metadata: { name: 'n1', labels: { role: 'worker' } } });
  server.create('daemonsets', kuredDaemonSet());
});

afterEach(async () => {
  kube.close();
  await server.close();
});

function lastRequest(): { method: string; path: string; contentType: string | undefined; status: number } {
  return server.requests[server.requests.length - 1]!;
}

describe('ClientNodeKube', () => {
  it.each([
    [
      'mergePatchNode',
      'application/merge-patch+json',
      (k: Kube) => k.mergePatchNode('n1', { metadata: { labels: { a: 'b' } } }),
    ],
    [
      'jsonPatchNode',
      'application/json-patch+json',
      (k: Kube) => k.jsonPatchNode('n1', [{ op: 'add', path: '/metadata/labels/a', value: 'b' }]),
    ],
    [
      'mergePatchDaemonSet',
      'application/merge-patch+json',
      (k: Kube) => k.mergePatchDaemonSet('kube-system', 'kured', { metadata: { annotations: { a: 'b' } } }),
    ],
  ])('%s sends %s', async (_name, contentType, call) => {
    await call(kube);
    expect(lastRequest()).toMatchObject({ method: 'PATCH', contentType, status: 200 });
  });

  it('names itself field manager kured-ts on every write, so managedFields tell whose a field is', async () => {
    await kube.mergePatchNode('n1', { metadata: { labels: { a: 'b' } } });
    await kube.mergePatchDaemonSet('kube-system', 'kured', { metadata: { annotations: { a: 'b' } } });
    await kube.createEvent('default', { metadata: { name: 'e1' }, involvedObject: {} });
    const writes = server.requests.filter((r) => r.method !== 'GET');
    expect(writes.map((r) => r.query.fieldManager)).toEqual(['kured-ts', 'kured-ts', 'kured-ts']);
  });

  it('deletes a key with null in a merge patch', async () => {
    await kube.mergePatchNode('n1', { metadata: { labels: { role: null } } });
    expect(server.get<V1Node>('nodes', undefined, 'n1')!.metadata!.labels).toEqual({});
  });

  it('classifies API errors by status', async () => {
    const failure = async (p: Promise<unknown>): Promise<unknown> =>
      p.then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(isNotFound(await failure(kube.getNode('missing')))).toBe(true);
    const rv = server.get<V1Node>('nodes', undefined, 'n1')!.metadata!.resourceVersion!;
    expect(
      isConflict(await failure(kube.mergePatchNode('n1', { metadata: { resourceVersion: `${rv}0` } }))),
    ).toBe(true);
    expect(
      isInvalid(
        await failure(kube.jsonPatchNode('n1', [{ op: 'test', path: '/metadata/name', value: 'n2' }])),
      ),
    ).toBe(true);
    server.create<V1Pod>('pods', {
      metadata: { name: 'web', namespace: 'default', labels: { app: 'web' } },
      spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'i' }] },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    });
    server.create<V1PodDisruptionBudget>('poddisruptionbudgets', {
      metadata: { name: 'web', namespace: 'default' },
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'web' } } },
    });
    const refused = await failure(kube.evictPod('default', 'web', {}));
    expect(isTooManyRequests(refused)).toBe(true);
    expect(statusBody(refused)?.details?.causes?.[0]?.reason).toBe('DisruptionBudget');
  });

  it('lists pods by field selector, in one namespace or all', async () => {
    for (const [ns, name, node] of [
      ['a', 'p1', 'n1'],
      ['b', 'p2', 'n1'],
      ['a', 'p3', 'n2'],
    ] as const) {
      server.create<V1Pod>('pods', {
        metadata: { name, namespace: ns },
        spec: { nodeName: node, containers: [{ name: 'c', image: 'i' }] },
      });
    }
    const names = (pods: V1Pod[]): string[] => pods.map((p) => p.metadata!.name!).sort();
    expect(names(await kube.listPods(undefined, { fieldSelector: 'spec.nodeName=n1' }))).toEqual([
      'p1',
      'p2',
    ]);
    expect(names(await kube.listPods('a'))).toEqual(['p1', 'p3']);
    expect((await kube.listNodes({ labelSelector: 'role=worker' })).map((n) => n.metadata!.name)).toEqual([
      'n1',
    ]);
  });

  it('evicts with the grace period asked for', async () => {
    await server.close();
    server = await startFakeApiServer({ podDeletion: 'graceful' });
    kube.close();
    kube = new ClientNodeKube(server.kubeConfig());
    server.create<V1Pod>('pods', {
      metadata: { name: 'web', namespace: 'default' },
      spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'i' }] },
      status: { phase: 'Running' },
    });
    await kube.evictPod('default', 'web', { gracePeriodSeconds: 4 });
    expect(server.get<V1Pod>('pods', 'default', 'web')!.metadata!.deletionGracePeriodSeconds).toBe(4);
  });

  it('streams changes of one DaemonSet from a resourceVersion until the signal aborts', async () => {
    const rv = (await kube.getDaemonSet('kube-system', 'kured')).metadata!.resourceVersion!;
    server.create<V1DaemonSet>('daemonsets', {
      metadata: { name: 'other', namespace: 'kube-system' },
      spec: { selector: { matchLabels: { app: 'o' } }, template: { metadata: { labels: { app: 'o' } } } },
    });
    await kube.mergePatchDaemonSet('kube-system', 'kured', { metadata: { annotations: { step: '1' } } });
    const seen: WatchEvent<V1DaemonSet>[] = [];
    const controller = new AbortController();
    const watching = kube.watchDaemonSet('kube-system', 'kured', (e) => seen.push(e), {
      resourceVersion: rv,
      signal: controller.signal,
    });
    await kube.mergePatchDaemonSet('kube-system', 'kured', { metadata: { annotations: { step: '2' } } });
    await waitFor(() => seen.length >= 2, 'the watch saw both changes');
    controller.abort();
    await watching;
    expect(seen.map((e) => [e.type, e.object.metadata?.name, e.object.metadata?.annotations?.step])).toEqual([
      ['MODIFIED', 'kured', '1'],
      ['MODIFIED', 'kured', '2'],
    ]);
  });

  it('loads a kubeconfig file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kured-ts-kubeconfig-'));
    try {
      const path = writeKubeconfig(join(dir, 'config'), server.url);
      const fromFile = connectKube({ kubeconfig: path });
      await expect(fromFile.getNode('n1')).resolves.toMatchObject({ metadata: { name: 'n1' } });
      fromFile.close();
    } finally {
      await rm(dir, { recursive: true });
    }
  });
});

describe('reads retried inside the call (429 and 5xx)', () => {
  const reads: [string, (k: Kube) => Promise<unknown>, string][] = [
    ['getNode', (k) => k.getNode('n1'), '/nodes/n1'],
    ['listNodes', (k) => k.listNodes(), '/api/v1/nodes'],
    ['listPods', (k) => k.listPods(undefined), '/pods'],
    ['listPodDisruptionBudgets', (k) => k.listPodDisruptionBudgets(undefined), '/poddisruptionbudgets'],
    ['getDaemonSet', (k) => k.getDaemonSet('kube-system', 'kured'), '/daemonsets/kured'],
  ];

  it.each(reads)('%s answers after a 500 and a 503 on its first two attempts', async (_name, call, path) => {
    server.injectFailure({ method: 'GET', pathIncludes: path }, 500, 1);
    server.injectFailure({ method: 'GET', pathIncludes: path }, 503, 1);
    await expect(call(kube)).resolves.toBeDefined();
    expect(server.requests.filter((r) => r.path.includes(path)).map((r) => r.status)).toEqual([
      500, 503, 200,
    ]);
  });

  it('waits the Retry-After the server gives with a 429 before the next attempt', async () => {
    server.injectFailure({ method: 'GET', pathIncludes: '/nodes/n1' }, 429, 1); // the fake says Retry-After: 1
    await expect(kube.getNode('n1')).resolves.toMatchObject({ metadata: { name: 'n1' } });
    const [refused, answered] = server.requests.filter((r) => r.path.endsWith('/nodes/n1'));
    expect(answered!.at - refused!.at).toBeGreaterThanOrEqual(990);
  });

  it('gives up after READ_ATTEMPTS (6) attempts with the last answer', async () => {
    server.injectFailure({ method: 'GET', pathIncludes: '/nodes/n1' }, 500, 10);
    await expect(kube.getNode('n1')).rejects.toMatchObject({ code: 500 });
    expect(server.requests.filter((r) => r.path.endsWith('/nodes/n1'))).toHaveLength(READ_ATTEMPTS);
  });

  it('sends a PATCH again after a 429 or 500 (every PATCH of ours is a merge patch or guarded)', async () => {
    server.injectFailure({ method: 'PATCH', pathIncludes: '/nodes/n1' }, 500, 1);
    server.injectFailure({ method: 'PATCH', pathIncludes: '/nodes/n1' }, 429, 1);
    await expect(kube.mergePatchNode('n1', { metadata: { labels: { a: 'b' } } })).resolves.toMatchObject({
      metadata: { labels: { a: 'b' } },
    });
    expect(server.requests.filter((r) => r.method === 'PATCH').map((r) => r.status)).toEqual([500, 429, 200]);
  });

  it('never sends a POST again: an eviction answered 429 is a PodDisruptionBudget speaking', async () => {
    server.injectFailure({ method: 'POST' }, 500, 1);
    await expect(
      kube.createEvent('default', { metadata: { name: 'e1', namespace: 'default' }, involvedObject: {} }),
    ).rejects.toMatchObject({ code: 500 });
    expect(server.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it('does not retry an answer that will not change (404)', async () => {
    await expect(kube.getNode('nope')).rejects.toMatchObject({ code: 404 });
    expect(server.requests.filter((r) => r.path.endsWith('/nodes/nope'))).toHaveLength(1);
  });
});

describe('aborting a request', () => {
  let hanging: Server;
  let url: string;

  beforeEach(async () => {
    hanging = createServer(() => undefined); // accepts and never answers
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${String((hanging.address() as AddressInfo).port)}`;
  });

  afterEach(async () => {
    hanging.closeAllConnections();
    await new Promise<void>((resolve) =>
      hanging.close(() => {
        resolve();
      }),
    );
  });

  it("rejects a request in flight with the signal's reason", async () => {
    const controller = new AbortController();
    // Aborted once the server holds the request: the abort, not a deadline, ends it.
    hanging.once('request', () => {
      controller.abort(new Error('agent stopping'));
    });
    await expect(connectKube({ url, deadlineMs: 600_000 }).getNode('n1', controller.signal)).rejects.toThrow(
      'agent stopping',
    );
  });

  it('fails a request the server accepted and never answered, at the deadline', async () => {
    const call = connectKube({ url, deadlineMs: 300 }).getNode('n1');
    await expect(call).rejects.toThrow('GET /api/v1/nodes/n1: no complete answer within 300 ms');
    await expect(call).rejects.toMatchObject({ name: 'TimeoutError' });
  });

  it('fails a watch whose answer never starts, at the request deadline', async () => {
    const watch = connectKube({ url, deadlineMs: 300 }).watchDaemonSet(
      'kube-system',
      'kured',
      () => undefined,
      {
        signal: new AbortController().signal,
      },
    );
    // The deadline of the answer's start (300 ms), not the whole watch's (timeoutSeconds + grace).
    await expect(watch).rejects.toMatchObject({
      name: 'TimeoutError',
      message: expect.stringContaining('within 300 ms'),
    });
  });

  it('gives up a watch that went quiet past its own timeout plus the grace period', async () => {
    hanging.removeAllListeners('request');
    hanging.on('request', (_req, res: ServerResponse) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.flushHeaders(); // and then nothing, ever: no events, no end
    });
    const watch = connectKube({ url, watchGraceMs: 200 }).watchDaemonSet(
      'kube-system',
      'kured',
      () => undefined,
      {
        signal: new AbortController().signal,
        timeoutSeconds: 1,
      },
    );
    // The whole watch's deadline: timeoutSeconds (1 s) plus the grace (200 ms).
    await expect(watch).rejects.toMatchObject({
      name: 'TimeoutError',
      message: expect.stringContaining('within 1200 ms'),
    });
  });

  it('does not send a request when the signal is already aborted', async () => {
    let requests = 0;
    hanging.on('request', () => requests++);
    await expect(
      connectKube({ url }).mergePatchNode('n1', {}, AbortSignal.abort(new Error('early'))),
    ).rejects.toThrow('early');
    expect(requests).toBe(0);
  });
});

/** A TCP (or TLS-terminating) proxy in front of the fake API server that counts client connections. */
interface CountingProxy {
  readonly url: string;
  /** Client connections accepted so far, and how many of them have closed. */
  counts(): { opened: number; closed: number };
  /** Common names of the client certificates presented (TLS only). */
  readonly clientNames: string[];
  close(): Promise<void>;
}

async function countingProxy(
  target: string,
  tls?: { key: Buffer; cert: Buffer; clientCa: Buffer },
): Promise<CountingProxy> {
  const targetPort = Number(new URL(target).port);
  const sockets = new Set<Socket>();
  const clientNames: string[] = [];
  let opened = 0;
  let closed = 0;
  const pipe = (client: Socket): void => {
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(upstream);
    client.pipe(upstream).pipe(client);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  };
  const proxy =
    tls === undefined
      ? createTcpServer(pipe)
      : createTlsServer(
          { key: tls.key, cert: tls.cert, ca: tls.clientCa, requestCert: true, rejectUnauthorized: true },
          (socket: TLSSocket) => {
            const subject = socket.getPeerCertificate().subject as { CN?: string } | undefined;
            clientNames.push(subject?.CN ?? '');
            pipe(socket);
          },
        );
  // 'connection' is the TCP accept, before any TLS handshake: one per connection the client opens
  proxy.on('connection', (socket: Socket) => {
    opened++;
    sockets.add(socket);
    socket.on('close', () => {
      closed++;
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const { port } = proxy.address() as AddressInfo;
  return {
    url: `${tls === undefined ? 'http' : 'https'}://127.0.0.1:${String(port)}`,
    counts: () => ({ opened, closed }),
    clientNames,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) =>
        proxy.close(() => {
          resolve();
        }),
      );
    },
  };
}

const until = waitFor;

describe('connections to the API server', () => {
  let proxy: CountingProxy;
  let client: ClientNodeKube;

  beforeEach(async () => {
    proxy = await countingProxy(server.url);
    client = connectKube({ url: proxy.url });
  });

  afterEach(async () => {
    client.close();
    await proxy.close();
  });

  it('sends calls one after another over one connection', async () => {
    for (let i = 0; i < 20; i++) await client.getNode('n1');
    await client.mergePatchNode('n1', { metadata: { labels: { a: 'b' } } });
    await client.listPods(undefined);
    expect(proxy.counts().opened).toBe(1);
  });

  it('opens one connection per call in flight at once, and reuses them afterwards', async () => {
    await Promise.all(Array.from({ length: 5 }, () => client.getNode('n1')));
    const afterBurst = proxy.counts().opened;
    expect(afterBurst).toBeGreaterThanOrEqual(1);
    expect(afterBurst).toBeLessThanOrEqual(5);
    for (let i = 0; i < 10; i++) await client.listNodes();
    await Promise.all(Array.from({ length: 5 }, () => client.getNode('n1')));
    expect(proxy.counts().opened).toBe(afterBurst);
  });

  it('streams a watch on its own connection while calls share another, and reuses them after the watch ends', async () => {
    const seen: string[] = [];
    const controller = new AbortController();
    const watching = client.watchDaemonSet(
      'kube-system',
      'kured',
      (e) => seen.push(`${e.type} ${e.object.metadata?.annotations?.step ?? '-'}`),
      { signal: controller.signal },
    );
    await until(() => server.requests.some((r) => r.query.watch === 'true'));
    for (let i = 0; i < 10; i++) await client.getNode('n1');
    await client.mergePatchDaemonSet('kube-system', 'kured', { metadata: { annotations: { step: '1' } } });
    await until(() => seen.includes('MODIFIED 1'));
    expect(seen).toContain('MODIFIED 1');
    expect(proxy.counts()).toEqual({ opened: 2, closed: 0 });
    controller.abort();
    await watching;
    await until(() => proxy.counts().closed === 1);
    expect(proxy.counts()).toEqual({ opened: 2, closed: 1 }); // the watch's connection, not the shared one
    for (let i = 0; i < 5; i++) await client.getNode('n1');
    expect(proxy.counts().opened).toBe(2);
  });

  it('is watched again after the server ends a watch, on the connections it has', async () => {
    const seen: string[] = [];
    for (let round = 1; round <= 2; round++) {
      const watching = client.watchDaemonSet('kube-system', 'kured', (e) => seen.push(e.type), {
        signal: new AbortController().signal,
      });
      await until(() => server.requests.filter((r) => r.query.watch === 'true').length === round);
      server.endWatches();
      await watching;
    }
    await client.getNode('n1');
    expect(server.requests.filter((r) => r.query.watch === 'true')).toHaveLength(2);
    expect(proxy.counts().opened).toBeLessThanOrEqual(2);
  });

  it('closes every connection on close(), and opens a new one for a later call', async () => {
    await Promise.all(Array.from({ length: 3 }, () => client.getNode('n1')));
    const opened = proxy.counts().opened;
    expect(proxy.counts().closed).toBe(0);
    client.close();
    await until(() => proxy.counts().closed === opened);
    expect(proxy.counts()).toEqual({ opened, closed: opened });
    await expect(client.getNode('n1')).resolves.toMatchObject({ metadata: { name: 'n1' } });
    expect(proxy.counts().opened).toBe(opened + 1);
  });

  it('keeps client-node refusing plain http without skipTLSVerify', async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: proxy.url, skipTLSVerify: false }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const strict = new ClientNodeKube(kc);
    await expect(strict.getNode('n1')).rejects.toThrow(/HTTP protocol is not allowed/);
    expect(proxy.counts().opened).toBe(0);
  });
});

describe('connections over TLS', () => {
  let dir: string;
  let pki: Record<'serverKey' | 'serverCert' | 'clientKey' | 'clientCert', Buffer>;

  /** A self-signed certificate for `cn` (and 127.0.0.1), made with the openssl command. */
  async function selfSigned(name: string, cn: string): Promise<{ key: Buffer; cert: Buffer }> {
    const key = join(dir, `${name}.key`);
    const cert = join(dir, `${name}.crt`);
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-days',
        '1',
        '-subj',
        `/CN=${cn}`,
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { stdio: 'ignore' },
    );
    return { key: await readFile(key), cert: await readFile(cert) };
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kured-ts-pki-'));
    const serverPair = await selfSigned('server', '127.0.0.1');
    const clientPair = await selfSigned('client', 'kured-ts-agent');
    pki = {
      serverKey: serverPair.key,
      serverCert: serverPair.cert,
      clientKey: clientPair.key,
      clientCert: clientPair.cert,
    };
  });

  afterAll(async () => {
    await rm(dir, { recursive: true });
  });

  /** A client that trusts `ca` and presents the client certificate, through a TLS proxy that asks for it. */
  async function tlsClient(ca: Buffer): Promise<{ proxy: CountingProxy; client: ClientNodeKube }> {
    const proxy = await countingProxy(server.url, {
      key: pki.serverKey,
      cert: pki.serverCert,
      clientCa: pki.clientCert,
    });
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: proxy.url, caData: ca.toString('base64') }],
      users: [
        { name: 'u', certData: pki.clientCert.toString('base64'), keyData: pki.clientKey.toString('base64') },
      ],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    return { proxy, client: new ClientNodeKube(kc) };
  }

  it("verifies the server against the kubeconfig's CA, presents the client certificate, and reuses the connection", async () => {
    const { proxy, client } = await tlsClient(pki.serverCert);
    try {
      for (let i = 0; i < 10; i++) await client.getNode('n1');
      const seen: string[] = [];
      const controller = new AbortController();
      const watching = client.watchDaemonSet('kube-system', 'kured', (e) => seen.push(e.type), {
        signal: controller.signal,
      });
      await client.mergePatchDaemonSet('kube-system', 'kured', { metadata: { annotations: { a: 'b' } } });
      await until(() => seen.includes('MODIFIED'));
      controller.abort();
      await watching;
      expect(seen).toContain('MODIFIED');
      expect(proxy.counts().opened).toBe(2); // the calls' and the watch's
      expect(proxy.clientNames).toEqual(['kured-ts-agent', 'kured-ts-agent']);
    } finally {
      client.close();
      await proxy.close();
    }
  });

  it('refuses a server its CA did not sign', async () => {
    const { proxy, client } = await tlsClient(pki.clientCert); // the wrong CA
    try {
      await expect(client.getNode('n1')).rejects.toThrow(/self-signed|certificate/i);
    } finally {
      client.close();
      await proxy.close();
    }
  });
});

describe('KeepAliveAgents', () => {
  it("says clearly when client-node's KubeConfig no longer has the createAgent it wraps", () => {
    const changed = Object.assign(Object.create(null) as object, {}) as KubeConfig;
    expect(() => installKeepAliveAgents(changed)).toThrow(/no createAgent to wrap .*client-node upgraded/);
  });

  const cluster = { name: 'c', server: 'https://api:6443', skipTLSVerify: false };

  /** Agents built by a stand-in for client-node's createAgent, with the options it was given. */
  function recording(): { agents: KeepAliveAgents; built: AgentOptions[] } {
    const built: AgentOptions[] = [];
    const agents = new KeepAliveAgents((_cluster, options) => {
      built.push(options);
      return { destroy: () => undefined } as unknown as Agent;
    });
    return { agents, built };
  }

  it('builds keep-alive agents that close idle connections, keeping a timeout client-node asked for, none through a socks proxy', () => {
    const { agents, built } = recording();
    agents.agentFor(cluster, { ca: Buffer.from('ca') });
    agents.agentFor(cluster, { ca: Buffer.from('ca'), timeout: 5_000 });
    agents.agentFor({ ...cluster, proxyUrl: 'socks5://proxy:1080' }, {});
    expect(built).toEqual([
      { ca: Buffer.from('ca'), keepAlive: true, timeout: IDLE_SOCKET_MS },
      { ca: Buffer.from('ca'), keepAlive: true, timeout: 5_000 },
      { keepAlive: true }, // socks-proxy-agent would end a quiet watch at the timeout
    ]);
  });

  it.each<[string, AgentOptions, AgentOptions, 'same' | 'new']>([
    [
      'the same CA and certificate re-read from files share an agent',
      { ca: Buffer.from('ca'), cert: Buffer.from('c1') },
      { ca: Buffer.from('ca'), cert: Buffer.from('c1') },
      'same',
    ],
    [
      'an absent option and an undefined one share an agent',
      { ca: Buffer.from('ca') },
      { ca: Buffer.from('ca'), pfx: undefined },
      'same',
    ],
    [
      'a new client certificate from an exec plugin gets a new agent',
      { cert: Buffer.from('c1'), key: 'k1' },
      { cert: Buffer.from('c2'), key: 'k2' },
      'new',
    ],
    ['another CA gets a new agent', { ca: Buffer.from('ca1') }, { ca: Buffer.from('ca2') }, 'new'],
    [
      'TLS verification switched off gets a new agent',
      { ca: Buffer.from('ca') },
      { ca: Buffer.from('ca'), rejectUnauthorized: false },
      'new',
    ],
    ['another server name gets a new agent', { servername: 'a' }, { servername: 'b' }, 'new'],
  ])('%s', (_name, first, second, expected) => {
    const { agents, built } = recording();
    const a = agents.agentFor(cluster, first);
    const b = agents.agentFor(cluster, second);
    expect(a === b ? 'same' : 'new').toBe(expected);
    expect(built).toHaveLength(expected === 'same' ? 1 : 2);
  });

  it('gives another cluster (server or proxy) a new agent', () => {
    const { agents } = recording();
    const a = agents.agentFor(cluster, {});
    expect(agents.agentFor({ ...cluster, server: 'https://other:6443' }, {})).not.toBe(a);
    expect(agents.agentFor({ ...cluster, proxyUrl: 'http://proxy:3128' }, {})).not.toBe(a);
    expect(agents.agentFor(cluster, {})).toBe(a);
  });

  it('keeps at most four agents, dropping the oldest', () => {
    const { agents, built } = recording();
    for (let i = 0; i < 6; i++) agents.agentFor(cluster, { cert: `c${String(i)}` });
    expect(agents.size).toBe(4);
    agents.agentFor(cluster, { cert: 'c5' });
    agents.agentFor(cluster, { cert: 'c0' });
    expect(built).toHaveLength(7);
  });
});
