/* eslint-disable @typescript-eslint/no-unsafe-class-instance-assignment --
   client-node models are classes, yet its API sends them as plain JSON: object literals are how tests write Kubernetes objects. */
// The fake API server driven through the real @kubernetes/client-node, against what the Kubernetes
// API conventions say kube-apiserver does: patches: JSON patch and merge patch, as kube-apiserver applies them.
import { beforeEach, describe, expect, it } from '@jest/globals';
import { setHeaderOptions, type V1Node } from '@kubernetes/client-node';
import { failure } from '../../fakes/api-failure.js';
import { daemonSet, merge, useFakeApi } from '../../fakes/fake-api-fixtures.js';

const api = useFakeApi();

describe('JSON patch (the content type client-node sends by default)', () => {
  beforeEach(() => {
    // in process: a Node created over HTTP would also get kube's not-ready taint
    api.server.create<V1Node>('nodes', {
      metadata: { name: 'n1', labels: { a: '1', b: '2' } },
      spec: { taints: [{ key: 'user', effect: 'NoSchedule' }] },
    });
  });

  it('is what client-node 1.4.0 sends unless told otherwise', async () => {
    await api.core.patchNode({ name: 'n1', body: [{ op: 'add', path: '/metadata/labels/c', value: '3' }] });
    expect(api.server.requests.at(-1)?.contentType).toBe('application/json-patch+json');
  });

  const cases: [string, object[], (n: V1Node) => unknown, unknown][] = [
    [
      'add',
      [{ op: 'add', path: '/metadata/labels/c', value: '3' }],
      (n) => n.metadata?.labels,
      { a: '1', b: '2', c: '3' },
    ],
    ['remove', [{ op: 'remove', path: '/metadata/labels/a' }], (n) => n.metadata?.labels, { b: '2' }],
    [
      'replace',
      [{ op: 'replace', path: '/metadata/labels/a', value: 'x' }],
      (n) => n.metadata?.labels?.a,
      'x',
    ],
    [
      'add to the end of a list',
      [{ op: 'add', path: '/spec/taints/-', value: { key: 'kured', effect: 'PreferNoSchedule' } }],
      (n) => n.spec?.taints?.map((t) => t.key),
      ['user', 'kured'],
    ],
    [
      'test then replace a list',
      [
        { op: 'test', path: '/spec/taints', value: [{ key: 'user', effect: 'NoSchedule' }] },
        { op: 'replace', path: '/spec/taints', value: [] },
      ],
      (n) => n.spec?.taints,
      [],
    ],
    [
      'escaped keys',
      [{ op: 'add', path: '/metadata/labels/example.com~1x', value: 'y' }],
      (n) => n.metadata?.labels?.['example.com/x'],
      'y',
    ],
    [
      'add at a list index, shifting the rest',
      [{ op: 'add', path: '/spec/taints/0', value: { key: 'first', effect: 'NoExecute' } }],
      (n) => n.spec?.taints?.map((t) => t.key),
      ['first', 'user'],
    ],
    ['remove a list element', [{ op: 'remove', path: '/spec/taints/0' }], (n) => n.spec?.taints, []],
    [
      'test a list element',
      [
        { op: 'test', path: '/spec/taints/0/key', value: 'user' },
        { op: 'test', path: '/spec/taints/0', value: { key: 'user', effect: 'NoSchedule' } },
        { op: 'add', path: '/metadata/labels/tested', value: 'yes' },
      ],
      (n) => n.metadata?.labels?.tested,
      'yes',
    ],
  ];
  it.each(cases)('applies %s', async (_name, body, pick, want) => {
    const patched = await api.core.patchNode({ name: 'n1', body });
    expect(pick(patched)).toEqual(want);
    expect(pick(api.server.get<V1Node>('nodes', undefined, 'n1')!)).toEqual(want);
  });

  it('answers 422 Invalid when a test operation fails, and changes nothing', async () => {
    const before = api.server.get<V1Node>('nodes', undefined, 'n1');
    const status = await failure(
      api.core.patchNode({
        name: 'n1',
        body: [
          { op: 'test', path: '/spec/taints', value: [] },
          { op: 'replace', path: '/spec/taints', value: [{ key: 'mine', effect: 'NoSchedule' }] },
        ],
      }),
    );
    expect(status).toMatchObject({ kind: 'Status', code: 422, reason: 'Invalid' });
    expect(api.server.get<V1Node>('nodes', undefined, 'n1')).toEqual(before);
  });

  it.each([
    ['removes a missing key', [{ op: 'remove', path: '/metadata/annotations/x' }]],
    ['replaces a missing key', [{ op: 'replace', path: '/spec/podCIDR', value: 'x' }]],
    ['adds below a missing parent', [{ op: 'add', path: '/metadata/annotations/x', value: 'y' }]],
    ['adds past the end of a list', [{ op: 'add', path: '/spec/taints/5', value: {} }]],
  ])('answers 422 Invalid when it %s', async (_name, body) => {
    const status = await failure(api.core.patchNode({ name: 'n1', body }));
    expect(status).toMatchObject({ code: 422, reason: 'Invalid' });
  });

  it.each(['move', 'copy'])(
    'answers 400 BadRequest for the %s op, which kured-ts never sends',
    async (op) => {
      const body = [{ op, from: '/metadata/labels/a', path: '/metadata/labels/z' }];
      const status = await failure(api.core.patchNode({ name: 'n1', body }));
      expect(status).toMatchObject({ code: 400, reason: 'BadRequest' });
    },
  );

  it('answers 400 BadRequest for a body that is not a list of operations', async () => {
    const status = await failure(api.core.patchNode({ name: 'n1', body: { metadata: {} } }));
    expect(status).toMatchObject({ code: 400, reason: 'BadRequest' });
  });

  it('treats a stale metadata.resourceVersion written by the patch as a precondition (409)', async () => {
    const stale = api.server.get<V1Node>('nodes', undefined, 'n1')!.metadata!.resourceVersion!;
    await api.core.patchNode({ name: 'n1', body: [{ op: 'add', path: '/metadata/labels/c', value: '3' }] });
    const status = await failure(
      api.core.patchNode({
        name: 'n1',
        body: [
          { op: 'replace', path: '/metadata/resourceVersion', value: stale },
          { op: 'add', path: '/metadata/labels/d', value: '4' },
        ],
      }),
    );
    expect(status).toMatchObject({ code: 409, reason: 'Conflict' });
    expect(api.server.get<V1Node>('nodes', undefined, 'n1')?.metadata?.labels?.d).toBeUndefined();
  });
});

