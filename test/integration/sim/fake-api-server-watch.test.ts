/* eslint-disable @typescript-eslint/no-unsafe-class-instance-assignment, @typescript-eslint/no-misused-spread --
   client-node models are classes, yet its API sends them as plain JSON: object literals are how tests write Kubernetes objects. */
// Watches of the fake API server through client-node's Watch, ListWatch and informers.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { FakeClock } from '../../fakes/fake-clock.js';
import {
  AppsV1Api,
  CoreV1Api,
  ListWatch,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  Watch,
  type V1DaemonSet,
  type V1Node,
} from '@kubernetes/client-node';
import {
  startFakeApiServer,
  type FakeApiServer,
  type RecordedRequest,
} from '../../../src/sim/fake-api-server.js';
import { realDelay } from '../../fakes/wait-for.js';

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

interface Seen {
  type: string;
  name: string;
  rv: string;
  code?: number;
  reason?: string;
}

/** Collects a Watch's events and knows when it ended. */
class Recorder {
  readonly events: Seen[] = [];
  ended: unknown = undefined;
  private done = false;
  controller: AbortController | undefined;

  static async start(server: FakeApiServer, path: string, query: Record<string, string>): Promise<Recorder> {
    const recorder = new Recorder();
    recorder.controller = await new Watch(server.kubeConfig()).watch(
      path,
      query,
      (
        type: string,
        obj: { metadata?: { name?: string; resourceVersion?: string }; code?: number; reason?: string },
      ) => {
        const seen: Seen = { type, name: obj.metadata?.name ?? '', rv: obj.metadata?.resourceVersion ?? '' };
        if (obj.code !== undefined) seen.code = obj.code;
        if (obj.reason !== undefined) seen.reason = obj.reason;
        recorder.events.push(seen);
      },
      (err: unknown) => {
        recorder.done = true;
        recorder.ended = err;
      },
    );
    return recorder;
  }

  get finished(): boolean {
    return this.done;
  }

  stop(): void {
    this.controller?.abort();
  }

  summary(): string[] {
    return this.events.map((e) => `${e.type} ${e.name}`);
  }
}

async function until(condition: () => boolean, what: string, ms = 5000): Promise<void> {
  // eslint-disable-next-line no-restricted-syntax -- real time: the events come over HTTP
  const deadline = Date.now() + ms;
  while (!condition()) {
    // eslint-disable-next-line no-restricted-syntax -- real time: the events come over HTTP
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await realDelay(5); // polls: the events come over HTTP
  }
}

let server: FakeApiServer;
let core: CoreV1Api;
/** Times the server's watch timeouts: moves only when a test advances it. */
let watchClock: FakeClock;
const recorders: Recorder[] = [];

async function watch(path: string, query: Record<string, string>): Promise<Recorder> {
  const recorder = await Recorder.start(server, path, query);
  recorders.push(recorder);
  return recorder;
}

beforeEach(async () => {
  watchClock = new FakeClock('2026-01-05T10:00:00Z');
  server = await startFakeApiServer({ historyLimit: 20, watchClock });
  core = server.kubeConfig().makeApiClient(CoreV1Api);
});

afterEach(async () => {
  for (const r of recorders.splice(0)) r.stop();
  await server.close();
});

function node(name: string, labels: Record<string, string> = {}): V1Node {
  return { metadata: { name, labels } };
}

