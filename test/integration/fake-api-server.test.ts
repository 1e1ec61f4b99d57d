/* eslint-disable @typescript-eslint/no-unsafe-class-instance-assignment, @typescript-eslint/no-misused-spread --
   client-node models are classes, yet its API sends them as plain JSON: object literals are how tests write Kubernetes objects. */
// The fake API server, driven through the real @kubernetes/client-node, against what the Kubernetes
// API conventions say kube-apiserver does.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  AppsV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  VersionApi,
  type CoreV1Event,
  type V1DaemonSet,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { startFakeApiServer, type FakeApiServer, type WriteEvent } from '../../src/sim/fake-api-server.js';
import { failure } from '../fakes/api-failure.js';

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const strategic = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);

let server: FakeApiServer;
let core: CoreV1Api;
let apps: AppsV1Api;

beforeEach(async () => {
  server = await startFakeApiServer();
  core = server.kubeConfig().makeApiClient(CoreV1Api);
  apps = server.kubeConfig().makeApiClient(AppsV1Api);
});

afterEach(async () => {
  await server.close();
});

function node(name: string, labels: Record<string, string> = {}): V1Node {
  return { metadata: { name, labels } };
}

function pod(namespace: string, name: string, nodeName: string, phase = 'Running'): V1Pod {
  return {
    metadata: { name, namespace, labels: { app: name.split('-')[0] ?? name } },
    spec: { nodeName, containers: [{ name: 'c', image: 'busybox' }] },
    status: { phase },
  };
}

function daemonSet(annotations: Record<string, string> = {}): V1DaemonSet {
  return {
    metadata: { name: 'kured', namespace: 'kube-system', annotations },
    spec: {
      selector: { matchLabels: { app: 'kured' } },
      template: { metadata: { labels: { app: 'kured' } } },
    },
  };
}

describe('create and get', () => {
  it('fills uid, a decimal resourceVersion, creationTimestamp and generation on create', async () => {
    const created = await core.createNode({ body: node('n1') });
    expect(created.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.metadata?.resourceVersion).toMatch(/^[1-9][0-9]*$/);
    expect(created.metadata?.creationTimestamp).toBeInstanceOf(Date);
    expect(created.metadata?.generation).toBe(1);
    expect(created.kind).toBe('Node');
    const got = await core.readNode({ name: 'n1' });
    expect(got.metadata?.uid).toBe(created.metadata?.uid);
  });

  it('counts resourceVersion globally across resources and namespaces', async () => {
    const a = await core.createNode({ body: node('n1') });
    const b = await core.createNamespacedPod({ namespace: 'ns1', body: pod('ns1', 'web-1', 'n1') });
    const c = await apps.createNamespacedDaemonSet({ namespace: 'kube-system', body: daemonSet() });
    const versions = [a, b, c].map((o) => Number(o.metadata?.resourceVersion));
    expect(versions).toEqual([versions[0], versions[0]! + 1, versions[0]! + 2]);
  });

  it('answers 409 AlreadyExists for a second create of the same name', async () => {
    await core.createNode({ body: node('n1') });
    const status = await failure(core.createNode({ body: node('n1') }));
    expect(status).toMatchObject({
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      reason: 'AlreadyExists',
      code: 409,
      details: { name: 'n1', kind: 'nodes' },
    });
  });

  it('answers 404 NotFound with a Status naming the object', async () => {
    const status = await failure(apps.readNamespacedDaemonSet({ name: 'nope', namespace: 'kube-system' }));
    expect(status).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      reason: 'NotFound',
      code: 404,
      message: 'daemonsets.apps "nope" not found',
      details: { name: 'nope', group: 'apps', kind: 'daemonsets' },
    });
  });

  it('names an object from generateName', async () => {
    const created = await core.createNamespacedEvent({
      namespace: 'default',
      body: { metadata: { generateName: 'n1.' }, involvedObject: { kind: 'Node', name: 'n1' } },
    });
    expect(created.metadata.name).toMatch(/^n1\.[a-z0-9]{5}$/);
  });

  it('refuses a body whose namespace differs from the URL with 400', async () => {
    const status = await failure(core.createNamespacedPod({ namespace: 'a', body: pod('b', 'web-1', 'n1') }));
    expect(status).toMatchObject({ code: 400, reason: 'BadRequest' });
  });

  it('refuses an object without name or generateName with 422 Invalid', async () => {
    const status = await failure(core.createNode({ body: { metadata: {} } }));
    expect(status).toMatchObject({ code: 422, reason: 'Invalid' });
  });

  it('answers 404 for a path it does not serve', async () => {
    const status = await failure(core.listNamespacedConfigMap({ namespace: 'default' }));
    expect(status).toMatchObject({ code: 404, reason: 'NotFound' });
  });
});

