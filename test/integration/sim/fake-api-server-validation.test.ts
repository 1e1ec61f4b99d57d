/* eslint-disable @typescript-eslint/no-unsafe-class-instance-assignment --
   client-node models are classes, yet its API sends them as plain JSON: object literals are how tests write Kubernetes objects. */
// The fake API server driven through the real @kubernetes/client-node, against what the Kubernetes
// API conventions say kube-apiserver does: what kube-apiserver refuses, and the optional node lifecycle controller.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { startFakeApiServer, type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { failure } from '../../fakes/api-failure.js';
import { merge, node, useFakeApi } from '../../fakes/fake-api-fixtures.js';

const api = useFakeApi();

describe('validation, as kube-apiserver refuses what it cannot store', () => {
  beforeEach(() => {
    // in process: a Node created over HTTP would also get kube's not-ready taint
    api.server.create<V1Node>('nodes', {
      metadata: { name: 'n1' },
      spec: { taints: [{ key: 'kured', effect: 'PreferNoSchedule' }] },
    });
  });

  it('adds node.kubernetes.io/not-ready to a Node created through the API, as TaintNodesByCondition does', async () => {
    const created = await api.core.createNode({
      body: { metadata: { name: 'n9' }, spec: { taints: [{ key: 'user', effect: 'NoExecute' }] } },
    });
    expect(created.spec?.taints?.map((t) => `${t.key}:${t.effect}`)).toEqual([
      'user:NoExecute',
      'node.kubernetes.io/not-ready:NoSchedule',
    ]);
  });

  it('refuses a duplicate taint added by a JSON patch with 422 Invalid naming the field', async () => {
    const status = await failure(
      api.core.patchNode({
        name: 'n1',
        body: [{ op: 'add', path: '/spec/taints/-', value: { key: 'kured', effect: 'PreferNoSchedule' } }],
      }),
    );
    expect(status).toMatchObject({
      kind: 'Status',
      code: 422,
      reason: 'Invalid',
      details: {
        name: 'n1',
        kind: 'Node',
        causes: [{ reason: 'FieldValueDuplicate', field: 'spec.taints[1]' }],
      },
    });
    expect(api.server.get<V1Node>('nodes', undefined, 'n1')?.spec?.taints).toHaveLength(1);
  });

  it('accepts the same key with another effect', async () => {
    const patched = await api.core.patchNode({
      name: 'n1',
      body: [{ op: 'add', path: '/spec/taints/-', value: { key: 'kured', effect: 'NoSchedule' } }],
    });
    expect(patched.spec?.taints).toHaveLength(2);
  });

  const cases: [string, object, string][] = [
    [
      'a label value with colons',
      { metadata: { labels: { since: '2026-01-05T10:00:00Z' } } },
      'metadata.labels',
    ],
    [
      'a label value longer than 63 characters',
      { metadata: { labels: { a: 'x'.repeat(64) } } },
      'metadata.labels',
    ],
    ['a label key with two slashes', { metadata: { labels: { 'a/b/c': 'x' } } }, 'metadata.labels'],
    ['an annotation key with a space', { metadata: { annotations: { 'a b': 'x' } } }, 'metadata.annotations'],
    [
      'an unknown taint effect',
      { spec: { taints: [{ key: 'k', effect: 'Sometimes' }] } },
      'spec.taints[0].effect',
    ],
    ['a taint without a key', { spec: { taints: [{ effect: 'NoSchedule' }] } }, 'spec.taints[0].key'],
  ];
  it.each(cases)('refuses %s with 422 Invalid', async (_name, body, field) => {
    const status = await failure(api.core.patchNode({ name: 'n1', body }, merge));
    expect(status).toMatchObject({ code: 422, reason: 'Invalid' });
    expect(status.details?.causes?.map((c) => (c as { field?: string }).field)).toContain(field);
  });

  it('refuses an object name that is not a DNS subdomain', async () => {
    const status = await failure(api.core.createNode({ body: node('Node_1') }));
    expect(status).toMatchObject({ code: 422, reason: 'Invalid', details: { name: 'Node_1', kind: 'Node' } });
  });

  it('validates in-process writes too', () => {
    expect(() => api.server.create('nodes', node('n2', { since: '10:00' }))).toThrow(/is invalid/);
  });
});

