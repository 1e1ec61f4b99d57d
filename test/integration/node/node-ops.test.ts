// KubeNodeOps through the real client-node against the fake API server: our writes touch only what
// we own, and no concurrent writer's change is ever lost (DESIGN §2.3).
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import type { V1Node, V1Pod } from '../../../src/kube/kube.js';
import { SystemClock } from '../../../src/clock/clock.js';
import { ClientNodeKube } from '../../../src/kube/client.js';
import type { Kube } from '../../../src/kube/kube.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { KubeNodeOps } from '../../../src/node/kube-node-ops.js';
import { STATUS_ANNOTATION, type NodeStatus } from '../../../src/node/status.js';
import { type FakeApiServer } from '../../../src/sim/fake-api-server.js';

const NODE = 'n1';
const TAINT = 'weave.works/kured-node-reboot';

let server: FakeApiServer;
let kube: ClientNodeKube;

beforeEach(async () => {
  server = await startClusterApiServer();
  kube = server.kubeInMemory();
  server.create<V1Node>('nodes', {
    metadata: { name: NODE, labels: { 'kubernetes.io/hostname': NODE } },
    spec: { taints: [{ key: 'user/dedicated', value: 'db', effect: 'NoSchedule' }] },
    status: { nodeInfo: { bootID: 'boot-1' } as never, conditions: [{ type: 'Ready', status: 'True' }] },
  });
});

afterEach(async () => {
  await server.close();
});

function ops(k: Kube = kube, attempts = 8): KubeNodeOps {
  return new KubeNodeOps({
    kube: k,
    nodeId: NODE,
    clock: new SystemClock(),
    log: new MemoryLogger(),
    attempts,
  });
}

function stored(): V1Node {
  return server.get<V1Node>('nodes', undefined, NODE)!;
}

function taintKeys(): string[] {
  return (stored().spec?.taints ?? []).map((t) => t.key);
}

/** Our requests (method path content-type), excluding GETs. */
function writes(): string[] {
  return server.requests
    .filter((r) => r.method !== 'GET')
    .map((r) => `${r.method} ${r.path} ${r.contentType ?? ''}`);
}

/** Wraps a Kube so that `between(n)` runs after our n-th request returns (n from 0), before our code sees it. */
function interleaved(inner: Kube, between: (n: number) => Promise<void>): Kube {
  let n = 0;
  return new Proxy(inner, {
    get(target, prop, receiver): unknown {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]): Promise<unknown> => {
        const result: unknown = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        await between(n++);
        return result;
      };
    },
  });
}