describe('list and selectors', () => {
  beforeEach(async () => {
    await core.createNode({ body: node('n1', { role: 'worker', zone: 'a' }) });
    await core.createNode({ body: node('n2', { role: 'worker', zone: 'b', gpu: 'true' }) });
    await core.createNode({ body: node('n3', { role: 'control-plane', zone: 'a' }) });
    await core.createNamespacedPod({ namespace: 'ns1', body: pod('ns1', 'web-1', 'n1') });
    await core.createNamespacedPod({ namespace: 'ns1', body: pod('ns1', 'web-2', 'n2') });
    await core.createNamespacedPod({ namespace: 'ns1', body: pod('ns1', 'db-1', 'n1', 'Pending') });
    await core.createNamespacedPod({ namespace: 'ns2', body: pod('ns2', 'web-3', 'n1', 'Succeeded') });
  });

  it('answers a List kind whose resourceVersion is the current one', async () => {
    const list = await core.listNode();
    expect(list.kind).toBe('NodeList');
    expect(list.apiVersion).toBe('v1');
    const newest = Math.max(...server.list<V1Pod>('pods').map((p) => Number(p.metadata?.resourceVersion)));
    expect(list.metadata?.resourceVersion).toBe(String(newest));
  });

  const labelCases: [string, string[]][] = [
    ['role=worker', ['n1', 'n2']],
    ['role==worker', ['n1', 'n2']],
    ['role!=worker', ['n3']],
    ['zone in (b,c)', ['n2']],
    ['zone notin (a)', ['n2']],
    ['gpu', ['n2']],
    ['!gpu', ['n1', 'n3']],
    ['role=worker,zone=a', ['n1']],
    ['', ['n1', 'n2', 'n3']],
  ];
  it.each(labelCases)('lists nodes by the label selector %p', async (labelSelector, want) => {
    const list = await core.listNode({ labelSelector });
    expect(list.items.map((n) => n.metadata?.name)).toEqual(want);
  });

  const fieldCases: [string, string[]][] = [
    ['spec.nodeName=n1', ['ns1/db-1', 'ns1/web-1', 'ns2/web-3']],
    ['spec.nodeName==n2', ['ns1/web-2']],
    ['spec.nodeName!=n1', ['ns1/web-2']],
    ['metadata.name=web-1', ['ns1/web-1']],
    ['metadata.namespace=ns2', ['ns2/web-3']],
    ['status.phase=Running', ['ns1/web-1', 'ns1/web-2']],
    ['spec.nodeName=n1,status.phase!=Succeeded', ['ns1/db-1', 'ns1/web-1']],
  ];
  it.each(fieldCases)(
    'lists pods of all namespaces by the field selector %p',
    async (fieldSelector, want) => {
      const list = await core.listPodForAllNamespaces({ fieldSelector });
      expect(list.items.map((p) => `${p.metadata?.namespace ?? ''}/${p.metadata?.name ?? ''}`)).toEqual(want);
    },
  );

  it('combines a label and a field selector within one namespace', async () => {
    const list = await core.listNamespacedPod({
      namespace: 'ns1',
      labelSelector: 'app=web',
      fieldSelector: 'spec.nodeName=n1',
    });
    expect(list.items.map((p) => p.metadata?.name)).toEqual(['web-1']);
  });

  it('refuses a field selector on an unsupported field with 400', async () => {
    const status = await failure(core.listNode({ fieldSelector: 'spec.podCIDR=x' }));
    expect(status).toMatchObject({
      code: 400,
      reason: 'BadRequest',
      message: 'field label not supported: spec.podCIDR',
    });
  });

  it('refuses a malformed label selector with 400', async () => {
    const status = await failure(core.listNode({ labelSelector: 'a=b,' }));
    expect(status).toMatchObject({ code: 400, reason: 'BadRequest' });
  });
});