describe('node lifecycle controller (opt-in)', () => {
  let controlled: FakeApiServer;
  let client: CoreV1Api;
  const taintsOf = (n: V1Node | undefined): string[] =>
    (n?.spec?.taints ?? []).map((t) => `${t.key}:${t.effect}`);

  beforeEach(async () => {
    controlled = await startFakeApiServer({ nodeController: true });
    client = controlled.kubeConfig().makeApiClient(CoreV1Api);
    controlled.create<V1Node>('nodes', {
      metadata: { name: 'n1' },
      spec: { taints: [{ key: 'user', effect: 'NoExecute' }] },
    });
  });

  afterEach(async () => {
    await controlled.close();
  });

  it('adds node.kubernetes.io/unschedulable after a cordon and removes it after the uncordon, in writes of its own', async () => {
    const writes: string[] = [];
    controlled.onWrite((e) => writes.push(taintsOf(e.object as V1Node).join(',')));
    const cordoned = await client.patchNode({ name: 'n1', body: { spec: { unschedulable: true } } }, merge);
    expect(taintsOf(cordoned)).toEqual(['user:NoExecute']);
    expect(taintsOf(controlled.get<V1Node>('nodes', undefined, 'n1'))).toEqual([
      'user:NoExecute',
      'node.kubernetes.io/unschedulable:NoSchedule',
    ]);
    await client.patchNode({ name: 'n1', body: { spec: { unschedulable: null } } }, merge);
    expect(taintsOf(controlled.get<V1Node>('nodes', undefined, 'n1'))).toEqual(['user:NoExecute']);
    expect(writes).toEqual([
      'user:NoExecute',
      'user:NoExecute,node.kubernetes.io/unschedulable:NoSchedule',
      'user:NoExecute,node.kubernetes.io/unschedulable:NoSchedule',
      'user:NoExecute',
    ]);
  });

  it('makes a taint patch guarded by a test of a list read before the cordon fail with 422', async () => {
    const before = await client.readNode({ name: 'n1' });
    await client.patchNode({ name: 'n1', body: { spec: { unschedulable: true } } }, merge);
    const status = await failure(
      client.patchNode({
        name: 'n1',
        body: [
          { op: 'test', path: '/spec/taints', value: before.spec?.taints },
          { op: 'add', path: '/spec/taints/-', value: { key: 'kured', effect: 'PreferNoSchedule' } },
        ],
      }),
    );
    expect(status).toMatchObject({ code: 422, reason: 'Invalid' });
  });

  it.each([
    ['False', ['node.kubernetes.io/not-ready:NoSchedule']],
    ['Unknown', ['node.kubernetes.io/unreachable:NoSchedule']],
    ['True', []],
  ])('follows Ready=%s with the matching taint', async (ready, want) => {
    await client.patchNodeStatus(
      { name: 'n1', body: { status: { conditions: [{ type: 'Ready', status: ready }] } } },
      merge,
    );
    expect(taintsOf(controlled.get<V1Node>('nodes', undefined, 'n1'))).toEqual(['user:NoExecute', ...want]);
  });

  it('is off by default', async () => {
    api.server.create<V1Node>('nodes', node('n1'));
    const cordoned = await api.core.patchNode({ name: 'n1', body: { spec: { unschedulable: true } } }, merge);
    expect(cordoned.spec?.taints).toBeUndefined();
    expect(api.server.get<V1Node>('nodes', undefined, 'n1')?.spec?.taints).toBeUndefined();
  });
});