describe('merge patch', () => {
  const taint = (key: string): { key: string; effect: string } => ({ key, effect: 'NoSchedule' });

  beforeEach(async () => {
    await api.core.createNode({
      body: { metadata: { name: 'n1', labels: { a: '1', b: '2' } }, spec: { taints: [taint('user')] } },
    });
  });

  it('adds and removes (null) labels with a merge patch', async () => {
    const patched = await api.core.patchNode(
      { name: 'n1', body: { metadata: { labels: { a: null, c: '3' } } } },
      merge,
    );
    expect(patched.metadata?.labels).toEqual({ b: '2', c: '3' });
    expect(api.server.requests.at(-1)?.contentType).toBe('application/merge-patch+json');
  });

  it('answers 409 Conflict for a merge patch carrying a stale resourceVersion', async () => {
    const stale = api.server.get<V1Node>('nodes', undefined, 'n1')!.metadata!.resourceVersion!;
    await api.core.patchNode({ name: 'n1', body: { spec: { unschedulable: true } } }, merge);
    const status = await failure(
      api.core.patchNode(
        { name: 'n1', body: { metadata: { resourceVersion: stale, labels: { x: 'y' } } } },
        merge,
      ),
    );
    expect(status).toMatchObject({ code: 409, reason: 'Conflict' });
    expect(api.server.get<V1Node>('nodes', undefined, 'n1')?.metadata?.labels).toEqual({ a: '1', b: '2' });
  });

  it('accepts a merge patch carrying the current resourceVersion', async () => {
    const current = api.server.get<V1Node>('nodes', undefined, 'n1')!.metadata!.resourceVersion!;
    const patched = await api.core.patchNode(
      { name: 'n1', body: { metadata: { resourceVersion: current, labels: { x: 'y' } } } },
      merge,
    );
    expect(patched.metadata?.labels?.x).toBe('y');
  });

  it('replaces spec.taints whole with a merge patch', async () => {
    const patched = await api.core.patchNode(
      { name: 'n1', body: { spec: { taints: [taint('kured')] } } },
      merge,
    );
    expect(patched.spec?.taints?.map((t) => t.key)).toEqual(['kured']);
  });

  it('patches a DaemonSet annotation, as the lock does', async () => {
    await api.apps.createNamespacedDaemonSet({ namespace: 'kube-system', body: daemonSet() });
    const patched = await api.apps.patchNamespacedDaemonSet(
      {
        name: 'kured',
        namespace: 'kube-system',
        body: { metadata: { annotations: { 'weave.works/kured-node-lock': '{"nodeID":"n1"}' } } },
      },
      merge,
    );
    expect(patched.metadata?.annotations?.['weave.works/kured-node-lock']).toBe('{"nodeID":"n1"}');
  });

  it.each([['application/apply-patch+yaml'], ['text/plain']])(
    'answers 415 UnsupportedMediaType for a %s patch (server-side apply is not implemented)',
    async (contentType) => {
      const status = await failure(
        api.core.patchNode({ name: 'n1', body: { spec: {} } }, setHeaderOptions('Content-Type', contentType)),
      );
      expect(status).toMatchObject({ kind: 'Status', code: 415, reason: 'UnsupportedMediaType' });
    },
  );
});