describe('replace (PUT)', () => {
  it('answers 409 Conflict when metadata.resourceVersion is stale', async () => {
    const first = await core.createNode({ body: node('n1') });
    await core.patchNode({ name: 'n1', body: { metadata: { labels: { a: 'b' } } } }, merge);
    const status = await failure(
      core.replaceNode({ name: 'n1', body: { ...first, spec: { unschedulable: true } } }),
    );
    expect(status).toMatchObject({ code: 409, reason: 'Conflict', details: { name: 'n1', kind: 'nodes' } });
    expect(status.message).toContain('the object has been modified');
    expect(server.get<V1Node>('nodes', undefined, 'n1')?.spec?.unschedulable).toBeUndefined();
  });

  it('writes with the current resourceVersion and answers the next one', async () => {
    const current = await core.createNode({ body: node('n1') });
    const replaced = await core.replaceNode({
      name: 'n1',
      body: { ...current, spec: { unschedulable: true } },
    });
    expect(replaced.spec?.unschedulable).toBe(true);
    expect(Number(replaced.metadata?.resourceVersion)).toBeGreaterThan(
      Number(current.metadata?.resourceVersion),
    );
    expect(replaced.metadata?.generation).toBe(2);
  });

  it('writes unconditionally when the body carries no resourceVersion', async () => {
    await core.createNode({ body: node('n1') });
    await core.patchNode({ name: 'n1', body: { metadata: { labels: { a: 'b' } } } }, merge);
    const replaced = await core.replaceNode({
      name: 'n1',
      body: { metadata: { name: 'n1' }, spec: { unschedulable: true } },
    });
    expect(replaced.spec?.unschedulable).toBe(true);
    expect(replaced.metadata?.labels).toBeUndefined();
  });

  it('keeps uid and creationTimestamp whatever the body says', async () => {
    const created = await core.createNode({ body: node('n1') });
    const replaced = await core.replaceNode({
      name: 'n1',
      body: { metadata: { name: 'n1', uid: 'forged', creationTimestamp: new Date(0) } },
    });
    expect(replaced.metadata?.uid).toBe(created.metadata?.uid);
    expect(replaced.metadata?.creationTimestamp).toEqual(created.metadata?.creationTimestamp);
  });

  it('refuses a body named differently from the URL with 400', async () => {
    await core.createNode({ body: node('n1') });
    const status = await failure(core.replaceNode({ name: 'n1', body: node('n2') }));
    expect(status).toMatchObject({ code: 400, reason: 'BadRequest' });
  });

  it('ignores status on the main resource and changes only status through /status', async () => {
    await core.createNode({ body: { ...node('n1'), status: { nodeInfo: { bootID: 'a' } as never } } });
    const current = await core.readNode({ name: 'n1' });
    const main = await core.replaceNode({
      name: 'n1',
      body: { ...current, spec: { unschedulable: true }, status: { nodeInfo: { bootID: 'b' } as never } },
    });
    expect(main.status?.nodeInfo?.bootID).toBe('a');
    const viaStatus = await core.replaceNodeStatus({
      name: 'n1',
      body: { ...main, spec: { unschedulable: false }, status: { nodeInfo: { bootID: 'b' } as never } },
    });
    expect(viaStatus.status?.nodeInfo?.bootID).toBe('b');
    expect(viaStatus.spec?.unschedulable).toBe(true);
  });

  it('does not bump resourceVersion for a write that changes nothing', async () => {
    const created = await core.createNode({ body: node('n1', { a: 'b' }) });
    const same = await core.patchNode({ name: 'n1', body: { metadata: { labels: { a: 'b' } } } }, merge);
    expect(same.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);
  });
});