describe('KubeNodeOps', () => {
  it('cordons with a merge patch of spec.unschedulable only, and uncordons by removing it', async () => {
    await ops().write({ unschedulable: true });
    expect(stored().spec?.unschedulable).toBe(true);
    await ops().write({ unschedulable: false });
    expect(stored().spec?.unschedulable).toBeUndefined();
    expect(writes()).toEqual([
      `PATCH /api/v1/nodes/${NODE} application/merge-patch+json`,
      `PATCH /api/v1/nodes/${NODE} application/merge-patch+json`,
    ]);
    expect(taintKeys()).toEqual(['user/dedicated']);
  });

  it('adds its PreferNoSchedule taint once with a guarded JSON patch and keeps the others', async () => {
    await ops().addTaint(TAINT);
    await ops().addTaint(TAINT);
    expect(stored().spec?.taints).toEqual([
      { key: 'user/dedicated', value: 'db', effect: 'NoSchedule' },
      { key: TAINT, effect: 'PreferNoSchedule' },
    ]);
    expect(writes()).toEqual([`PATCH /api/v1/nodes/${NODE} application/json-patch+json`]);
  });

  it('adds the taint list when the node has none', async () => {
    const node = stored();
    delete node.spec!.taints;
    server.update('nodes', node);
    await ops().addTaint(TAINT);
    expect(stored().spec?.taints).toEqual([{ key: TAINT, effect: 'PreferNoSchedule' }]);
  });

  it('removes only its own taint, and does nothing when it is absent', async () => {
    await ops().removeTaint(TAINT);
    expect(writes()).toEqual([]);
    await ops().addTaint(TAINT);
    const node = stored();
    node.spec!.taints!.push({
      key: 'user/late',
      effect: 'NoExecute',
      timeAdded: '2026-01-05T10:00:00Z',
    });
    server.update('nodes', node);
    await ops().removeTaint(TAINT);
    expect(taintKeys()).toEqual(['user/dedicated', 'user/late']);
  });

  it('does not mistake a taint with our key but another effect for ours', async () => {
    const node = stored();
    node.spec!.taints!.push({ key: TAINT, effect: 'NoSchedule' });
    server.update('nodes', node);
    await ops().addTaint(TAINT);
    await ops().removeTaint(TAINT);
    expect(stored().spec?.taints).toContainEqual({ key: TAINT, effect: 'NoSchedule' });
    expect((stored().spec?.taints ?? []).filter((t) => t.key === TAINT)).toHaveLength(1);
  });

  it('writes labels and annotations as merge patches of its keys; null deletes', async () => {
    await ops().write({ labels: { 'kured-ts.dev/rebooting': 'true' } });
    await ops().write({ annotations: { 'kured-ts.dev/a': '1', 'kured-ts.dev/b': '2' } });
    await ops().write({ annotations: { 'kured-ts.dev/a': null } });
    const meta = stored().metadata!;
    expect(meta.labels).toEqual({ 'kubernetes.io/hostname': NODE, 'kured-ts.dev/rebooting': 'true' });
    expect(meta.annotations).toEqual({ 'kured-ts.dev/b': '2' });
    expect(new Set(writes())).toEqual(new Set([`PATCH /api/v1/nodes/${NODE} application/merge-patch+json`]));
  });

  it('writes the status annotation as its codec formats it, at every call (the agent decides to skip)', async () => {
    const status: NodeStatus = {
      phase: 'pending',
      reason: 'reboot required',
      since: '2026-01-05T10:00:00Z',
      bootID: 'boot-1',
    };
    await ops().setStatus(status);
    await ops().setStatus({
      ...status,
      phase: 'blocked',
      reason: 'alert firing',
      lastReboot: '2026-01-05T12:00:00Z',
    });
    expect(writes()).toHaveLength(2);
    expect(stored().metadata!.annotations![STATUS_ANNOTATION]).toBe(
      '{"phase":"blocked","reason":"alert firing","since":"2026-01-05T10:00:00Z","bootID":"boot-1","lastReboot":"2026-01-05T12:00:00Z"}',
    );
  });

  it('writes only while the node is still as read: a stale resourceVersion writes nothing and says so', async () => {
    const read = await ops().get();
    await server.kubeInMemory().mergePatchNode(NODE, {
      metadata: { labels: { other: 'x' } },
    });
    await expect(ops().write({ unschedulable: true }, read.resourceVersion)).resolves.toBeUndefined();
    expect(stored().spec?.unschedulable).toBeUndefined();
    const fresh = await ops().get();
    const written = await ops().write(
      { unschedulable: true, labels: { 'kured-ts.dev/rebooting': 'true' } },
      fresh.resourceVersion,
    );
    expect(written).toMatchObject({ unschedulable: true, labels: { 'kured-ts.dev/rebooting': 'true' } });
  });

  it('reads the node state', async () => {
    await expect(ops().get()).resolves.toMatchObject({
      name: NODE,
      unschedulable: false,
      bootID: 'boot-1',
      taints: [{ key: 'user/dedicated', value: 'db', effect: 'NoSchedule' }],
      conditions: [{ type: 'Ready', status: 'True' }],
      labels: { 'kubernetes.io/hostname': NODE },
    });
  });

  it('rides out a storm of 409s and 422s on taint writes, re-reading each time', async () => {
    server.injectFailure({ method: 'PATCH', pathIncludes: `/nodes/${NODE}` }, 409, 3);
    server.injectFailure({ method: 'PATCH', pathIncludes: `/nodes/${NODE}` }, 422, 3);
    await ops().addTaint(TAINT);
    expect(taintKeys()).toEqual(['user/dedicated', TAINT]);
    const patches = server.requests.filter((r) => r.method === 'PATCH');
    expect(patches.map((r) => r.status)).toEqual([409, 409, 409, 422, 422, 422, 200]);
    expect(server.requests.filter((r) => r.method === 'GET')).toHaveLength(7);
  });

  it('adds its taint once when the server commits the write and then answers 500 (the repeat fails its test)', async () => {
    server.injectFailure({ method: 'PATCH', pathIncludes: `/nodes/${NODE}` }, 500, 1, {
      mode: 'commit-then-fail',
    });
    await ops().addTaint(TAINT);
    expect(taintKeys()).toEqual(['user/dedicated', TAINT]);
    expect(server.requests.filter((r) => r.method === 'PATCH').map((r) => r.status)).toEqual([500, 422]);
  });

  it('gives up after the bounded attempts and says why', async () => {
    server.injectFailure({ method: 'PATCH', pathIncludes: `/nodes/${NODE}` }, 409, 100);
    await expect(ops(kube, 3).addTaint(TAINT)).rejects.toThrow(/cannot add taint .* on node n1/);
    expect(server.requests.filter((r) => r.method === 'PATCH')).toHaveLength(3);
  });

  it('tells whether the DaemonSet pods of this node are Ready', async () => {
    const pod = (name: string, node: string, ready: boolean, owner?: string): V1Pod => ({
      metadata: {
        name,
        namespace: 'kube-system',
        ...(owner === undefined
          ? {}
          : {
              ownerReferences: [
                { apiVersion: 'apps/v1', kind: owner, name: 'x', uid: 'u', controller: true },
              ],
            }),
      },
      spec: { nodeName: node, containers: [{ name: 'c', image: 'i' }] },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
    });
    server.create('pods', pod('ds-ready', NODE, true, 'DaemonSet'));
    server.create('pods', pod('rs-unready', NODE, false, 'ReplicaSet'));
    server.create('pods', pod('ds-elsewhere', 'n2', false, 'DaemonSet'));
    await expect(ops().daemonSetPodsReady()).resolves.toEqual({ ready: true, notReady: [] });
    server.create('pods', pod('ds-unready', NODE, false, 'DaemonSet'));
    await expect(ops().daemonSetPodsReady()).resolves.toEqual({
      ready: false,
      notReady: ['kube-system/ds-unready'],
    });
  });
});

