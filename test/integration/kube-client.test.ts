/* eslint-disable @typescript-eslint/no-unsafe-class-instance-assignment --
   client-node models are classes, yet its API sends them as plain JSON: object literals are how tests write Kubernetes objects. */
// ClientNodeKube: the Kube seam on client-node 1.4.0, against the fake API server.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1DaemonSet, V1Node, V1Pod, V1PodDisruptionBudget } from '@kubernetes/client-node';
import { ClientNodeKube, connectKube } from '../../src/kube/client.js';
import { isConflict, isInvalid, isNotFound, isTooManyRequests, statusBody } from '../../src/kube/errors.js';
import type { Kube, WatchEvent } from '../../src/kube/kube.js';
import { startFakeApiServer, type FakeApiServer } from '../../src/sim/fake-api-server.js';
import { kuredDaemonSet } from '../fakes/kube-objects.js';

let server: FakeApiServer;
let kube: Kube;

beforeEach(async () => {
  server = await startFakeApiServer();
  kube = connectKube({ url: server.url });
  server.create<V1Node>('nodes', { metadata: { name: 'n1', labels: { role: 'worker' } } });
  server.create('daemonsets', kuredDaemonSet());
});

afterEach(async () => {
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
    [
      'jsonPatchDaemonSet',
      'application/json-patch+json',
      (k: Kube) =>
        k.jsonPatchDaemonSet('kube-system', 'kured', [
          { op: 'add', path: '/metadata/annotations', value: { a: 'b' } },
        ]),
    ],
  ])('%s sends %s', async (_name, contentType, call) => {
    await call(kube);
    expect(lastRequest()).toMatchObject({ method: 'PATCH', contentType, status: 200 });
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
    const refused = await failure(kube.evictPod('default', 'web'));
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
    kube = new ClientNodeKube(server.kubeConfig());
    server.create<V1Pod>('pods', {
      metadata: { name: 'web', namespace: 'default' },
      spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'i' }] },
      status: { phase: 'Running' },
    });
    await kube.evictPod('default', 'web', 4);
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
    for (let i = 0; i < 100 && seen.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
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
      const path = join(dir, 'config');
      await writeFile(
        path,
        [
          'apiVersion: v1',
          'kind: Config',
          'clusters: [{name: c, cluster: {server: "' + server.url + '", insecure-skip-tls-verify: true}}]',
          'users: [{name: u, user: {}}]',
          'contexts: [{name: x, context: {cluster: c, user: u}}]',
          'current-context: x',
        ].join('\n'),
      );
      await expect(connectKube({ kubeconfig: path }).getNode('n1')).resolves.toMatchObject({
        metadata: { name: 'n1' },
      });
    } finally {
      await rm(dir, { recursive: true });
    }
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
    const started = Date.now();
    setTimeout(() => {
      controller.abort(new Error('agent stopping'));
    }, 100);
    await expect(connectKube({ url }).getNode('n1', controller.signal)).rejects.toThrow('agent stopping');
    expect(Date.now() - started).toBeLessThan(2_000);
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