describe('JSON patch (the content type client-node sends by default)', () => {
  beforeEach(async () => {
    await core.createNode({
      body: {
        metadata: { name: 'n1', labels: { a: '1', b: '2' } },
        spec: { taints: [{ key: 'user', effect: 'NoSchedule' }] },
      },
    });
  });

  it('is what client-node 1.4.0 sends unless told otherwise', async () => {
    await core.patchNode({ name: 'n1', body: [{ op: 'add', path: '/metadata/labels/c', value: '3' }] });
    expect(server.requests.at(-1)?.contentType).toBe('application/json-patch+json');
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
      'move',
      [{ op: 'move', from: '/metadata/labels/a', path: '/metadata/labels/z' }],
      (n) => n.metadata?.labels,
      { b: '2', z: '1' },
    ],
    [
      'copy',
      [{ op: 'copy', from: '/metadata/labels/a', path: '/metadata/labels/z' }],
      (n) => n.metadata?.labels?.z,
      '1',
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
      'move a list element',
      [
        { op: 'add', path: '/spec/taints/-', value: { key: 'second', effect: 'NoSchedule' } },
        { op: 'move', from: '/spec/taints/0', path: '/spec/taints/1' },
      ],
      (n) => n.spec?.taints?.map((t) => t.key),
      ['second', 'user'],
    ],
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
    const patched = await core.patchNode({ name: 'n1', body });
    expect(pick(patched)).toEqual(want);
    expect(pick(server.get<V1Node>('nodes', undefined, 'n1')!)).toEqual(want);
  });

  it('answers 422 Invalid when a test operation fails, and changes nothing', async () => {
    const before = server.get<V1Node>('nodes', undefined, 'n1');
    const status = await failure(
      core.patchNode({
        name: 'n1',
        body: [
          { op: 'test', path: '/spec/taints', value: [] },
          { op: 'replace', path: '/spec/taints', value: [{ key: 'mine', effect: 'NoSchedule' }] },
        ],
      }),
    );
    expect(status).toMatchObject({ kind: 'Status', code: 422, reason: 'Invalid' });
    expect(server.get<V1Node>('nodes', undefined, 'n1')).toEqual(before);
  });

  it.each([
    ['removes a missing key', [{ op: 'remove', path: '/metadata/annotations/x' }]],
    ['replaces a missing key', [{ op: 'replace', path: '/spec/podCIDR', value: 'x' }]],
    ['adds below a missing parent', [{ op: 'add', path: '/metadata/annotations/x', value: 'y' }]],
    ['adds past the end of a list', [{ op: 'add', path: '/spec/taints/5', value: {} }]],
  ])('answers 422 Invalid when it %s', async (_name, body) => {
    const status = await failure(core.patchNode({ name: 'n1', body }));
    expect(status).toMatchObject({ code: 422, reason: 'Invalid' });
  });

  it('answers 400 BadRequest for a body that is not a list of operations', async () => {
    const status = await failure(core.patchNode({ name: 'n1', body: { metadata: {} } }));
    expect(status).toMatchObject({ code: 400, reason: 'BadRequest' });
  });

  it('treats a stale metadata.resourceVersion written by the patch as a precondition (409)', async () => {
    const stale = server.get<V1Node>('nodes', undefined, 'n1')!.metadata!.resourceVersion!;
    await core.patchNode({ name: 'n1', body: [{ op: 'add', path: '/metadata/labels/c', value: '3' }] });
    const status = await failure(
      core.patchNode({
        name: 'n1',
        body: [
          { op: 'replace', path: '/metadata/resourceVersion', value: stale },
          { op: 'add', path: '/metadata/labels/d', value: '4' },
        ],
      }),
    );
    expect(status).toMatchObject({ code: 409, reason: 'Conflict' });
    expect(server.get<V1Node>('nodes', undefined, 'n1')?.metadata?.labels?.d).toBeUndefined();
  });
});