describe('the seed scenario: another writer changes the same node while we taint and cordon', () => {
  /** What we do: taint, cordon, label, annotate. */
  async function ourSteps(o: KubeNodeOps): Promise<void> {
    await o.addTaint(TAINT);
    await o.write({ unschedulable: true });
    await o.write({ labels: { 'kured-ts.dev/pre': 'true' } });
    await o.write({ annotations: { 'kured-ts.dev/note': 'ours' } });
  }

  /** A foreign writer working from a copy read at the start (stale): patches that append or merge. */
  async function staleWrite(foreign: Kube, tag: string): Promise<void> {
    await foreign.jsonPatchNode(NODE, [
      { op: 'add', path: '/spec/taints/-', value: { key: `stale/${tag}`, effect: 'NoSchedule' } },
    ]);
    await foreign.mergePatchNode(NODE, {
      metadata: { labels: { [`stale-${tag}`]: 'x' }, annotations: { [`stale/${tag}`]: 'x' } },
    });
  }

  /** A foreign writer with a fresh copy: read-modify-write of the whole object in one atomic step. */
  function freshWrite(tag: string): void {
    const node = stored();
    node.spec!.taints = [...(node.spec!.taints ?? []), { key: `fresh/${tag}`, effect: 'NoExecute' }];
    node.metadata!.labels = { ...node.metadata!.labels, [`fresh-${tag}`]: 'y' };
    node.metadata!.annotations = { ...node.metadata!.annotations, [`fresh/${tag}`]: 'y' };
    server.update('nodes', node);
  }

  function expectEverythingSurvived(tags: string[]): void {
    const node = stored();
    const keys = (node.spec?.taints ?? []).map((t) => t.key);
    expect(keys).toEqual(
      expect.arrayContaining(['user/dedicated', TAINT, ...tags.flatMap((t) => [`stale/${t}`, `fresh/${t}`])]),
    );
    expect(keys.filter((k) => k === TAINT)).toHaveLength(1);
    expect(node.spec?.unschedulable).toBe(true);
    for (const t of tags) {
      expect(node.metadata?.labels).toMatchObject({
        [`stale-${t}`]: 'x',
        [`fresh-${t}`]: 'y',
        'kured-ts.dev/pre': 'true',
      });
      expect(node.metadata?.annotations).toMatchObject({
        [`stale/${t}`]: 'x',
        [`fresh/${t}`]: 'y',
        'kured-ts.dev/note': 'ours',
      });
    }
  }

  it('keeps every change when the other writer strikes after any one of our requests', async () => {
    // Count our requests once, then strike after each of them in turn (stale then fresh writer).
    let total = 0;
    await ourSteps(
      ops(
        interleaved(kube, () => {
          total++;
          return Promise.resolve();
        }),
      ),
    );
    expect(total).toBeGreaterThanOrEqual(5);
    for (let at = 0; at < total; at++) {
      await server.close();
      server = await startClusterApiServer();
      kube = server.kubeInMemory();
      server.create<V1Node>('nodes', {
        metadata: { name: NODE },
        spec: { taints: [{ key: 'user/dedicated', value: 'db', effect: 'NoSchedule' }] },
      });
      const foreign = server.kubeInMemory();
      const tags: string[] = [];
      await ourSteps(
        ops(
          interleaved(kube, async (n) => {
            if (n !== at && n !== at + 1) return;
            const tag = `s${at}-${n}`;
            tags.push(tag);
            await staleWrite(foreign, tag);
            freshWrite(tag);
          }),
        ),
      );
      expect(tags.length).toBeGreaterThan(0);
      expectEverythingSurvived(tags);
    }
  });

  it('keeps every change when the other writer strikes after each of our first six requests', async () => {
    const foreign = server.kubeInMemory();
    const tags: string[] = [];
    await ourSteps(
      ops(
        interleaved(kube, async (n) => {
          if (n >= 6) return;
          tags.push(`t${n}`);
          await staleWrite(foreign, `t${n}`);
          freshWrite(`t${n}`);
        }),
      ),
    );
    expect(tags).toHaveLength(6);
    expectEverythingSurvived(tags);
    // and our taint comes off again without touching theirs
    await ops().removeTaint(TAINT);
    expect(taintKeys()).not.toContain(TAINT);
    expect(taintKeys()).toEqual(expect.arrayContaining(tags.flatMap((t) => [`stale/${t}`, `fresh/${t}`])));
  });
});
