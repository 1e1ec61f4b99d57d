// Per-pod drain rules and --drain-fallback delete (issues 30, 33): KubeDrainer through the real
// client-node against the fake API server, where the world misbehaves: evicted pods take their time
// to go, a budget never allows, a pod never completes, a label carries a typo. Orders are read from
// the server's own log of requests and writes, not from ours.
import { afterEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { waitFor } from '../../fakes/wait-for.js';
import type { Kube, V1Pod, V1PodDisruptionBudget } from '../../../src/kube/kube.js';
import { ClientNodeKube } from '../../../src/kube/client.js';
import { KubeDrainer, type KubeDrainerOptions } from '../../../src/drain/kube-drainer.js';
import { parseDrainRules } from '../../../src/config/drain-rules.js';
import type { FakeApiServer, FakeApiServerOptions } from '../../../src/sim/fake-api-server.js';
import { testDrainer } from '../../fakes/drainer.js';

const NODE = 'n1';
let server: FakeApiServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(
  options: FakeApiServerOptions = {},
): Promise<{ s: FakeApiServer; kube: ClientNodeKube }> {
  server = await startClusterApiServer(options);
  return { s: server, kube: server.kubeInMemory() };
}

function pod(name: string, labels: Record<string, string> = {}, namespace = 'default', grace = 0): V1Pod {
  return {
    metadata: { name, namespace, labels: { app: name, ...labels } },
    spec: {
      nodeName: NODE,
      containers: [{ name: 'c', image: 'busybox' }],
      terminationGracePeriodSeconds: grace,
    },
    status: { phase: 'Running' },
  };
}

function drainer(kube: Kube, o: Partial<KubeDrainerOptions> = {}): KubeDrainer {
  return testDrainer(kube, NODE, o);
}

/** The pods named in eviction requests the server received, in order of arrival. */
function evictions(s: FakeApiServer): string[] {
  return s.requests
    .filter((r) => r.method === 'POST' && r.path.endsWith('/eviction'))
    .map((r) => /\/pods\/([^/]+)\/eviction$/.exec(r.path)?.[1] ?? '');
}

function deletions(s: FakeApiServer): string[] {
  return s.requests
    .filter((r) => r.method === 'DELETE' && r.path.includes('/pods/'))
    .map((r) => r.path.split('/').pop() ?? '');
}

function present(s: FakeApiServer): string[] {
  return s
    .list<V1Pod>('pods')
    .map((p) => p.metadata?.name ?? '')
    .sort();
}

const NEVER: V1PodDisruptionBudget = {
  metadata: { name: 'db', namespace: 'default' },
  spec: { minAvailable: 1, selector: { matchLabels: { app: 'db' } } },
};

describe('drain order', () => {
  it('evicts an order-10 storage pod only once every order-0 pod of its node is gone', async () => {
    // graceful deletion: an evicted pod stays (terminating) until its "kubelet" removes it
    const { s, kube } = await start({ podDeletion: 'graceful' });
    s.create('pods', pod('web-a', {}, 'default', 30));
    s.create('pods', pod('web-b', {}, 'default', 30));
    s.create('pods', pod('osd-0', { 'kured-ts.dev/drain-order': '10' }, 'rook-ceph', 30));
    // the server's own record of what happened, in order
    const log: string[] = [];
    const kubelet = new Set(['osd-0']);
    s.onWrite((e) => {
      const meta = e.object.metadata as { name?: string; namespace?: string; deletionTimestamp?: string };
      if (e.resource !== 'pods') return;
      if (e.type === 'DELETED') log.push(`gone ${meta.name ?? ''}`);
      else if (e.type === 'MODIFIED' && meta.deletionTimestamp !== undefined) {
        log.push(`evicted ${meta.name ?? ''}`);
        if (kubelet.has(meta.name ?? ''))
          setImmediate(() => {
            s.delete('pods', meta.namespace, meta.name ?? '');
          });
      }
    });
    const drained = drainer(kube).drain();
    await waitFor(() => evictions(s).length === 2, 'both order-0 pods are evicted');
    // the drain looks twice more while they terminate: it still leaves the storage pod alone
    const lists = (): number =>
      s.requests.filter((r) => r.method === 'GET' && r.path === '/api/v1/pods').length;
    const seen = lists();
    await waitFor(() => lists() >= seen + 2, 'the drain polls the node twice more');
    expect(evictions(s)).toEqual(['web-a', 'web-b']);
    s.delete('pods', 'default', 'web-a');
    s.delete('pods', 'default', 'web-b');
    const result = await drained;
    expect(result).toMatchObject({
      ok: true,
      evicted: ['default/web-a', 'default/web-b', 'rook-ceph/osd-0'],
    });
    expect(evictions(s)).toEqual(['web-a', 'web-b', 'osd-0']);
    expect(log).toEqual([
      'evicted web-a',
      'evicted web-b',
      'gone web-a',
      'gone web-b',
      'evicted osd-0',
      'gone osd-0',
    ]);
  });

  it('takes the order from --drain-rules for a pod it cannot label, and the pod’s own label over the file', async () => {
    const { s, kube } = await start();
    s.create('pods', pod('osd-0', { role: 'osd' }, 'rook-ceph'));
    s.create('pods', pod('osd-1', { role: 'osd', 'kured-ts.dev/drain-order': '1' }, 'rook-ceph'));
    s.create('pods', pod('web'));
    const rules = parseDrainRules('- namespace: rook-ceph\n  selector: role=osd\n  order: 10\n');
    const result = await drainer(kube, { rules, parallelism: 1 }).drain();
    expect(result.ok).toBe(true);
    expect(evictions(s)).toEqual(['web', 'osd-1', 'osd-0']);
  });
});

describe('drain modes', () => {
  it('never evicts a skip pod (ours or Cluster API’s label, or a rule) nor waits for it, and drains the rest', async () => {
    const { s, kube } = await start();
    s.create('pods', pod('node-agent', { 'kured-ts.dev/drain': 'skip' }));
    s.create('pods', pod('capi-agent', { 'cluster.x-k8s.io/drain': 'skip' }));
    s.create('pods', pod('vendor-agent', {}, 'vendor'));
    s.create('pods', pod('web'));
    const rules = parseDrainRules('- namespace: vendor\n  drain: skip\n');
    const result = await drainer(kube, { rules }).drain();
    expect(result).toMatchObject({ ok: true, evicted: ['default/web'], pending: [] });
    expect(result.skipped).toEqual(
      expect.arrayContaining([
        { pod: 'default/node-agent', reason: 'label kured-ts.dev/drain=skip', rule: true },
        { pod: 'default/capi-agent', reason: 'label cluster.x-k8s.io/drain=skip', rule: true },
        { pod: 'vendor/vendor-agent', reason: '--drain-rules entry 1 (namespace vendor)', rule: true },
      ]),
    );
    expect(evictions(s)).toEqual(['web']);
    expect(present(s)).toEqual(['capi-agent', 'node-agent', 'vendor-agent']);
  });

  it('waits for a wait-completed pod until it completes, never evicting it', async () => {
    const { s, kube } = await start();
    s.create('pods', pod('batch', { 'kured-ts.dev/drain': 'wait-completed' }));
    const drained = drainer(kube).drain();
    const lists = (): number =>
      s.requests.filter((r) => r.method === 'GET' && r.path === '/api/v1/pods').length;
    await waitFor(() => lists() >= 3, 'the drain has looked at the pod a few times');
    const batch = s.get<V1Pod>('pods', 'default', 'batch')!;
    s.update('pods', { ...batch, status: { phase: 'Succeeded' } });
    const result = await drained;
    expect(result).toMatchObject({ ok: true, evicted: [], waited: ['default/batch'] });
    expect(evictions(s)).toEqual([]);
    expect(present(s)).toEqual(['batch']);
  });

  it('fails at --drain-timeout while a wait-completed pod never completes, and never evicts it', async () => {
    const { s, kube } = await start();
    s.create('pods', pod('batch', { 'cluster.x-k8s.io/drain': 'wait-completed' }));
    s.create('pods', pod('web'));
    const result = await drainer(kube, { timeoutMs: 300 }).drain();
    expect(result).toMatchObject({
      ok: false,
      evicted: ['default/web'],
      pending: [
        { pod: 'default/batch', reason: 'not completed at --drain-timeout (drain rule wait-completed)' },
      ],
    });
    expect(evictions(s)).toEqual(['web']);
    expect(present(s)).toEqual(['batch']);
  });

  it.each([
    ['a typo in skip', { 'kured-ts.dev/drain': 'skpi' }, 'label kured-ts.dev/drain="skpi"'],
    [
      'an order that is no number',
      { 'kured-ts.dev/drain-order': 'ten' },
      'label kured-ts.dev/drain-order="ten"',
    ],
  ])(
    'fails the drain before any eviction when a pod carries a drain label it does not understand (%s)',
    async (_what, labels, named) => {
      const { s, kube } = await start();
      s.create('pods', pod('osd-0', labels, 'rook-ceph'));
      s.create('pods', pod('web'));
      const result = await drainer(kube).drain();
      expect(result.ok).toBe(false);
      expect(result.stopped).toContain('rook-ceph/osd-0');
      expect(result.stopped).toContain(named);
      expect(result.pending).toEqual([expect.objectContaining({ pod: 'rook-ceph/osd-0' })]);
      expect(evictions(s)).toEqual([]);
    },
  );
});

describe('--drain-fallback', () => {
  it('delete: deletes a pod whose eviction a budget refuses until --drain-timeout, and names it', async () => {
    const { s, kube } = await start();
    s.create('pods', pod('db-0'));
    s.create('pods', pod('keep', { 'kured-ts.dev/drain': 'skip' }));
    s.create('pods', pod('batch', { 'kured-ts.dev/drain': 'wait-completed', app: 'db' }));
    s.create('poddisruptionbudgets', {
      ...NEVER,
      spec: { ...NEVER.spec, selector: { matchLabels: { app: 'db-0' } } },
    });
    const batch = s.get<V1Pod>('pods', 'default', 'batch')!;
    s.update('pods', { ...batch, status: { phase: 'Succeeded' } });
    const result = await drainer(kube, { timeoutMs: 300, fallback: 'delete' }).drain();
    expect(result).toMatchObject({ ok: true, deleted: ['default/db-0'], evicted: ['default/db-0'] });
    expect(evictions(s).every((name) => name === 'db-0')).toBe(true);
    expect(deletions(s)).toEqual(['db-0']);
    expect(present(s)).toEqual(['batch', 'keep']);
  });

  it('delete: deletes nothing that still answered 429 before the deadline, nor a pod recreated under the name', async () => {
    const { s, kube } = await start();
    s.create('pods', pod('db-0'));
    s.create('poddisruptionbudgets', {
      ...NEVER,
      spec: { ...NEVER.spec, selector: { matchLabels: { app: 'db-0' } } },
    });
    const drained = drainer(kube, { timeoutMs: 400, fallback: 'delete' }).drain();
    await waitFor(() => evictions(s).length >= 2, 'the eviction is refused twice');
    expect(deletions(s)).toEqual([]);
    // a StatefulSet recreates db-0 under the same name meanwhile: another pod (another UID)
    s.delete('pods', 'default', 'db-0');
    s.create('pods', pod('db-0'));
    const result = await drained;
    expect(present(s)).toEqual(['db-0']);
    expect(result.deleted).toEqual([]);
  });

  it('none (the default): never deletes a pod; the drain fails at --drain-timeout naming the budget', async () => {
    const { s, kube } = await start();
    s.create('pods', pod('db-0'));
    s.create('poddisruptionbudgets', {
      ...NEVER,
      spec: { ...NEVER.spec, selector: { matchLabels: { app: 'db-0' } } },
    });
    const result = await drainer(kube, { timeoutMs: 300 }).drain();
    expect(result).toMatchObject({
      ok: false,
      deleted: [],
      pending: [expect.objectContaining({ pod: 'default/db-0', pdb: 'default/db' })],
    });
    expect(evictions(s).length).toBeGreaterThanOrEqual(2);
    expect(deletions(s)).toEqual([]);
    expect(present(s)).toEqual(['db-0']);
  });
});