describe('watch', () => {
  it('streams ADDED, MODIFIED and DELETED in order from a given resourceVersion', async () => {
    const before = await core.createNode({ body: node('n0') });
    const from = before.metadata?.resourceVersion ?? '';
    const w = await watch('/api/v1/nodes', { resourceVersion: from });
    const created = await core.createNode({ body: node('n1') });
    const patched = await core.patchNode({ name: 'n1', body: { spec: { unschedulable: true } } }, merge);
    await core.deleteNode({ name: 'n1' });
    await until(() => w.events.length === 3, 'three events');
    expect(w.summary()).toEqual(['ADDED n1', 'MODIFIED n1', 'DELETED n1']);
    const rvs = w.events.map((e) => Number(e.rv));
    expect(rvs[0]).toBe(Number(created.metadata?.resourceVersion));
    expect(rvs[1]).toBe(Number(patched.metadata?.resourceVersion));
    expect(rvs[2]).toBeGreaterThan(rvs[1]!);
  });

  it('replays changes made after the resourceVersion but before the watch started', async () => {
    const first = await core.createNode({ body: node('n1') });
    await core.patchNode({ name: 'n1', body: { metadata: { labels: { a: 'b' } } } }, merge);
    await core.createNode({ body: node('n2') });
    const w = await watch('/api/v1/nodes', { resourceVersion: first.metadata?.resourceVersion ?? '' });
    await until(() => w.events.length === 2, 'the replay');
    expect(w.summary()).toEqual(['MODIFIED n1', 'ADDED n2']);
  });

  it.each([
    ['without a resourceVersion', {}],
    ['from resourceVersion 0', { resourceVersion: '0' }],
  ])(
    'starts %s with synthetic ADDED events for what exists',
    async (_name, query: Record<string, string>) => {
      await core.createNode({ body: node('n1') });
      await core.createNode({ body: node('n2') });
      const w = await watch('/api/v1/nodes', query);
      await until(() => w.events.length === 2, 'the initial state');
      await core.createNode({ body: node('n3') });
      await until(() => w.events.length === 3, 'the live event');
      expect(w.summary()).toEqual(['ADDED n1', 'ADDED n2', 'ADDED n3']);
    },
  );

  it('answers a resourceVersion older than its history with a 410 Expired ERROR event and ends the stream', async () => {
    const old = await core.createNode({ body: node('n1') });
    for (let i = 0; i < 25; i++)
      await core.patchNode({ name: 'n1', body: { metadata: { labels: { i: String(i) } } } }, merge);
    const w = await watch('/api/v1/nodes', { resourceVersion: old.metadata?.resourceVersion ?? '' });
    await until(() => w.finished, 'the stream to end');
    expect(w.events).toEqual([expect.objectContaining({ type: 'ERROR', code: 410, reason: 'Expired' })]);
  });

  it('resumes from the oldest version its history still covers, and no older', async () => {
    const small = await startFakeApiServer({ historyLimit: 5 });
    const client = small.kubeConfig().makeApiClient(CoreV1Api);
    const versions: string[] = [];
    try {
      for (let i = 0; i < 23; i++) {
        versions.push(
          (await client.createNode({ body: node(`n${String(i)}`) })).metadata?.resourceVersion ?? '',
        );
      }
      // the last five changes (n18 to n22) are kept: a watch from the version of n17 sees all of them
      const ok = await Recorder.start(small, '/api/v1/nodes', { resourceVersion: versions[17]! });
      recorders.push(ok);
      await until(() => ok.events.length === 5, 'five replayed events');
      expect(ok.summary()).toEqual(['ADDED n18', 'ADDED n19', 'ADDED n20', 'ADDED n21', 'ADDED n22']);
      const gone = await Recorder.start(small, '/api/v1/nodes', { resourceVersion: versions[16]! });
      recorders.push(gone);
      await until(() => gone.finished, 'the refusal');
      expect(gone.events).toEqual([expect.objectContaining({ type: 'ERROR', code: 410 })]);
    } finally {
      for (const r of recorders.splice(0)) r.stop();
      await small.close();
    }
  });

  it('filters by label selector: objects entering the selection are ADDED, leaving it DELETED', async () => {
    await core.createNode({ body: node('n1', { pool: 'a' }) });
    const n2 = await core.createNode({ body: node('n2', { pool: 'b' }) });
    const w = await watch('/api/v1/nodes', {
      resourceVersion: n2.metadata?.resourceVersion ?? '',
      labelSelector: 'pool=a',
    });
    await core.patchNode({ name: 'n2', body: { metadata: { labels: { pool: 'a' } } } }, merge);
    await core.patchNode({ name: 'n2', body: { spec: { unschedulable: true } } }, merge);
    await core.patchNode({ name: 'n1', body: { metadata: { labels: { pool: 'c' } } } }, merge);
    await core.patchNode({ name: 'n1', body: { spec: { unschedulable: true } } }, merge);
    await until(() => w.events.length === 3, 'three events');
    expect(w.summary()).toEqual(['ADDED n2', 'MODIFIED n2', 'DELETED n1']);
  });

  it('filters by field selector spec.nodeName across namespaces', async () => {
    const w = await watch('/api/v1/pods', { resourceVersion: '0', fieldSelector: 'spec.nodeName=n1' });
    for (const [ns, name, nodeName] of [
      ['a', 'p1', 'n1'],
      ['b', 'p2', 'n2'],
      ['c', 'p3', 'n1'],
    ] as const) {
      await core.createNamespacedPod({
        namespace: ns,
        body: { metadata: { name }, spec: { nodeName, containers: [] } },
      });
    }
    await until(() => w.events.length === 2, 'two events');
    expect(w.summary()).toEqual(['ADDED p1', 'ADDED p3']);
  });

  it('watches one DaemonSet by metadata.name in its namespace, as the lock does', async () => {
    const apps = server.kubeConfig().makeApiClient(AppsV1Api);
    const ds: V1DaemonSet = { metadata: { name: 'kured' }, spec: { selector: {}, template: {} } };
    const created = await apps.createNamespacedDaemonSet({ namespace: 'kube-system', body: ds });
    await apps.createNamespacedDaemonSet({ namespace: 'other', body: ds });
    await apps.createNamespacedDaemonSet({
      namespace: 'kube-system',
      body: { ...ds, metadata: { name: 'other' } },
    });
    const w = await watch('/apis/apps/v1/namespaces/kube-system/daemonsets', {
      resourceVersion: created.metadata?.resourceVersion ?? '',
      fieldSelector: 'metadata.name=kured',
    });
    let last = '';
    for (const ns of ['other', 'kube-system']) {
      const patched = await apps.patchNamespacedDaemonSet(
        { name: 'kured', namespace: ns, body: { metadata: { annotations: { lock: ns } } } },
        merge,
      );
      last = patched.metadata?.resourceVersion ?? '';
    }
    // Events arrive in order: once the last write's is here, any wrongly sent one would be too.
    await until(() => w.events.some((e) => e.rv === last), 'the last write');
    expect(w.summary()).toEqual(['MODIFIED kured']);
  });

  it.each([
    ['watch=1 on the collection', '/api/v1/nodes', { watch: '1' }, ['ADDED n2', 'MODIFIED n1']],
    ["watch=true on one object's path", '/api/v1/nodes/n1', {}, ['MODIFIED n1']],
  ])('accepts %s', async (_name, path, extra: Record<string, string>, want) => {
    const created = await core.createNode({ body: node('n1') });
    await core.createNode({ body: node('n2') });
    const w = await watch(path, { resourceVersion: created.metadata?.resourceVersion ?? '', ...extra });
    await core.patchNode({ name: 'n1', body: { spec: { unschedulable: true } } }, merge);
    await until(() => w.summary().includes('MODIFIED n1'), 'the change');
    expect(w.summary()).toEqual(want);
    expect(server.requests.find((r) => r.path === path && r.method === 'GET')?.query.watch).toBe(
      extra.watch ?? 'true',
    );
  });

  it('ends the stream after timeoutSeconds', async () => {
    const w = await watch('/api/v1/nodes', { timeoutSeconds: '10' });
    await until(() => watchClock.pending === 1, 'the stream is timed');
    await watchClock.advance(9_999);
    await core.createNode({ body: node('n1') }); // the stream is still open: it carries this
    await until(() => w.summary().includes('ADDED n1'), 'the event');
    expect(w.finished).toBe(false);
    await watchClock.advance(1);
    await until(() => w.finished, 'the end of the stream');
    expect(w.ended).toBeNull();
  });

  it('sends the same events for in-process writes', async () => {
    const w = await watch('/api/v1/nodes', { resourceVersion: '0' });
    server.create('nodes', node('n1'));
    server.update('nodes', { ...node('n1'), spec: { unschedulable: true } });
    server.delete('nodes', undefined, 'n1');
    await until(() => w.events.length === 3, 'three events');
    expect(w.summary()).toEqual(['ADDED n1', 'MODIFIED n1', 'DELETED n1']);
  });

  it('ends open watches when the server closes', async () => {
    const other = await startFakeApiServer();
    const w = await Recorder.start(other, '/api/v1/nodes', {});
    await other.close();
    await until(() => w.finished, 'the stream to end');
    expect(w.finished).toBe(true);
  });

  it('answers 400 for a malformed resourceVersion', async () => {
    const w = await watch('/api/v1/nodes', { resourceVersion: 'abc' });
    await until(() => w.finished, 'the refusal');
    expect((w.ended as { statusCode?: number }).statusCode).toBe(400);
  });
});