describe('merge patch and strategic merge patch', () => {
  const taint = (key: string): { key: string; effect: string } => ({ key, effect: 'NoSchedule' });

  beforeEach(async () => {
    await core.createNode({
      body: { metadata: { name: 'n1', labels: { a: '1', b: '2' } }, spec: { taints: [taint('user')] } },
    });
  });

  it('adds and removes (null) labels with a merge patch', async () => {
    const patched = await core.patchNode(
      { name: 'n1', body: { metadata: { labels: { a: null, c: '3' } } } },
      merge,
    );
    expect(patched.metadata?.labels).toEqual({ b: '2', c: '3' });
    expect(server.requests.at(-1)?.contentType).toBe('application/merge-patch+json');
  });

  it('answers 409 Conflict for a merge patch carrying a stale resourceVersion', async () => {
    const stale = server.get<V1Node>('nodes', undefined, 'n1')!.metadata!.resourceVersion!;
    await core.patchNode({ name: 'n1', body: { spec: { unschedulable: true } } }, merge);
    const status = await failure(
      core.patchNode(
        { name: 'n1', body: { metadata: { resourceVersion: stale, labels: { x: 'y' } } } },
        merge,
      ),
    );
    expect(status).toMatchObject({ code: 409, reason: 'Conflict' });
    expect(server.get<V1Node>('nodes', undefined, 'n1')?.metadata?.labels).toEqual({ a: '1', b: '2' });
  });

  it('accepts a merge patch carrying the current resourceVersion', async () => {
    const current = server.get<V1Node>('nodes', undefined, 'n1')!.metadata!.resourceVersion!;
    const patched = await core.patchNode(
      { name: 'n1', body: { metadata: { resourceVersion: current, labels: { x: 'y' } } } },
      merge,
    );
    expect(patched.metadata?.labels?.x).toBe('y');
  });

  it.each([
    ['merge', merge],
    ['strategic merge', strategic],
  ])(
    'replaces spec.taints whole with a %s patch (Kubernetes declares the list atomic)',
    async (_name, options) => {
      const patched = await core.patchNode(
        { name: 'n1', body: { spec: { taints: [taint('kured')] } } },
        options,
      );
      expect(patched.spec?.taints?.map((t) => t.key)).toEqual(['kured']);
    },
  );

  it('merges status.conditions by type with a strategic merge patch, where a merge patch replaces them', async () => {
    const ready = { type: 'Ready', status: 'True' };
    const disk = { type: 'DiskPressure', status: 'False' };
    await core.patchNodeStatus({ name: 'n1', body: { status: { conditions: [ready, disk] } } }, merge);
    const smp = await core.patchNodeStatus(
      { name: 'n1', body: { status: { conditions: [{ type: 'Ready', status: 'False' }] } } },
      strategic,
    );
    expect(smp.status?.conditions?.map((c) => `${c.type}=${c.status}`)).toEqual([
      'Ready=False',
      'DiskPressure=False',
    ]);
    const mp = await core.patchNodeStatus({ name: 'n1', body: { status: { conditions: [ready] } } }, merge);
    expect(mp.status?.conditions?.map((c) => `${c.type}=${c.status}`)).toEqual(['Ready=True']);
  });

  it('deletes a keyed list element with $patch: delete in a strategic merge patch', async () => {
    await core.patchNodeStatus(
      {
        name: 'n1',
        body: {
          status: {
            conditions: [
              { type: 'Ready', status: 'True' },
              { type: 'X', status: 'True' },
            ],
          },
        },
      },
      merge,
    );
    const patched = await core.patchNodeStatus(
      { name: 'n1', body: { status: { conditions: [{ type: 'X', $patch: 'delete' }] } } },
      strategic,
    );
    expect(patched.status?.conditions?.map((c) => c.type)).toEqual(['Ready']);
  });

  it('merges pod containers by name with a strategic merge patch', async () => {
    await core.createNamespacedPod({
      namespace: 'ns',
      body: {
        metadata: { name: 'p' },
        spec: {
          containers: [
            { name: 'a', image: 'x:1' },
            { name: 'b', image: 'y:1' },
          ],
        },
      },
    });
    const patched = await core.patchNamespacedPod(
      { name: 'p', namespace: 'ns', body: { spec: { containers: [{ name: 'b', image: 'y:2' }] } } },
      strategic,
    );
    expect(patched.spec?.containers.map((c) => `${c.name}=${c.image ?? ''}`)).toEqual(['a=x:1', 'b=y:2']);
  });

  it('patches a DaemonSet annotation, as the lock does', async () => {
    await apps.createNamespacedDaemonSet({ namespace: 'kube-system', body: daemonSet() });
    const patched = await apps.patchNamespacedDaemonSet(
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
    'answers 415 UnsupportedMediaType for a %s patch',
    async (contentType) => {
      const status = await failure(
        core.patchNode({ name: 'n1', body: { spec: {} } }, setHeaderOptions('Content-Type', contentType)),
      );
      expect(status).toMatchObject({ kind: 'Status', code: 415, reason: 'UnsupportedMediaType' });
    },
  );
});

describe('validation, as kube-apiserver refuses what it cannot store', () => {
  beforeEach(async () => {
    await core.createNode({
      body: { metadata: { name: 'n1' }, spec: { taints: [{ key: 'kured', effect: 'PreferNoSchedule' }] } },
    });
  });

  it('refuses a duplicate taint added by a JSON patch with 422 Invalid naming the field', async () => {
    const status = await failure(
      core.patchNode({
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
    expect(server.get<V1Node>('nodes', undefined, 'n1')?.spec?.taints).toHaveLength(1);
  });

  it('accepts the same key with another effect', async () => {
    const patched = await core.patchNode({
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
    const status = await failure(core.patchNode({ name: 'n1', body }, merge));
    expect(status).toMatchObject({ code: 422, reason: 'Invalid' });
    expect(status.details?.causes?.map((c) => (c as { field?: string }).field)).toContain(field);
  });

  it('refuses an object name that is not a DNS subdomain', async () => {
    const status = await failure(core.createNode({ body: node('Node_1') }));
    expect(status).toMatchObject({ code: 422, reason: 'Invalid', details: { name: 'Node_1', kind: 'Node' } });
  });

  it('validates in-process writes too', () => {
    expect(() => server.create('nodes', node('n2', { since: '10:00' }))).toThrow(/is invalid/);
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
    await client.createNode({
      body: { metadata: { name: 'n1' }, spec: { taints: [{ key: 'user', effect: 'NoExecute' }] } },
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
      strategic,
    );
    expect(taintsOf(controlled.get<V1Node>('nodes', undefined, 'n1'))).toEqual(['user:NoExecute', ...want]);
  });

  it('is off by default', async () => {
    await core.createNode({ body: node('n1') });
    const cordoned = await core.patchNode({ name: 'n1', body: { spec: { unschedulable: true } } }, merge);
    expect(cordoned.spec?.taints).toBeUndefined();
    expect(server.get<V1Node>('nodes', undefined, 'n1')?.spec?.taints).toBeUndefined();
  });
});

describe('delete', () => {
  it('removes a node and answers a Success Status', async () => {
    await core.createNode({ body: node('n1') });
    const answer = await core.deleteNode({ name: 'n1' });
    expect(answer).toMatchObject({ status: 'Success' });
    expect(server.get('nodes', undefined, 'n1')).toBeUndefined();
    expect(await failure(core.deleteNode({ name: 'n1' }))).toMatchObject({ code: 404, reason: 'NotFound' });
  });

  it('answers 409 Conflict when a precondition does not hold', async () => {
    await core.createNode({ body: node('n1') });
    const status = await failure(core.deleteNode({ name: 'n1', body: { preconditions: { uid: 'other' } } }));
    expect(status).toMatchObject({ code: 409, reason: 'Conflict' });
    expect(server.get('nodes', undefined, 'n1')).toBeDefined();
  });

  it('removes a pod at once in the default immediate mode', async () => {
    await core.createNamespacedPod({ namespace: 'ns', body: pod('ns', 'web-1', 'n1') });
    const answer = await core.deleteNamespacedPod({ name: 'web-1', namespace: 'ns' });
    expect(answer.metadata?.name).toBe('web-1');
    expect(server.get('pods', 'ns', 'web-1')).toBeUndefined();
  });
});

describe('events', () => {
  const event: CoreV1Event = {
    metadata: { name: 'n1.reboot', namespace: 'default' },
    involvedObject: { kind: 'Node', name: 'n1', apiVersion: 'v1' },
    reason: 'RebootRequired',
    message: 'reboot required',
    type: 'Normal',
    count: 1,
    reportingComponent: 'kured-ts',
  };

  it('creates, bumps the count with a merge patch and lists by involved object', async () => {
    await core.createNamespacedEvent({ namespace: 'default', body: event });
    await core.createNamespacedEvent({
      namespace: 'default',
      body: { ...event, metadata: { name: 'n2.reboot' }, involvedObject: { kind: 'Node', name: 'n2' } },
    });
    const bumped = await core.patchNamespacedEvent(
      { name: 'n1.reboot', namespace: 'default', body: { count: 2 } },
      merge,
    );
    expect(bumped.count).toBe(2);
    const list = await core.listNamespacedEvent({
      namespace: 'default',
      fieldSelector: 'involvedObject.name=n1,reason=RebootRequired',
    });
    expect(list.items.map((e) => [e.metadata.name, e.count])).toEqual([['n1.reboot', 2]]);
    const all = await core.listEventForAllNamespaces();
    expect(all.items).toHaveLength(2);
  });

  const nodeEvent = (namespace: string, extra: Partial<CoreV1Event> = {}): CoreV1Event => ({
    ...event,
    metadata: { name: 'n1.x', namespace },
    ...extra,
  });
  it.each([
    ['a Node event outside "default"', nodeEvent('kube-system'), 'involvedObject.namespace'],
    [
      'a Pod event in another namespace than the pod',
      nodeEvent('default', { involvedObject: { kind: 'Pod', name: 'p', namespace: 'web' } }),
      'involvedObject.namespace',
    ],
    ['an event with eventTime but no action', nodeEvent('default', { eventTime: new Date() }), 'action'],
  ])('refuses %s with 422 Invalid, as kube does', async (_name, body, field) => {
    const status = await failure(
      core.createNamespacedEvent({ namespace: body.metadata.namespace ?? '', body }),
    );
    expect(status).toMatchObject({ code: 422, reason: 'Invalid' });
    expect(status.details?.causes?.map((c) => (c as { field?: string }).field)).toContain(field);
  });

  it('accepts a Node event with eventTime in kube-system when it names its reporter and action', async () => {
    const body = nodeEvent('kube-system', {
      eventTime: new Date(),
      action: 'Reboot',
      reportingInstance: 'n1',
    });
    const created = await core.createNamespacedEvent({ namespace: 'kube-system', body });
    expect(created.action).toBe('Reboot');
  });
});

describe('namespaces and discovery', () => {
  it('creates, lists and deletes namespaces', async () => {
    await core.createNamespace({ body: { metadata: { name: 'kube-system' } } });
    expect((await core.listNamespace()).items.map((n) => n.metadata?.name)).toEqual(['kube-system']);
    expect((await core.readNamespace({ name: 'kube-system' })).kind).toBe('Namespace');
    await core.deleteNamespace({ name: 'kube-system' });
    expect((await core.listNamespace()).items).toEqual([]);
  });

  it('answers /version', async () => {
    const version = await server.kubeConfig().makeApiClient(VersionApi).getCode();
    expect(version.major).toBe('1');
  });
});

describe('test hooks', () => {
  it('records every request with method, path, query, content type and status', async () => {
    await core.createNode({ body: node('n1') });
    await core.listNode({ labelSelector: 'a=b' });
    await failure(core.readNode({ name: 'n2' }));
    expect(server.requests.map((r) => [r.method, r.path, r.query, r.status])).toEqual([
      ['POST', '/api/v1/nodes', {}, 201],
      ['GET', '/api/v1/nodes', { labelSelector: 'a=b' }, 200],
      ['GET', '/api/v1/nodes/n2', {}, 404],
    ]);
    expect(server.requests[0]?.contentType).toBe('application/json');
    expect(server.requests[0]?.at).toBeLessThanOrEqual(Date.now());
  });

  it('fails the next N matching requests with a Status of the injected code, then serves again', async () => {
    await core.createNode({ body: node('n1') });
    server.injectFailure({ method: 'patch', pathIncludes: '/nodes/n1' }, 500, 2);
    const patch = (): Promise<V1Node> =>
      core.patchNode({ name: 'n1', body: { spec: { unschedulable: true } } }, merge);
    expect(await core.readNode({ name: 'n1' })).toBeDefined();
    expect(await failure(patch())).toMatchObject({ kind: 'Status', code: 500, reason: 'InternalError' });
    expect(await failure(patch())).toMatchObject({ code: 500 });
    expect((await patch()).spec?.unschedulable).toBe(true);
    expect(server.requests.map((r) => r.status)).toEqual([201, 200, 500, 500, 200]);
  });

  it.each([
    [409, 'Conflict'],
    [429, 'TooManyRequests'],
    [503, 'ServiceUnavailable'],
  ])('injects %i with reason %s', async (code, reason) => {
    server.injectFailure({}, code, 1);
    expect(await failure(core.listNode())).toMatchObject({ code, reason });
  });

  it('keeps only the latest requests when maxRecordedRequests bounds the log', async () => {
    const bounded = await startFakeApiServer({ maxRecordedRequests: 3 });
    try {
      const client = bounded.kubeConfig().makeApiClient(CoreV1Api);
      for (let i = 0; i < 10; i++) await failure(client.readNode({ name: `n${String(i)}` }));
      expect(bounded.requests.length).toBeGreaterThanOrEqual(3);
      expect(bounded.requests.length).toBeLessThan(6);
      expect(bounded.requests.at(-1)?.path).toBe('/api/v1/nodes/n9');
    } finally {
      await bounded.close();
    }
  });

  it('tells onWrite listeners of every accepted write, HTTP or direct, synchronously', async () => {
    const seen: string[] = [];
    const stop = server.onWrite((e: WriteEvent) =>
      seen.push(`${e.type} ${e.resource} ${e.object.metadata?.name ?? ''}`),
    );
    await core.createNode({ body: node('n1') });
    await failure(core.createNode({ body: node('n1') }));
    server.update('nodes', {
      ...server.get<V1Node>('nodes', undefined, 'n1')!,
      spec: { unschedulable: true },
    });
    expect(seen).toEqual(['ADDED nodes n1', 'MODIFIED nodes n1']);
    server.delete('nodes', undefined, 'n1');
    stop();
    server.create('nodes', node('n2'));
    expect(seen).toEqual(['ADDED nodes n1', 'MODIFIED nodes n1', 'DELETED nodes n1']);
  });
});

describe('in-process access', () => {
  it('creates, reads, updates and deletes objects as wire JSON without HTTP', async () => {
    const created = server.create<V1Pod>('pods', pod('ns', 'web-1', 'n1'));
    expect(created.metadata?.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const updated = server.update<V1Pod>('pods', {
      ...created,
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    });
    expect(Number(updated.metadata?.resourceVersion)).toBe(Number(created.metadata?.resourceVersion) + 1);
    const viaHttp = await core.readNamespacedPod({ name: 'web-1', namespace: 'ns' });
    expect(viaHttp.status?.conditions?.[0]?.type).toBe('Ready');
    expect(server.list<V1Pod>('pods', 'ns').map((p) => p.metadata?.name)).toEqual(['web-1']);
    expect(server.list<V1Pod>('pods', 'other')).toEqual([]);
    server.delete('pods', 'ns', 'web-1');
    expect(server.get('pods', 'ns', 'web-1')).toBeUndefined();
    expect(requestsOf(server)).toEqual(['GET /api/v1/namespaces/ns/pods/web-1']);
  });

  it('throws a 409 ApiError on a duplicate create and a 404 on update of a missing object', () => {
    server.create('nodes', node('n1'));
    expect(() => server.create('nodes', node('n1'))).toThrow(
      expect.objectContaining({ status: expect.objectContaining({ code: 409 }) }),
    );
    expect(() => server.update('nodes', node('n9'))).toThrow(
      expect.objectContaining({ status: expect.objectContaining({ code: 404 }) }),
    );
  });
});

function requestsOf(s: FakeApiServer): string[] {
  return s.requests.map((r) => `${r.method} ${r.path}`);
}