describe('ListWatch and informers', () => {
  it('keeps a makeInformer cache in step with adds, updates and deletes', async () => {
    await core.createNode({ body: node('n1') });
    const informer = makeInformer<V1Node>(server.kubeConfig(), '/api/v1/nodes', () => core.listNode());
    const log: string[] = [];
    let lastWrite = '';
    server.onWrite((e) => (lastWrite = e.object.metadata?.resourceVersion ?? ''));
    informer.on('add', (n: V1Node) => log.push(`add ${n.metadata?.name ?? ''}`));
    informer.on('update', (n: V1Node) => log.push(`update ${n.metadata?.name ?? ''}`));
    informer.on('delete', (n: V1Node) => log.push(`delete ${n.metadata?.name ?? ''}`));
    await informer.start();
    try {
      await until(() => log.length === 1, 'the initial list');
      await core.createNode({ body: node('n2') });
      await core.patchNode({ name: 'n1', body: { spec: { unschedulable: true } } }, merge);
      await core.deleteNode({ name: 'n2' });
      await until(() => log.length === 4, 'three more events');
      expect(log).toEqual(['add n1', 'add n2', 'update n1', 'delete n2']);
      expect(informer.list().map((n) => [n.metadata?.name, n.spec?.unschedulable])).toEqual([['n1', true]]);
      expect((informer as unknown as ListWatch<V1Node>).latestResourceVersion()).toBe(lastWrite);
    } finally {
      await informer.stop();
    }
  });

  it('re-lists when restarted from a resourceVersion that has expired, and recovers the current state', async () => {
    const first = (await core.createNode({ body: node('n1') })).metadata?.resourceVersion;
    let lists = 0;
    const listWatch = new ListWatch<V1Node>(
      '/api/v1/nodes',
      new Watch(server.kubeConfig()),
      () => {
        lists++;
        return core.listNode();
      },
      false,
    );
    const errors: unknown[] = [];
    listWatch.on('error', (err: unknown) => errors.push(err));
    await listWatch.start();
    try {
      await until(() => listWatch.list().length === 1, 'the first list');
      // the API server restarts and refuses the re-watch; meanwhile more changes than it keeps happen
      server.injectFailure({ method: 'GET', pathIncludes: 'watch=true' }, 500, 1);
      server.endWatches();
      await until(() => errors.length === 1, 'the refused re-watch');
      for (let i = 0; i < 25; i++) server.update('nodes', node('n1', { i: String(i) }));
      const latest = server.create('nodes', node('n2')).metadata?.resourceVersion;
      // the informer's owner restarts it from its old resourceVersion: 410, then a fresh list
      await listWatch.start();
      await until(() => listWatch.list().length === 2, 'n2 in the cache');
      expect(listWatch.get('n1')?.metadata?.labels?.i).toBe('24');
      expect(lists).toBe(2);
      expect((errors[0] as { statusCode?: number }).statusCode).toBe(500);
      // list, watch, refused re-watch, watch from the stale version (410 event), list, watch
      const watches = (): RecordedRequest[] => server.requests.filter((r) => r.query.watch === 'true');
      await until(() => watches().length === 4, 'the watch after the re-list');
      expect(watches().map((r) => [r.status, r.query.resourceVersion])).toEqual([
        [200, first],
        [500, first],
        [200, first],
        [200, latest],
      ]);
    } finally {
      await listWatch.stop();
    }
  });
});
