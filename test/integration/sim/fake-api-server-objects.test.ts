/* eslint-disable @typescript-eslint/no-unsafe-class-instance-assignment, @typescript-eslint/no-misused-spread --
   client-node models are classes, yet its API sends them as plain JSON: object literals are how tests write Kubernetes objects. */
// The fake API server driven through the real @kubernetes/client-node, against what the Kubernetes
// API conventions say kube-apiserver does: objects: create, get, list with selectors, replace, delete, namespaces, and the in-process API.
import { beforeEach, describe, expect, it } from '@jest/globals';
import { type V1Node, type V1Pod } from '@kubernetes/client-node';
import { failure } from '../../fakes/api-failure.js';
import { daemonSet, merge, node, pod, requestsOf, useFakeApi } from '../../fakes/fake-api-fixtures.js';

const api = useFakeApi();

describe('create and get', () => {
  it('fills uid, a decimal resourceVersion, creationTimestamp and generation on create', async () => {
    const created = await api.core.createNode({ body: node('n1') });
    expect(created.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.metadata?.resourceVersion).toMatch(/^[1-9][0-9]*$/);
    expect(created.metadata?.creationTimestamp).toBeInstanceOf(Date);
    expect(created.metadata?.generation).toBe(1);
    expect(created.kind).toBe('Node');
    const got = await api.core.readNode({ name: 'n1' });
    expect(got.metadata?.uid).toBe(created.metadata?.uid);
  });

  it('counts resourceVersion globally across resources and namespaces', async () => {
    const a = await api.core.createNode({ body: node('n1') });
    const b = await api.core.createNamespacedPod({ namespace: 'ns1', body: pod('ns1', 'web-1', 'n1') });
    const c = await api.apps.createNamespacedDaemonSet({ namespace: 'kube-system', body: daemonSet() });
    const versions = [a, b, c].map((o) => Number(o.metadata?.resourceVersion));
    expect(versions).toEqual([versions[0], versions[0]! + 1, versions[0]! + 2]);
  });

  it('answers 409 AlreadyExists for a second create of the same name', async () => {
    await api.core.createNode({ body: node('n1') });
    const status = await failure(api.core.createNode({ body: node('n1') }));
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
    const status = await failure(
      api.apps.readNamespacedDaemonSet({ name: 'nope', namespace: 'kube-system' }),
    );
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
    const created = await api.core.createNamespacedEvent({
      namespace: 'default',
      body: { metadata: { generateName: 'n1.' }, involvedObject: { kind: 'Node', name: 'n1' } },
    });
    expect(created.metadata.name).toMatch(/^n1\.[a-z0-9]{5}$/);
  });

  it('refuses a body whose namespace differs from the URL with 400', async () => {
    const status = await failure(
      api.core.createNamespacedPod({ namespace: 'a', body: pod('b', 'web-1', 'n1') }),
    );
    expect(status).toMatchObject({ code: 400, reason: 'BadRequest' });
  });

  it('refuses an object without name or generateName with 422 Invalid', async () => {
    const status = await failure(api.core.createNode({ body: { metadata: {} } }));
    expect(status).toMatchObject({ code: 422, reason: 'Invalid' });
  });

  it('answers 404 for a path it does not serve', async () => {
    const status = await failure(api.core.listNamespacedSecret({ namespace: 'default' }));
    expect(status).toMatchObject({ code: 404, reason: 'NotFound' });
  });
});

describe('list and selectors', () => {
  beforeEach(async () => {
    await api.core.createNode({ body: node('n1', { role: 'worker', zone: 'a' }) });
    await api.core.createNode({ body: node('n2', { role: 'worker', zone: 'b', gpu: 'true' }) });
    await api.core.createNode({ body: node('n3', { role: 'control-plane', zone: 'a' }) });
    await api.core.createNamespacedPod({ namespace: 'ns1', body: pod('ns1', 'web-1', 'n1') });
    await api.core.createNamespacedPod({ namespace: 'ns1', body: pod('ns1', 'web-2', 'n2') });
    await api.core.createNamespacedPod({ namespace: 'ns1', body: pod('ns1', 'db-1', 'n1', 'Pending') });
    await api.core.createNamespacedPod({ namespace: 'ns2', body: pod('ns2', 'web-3', 'n1', 'Succeeded') });
  });

  it('answers a List kind whose resourceVersion is the current one', async () => {
    const list = await api.core.listNode();
    expect(list.kind).toBe('NodeList');
    expect(list.apiVersion).toBe('v1');
    const newest = Math.max(
      ...api.server.list<V1Pod>('pods').map((p) => Number(p.metadata?.resourceVersion)),
    );
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
    const list = await api.core.listNode({ labelSelector });
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
      const list = await api.core.listPodForAllNamespaces({ fieldSelector });
      expect(list.items.map((p) => `${p.metadata?.namespace ?? ''}/${p.metadata?.name ?? ''}`)).toEqual(want);
    },
  );

  it('lists a pod by its node as it is bound, moved and deleted (the server keeps pods by node)', async () => {
    const names = async (fieldSelector: string): Promise<string[]> =>
      (await api.core.listPodForAllNamespaces({ fieldSelector })).items.map((p) => p.metadata?.name ?? '');
    const unbound = pod('ns1', 'late', 'n1');
    unbound.spec = { ...unbound.spec!, nodeName: undefined };
    await api.core.createNamespacedPod({ namespace: 'ns1', body: unbound });
    expect(await names('spec.nodeName=')).toEqual(['late']);
    const bound = api.server.get<V1Pod>('pods', 'ns1', 'late')!;
    api.server.update('pods', { ...bound, spec: { ...bound.spec!, nodeName: 'n2' } });
    expect(await names('spec.nodeName=n2')).toEqual(['late', 'web-2']);
    expect(await names('spec.nodeName=')).toEqual([]);
    expect(await names('spec.nodeName=n1')).not.toContain('late');
    await api.core.deleteNamespacedPod({ namespace: 'ns1', name: 'late', gracePeriodSeconds: 0 });
    expect(await names('spec.nodeName=n2')).toEqual(['web-2']);
  });

  it('combines a label and a field selector within one namespace', async () => {
    const list = await api.core.listNamespacedPod({
      namespace: 'ns1',
      labelSelector: 'app=web',
      fieldSelector: 'spec.nodeName=n1',
    });
    expect(list.items.map((p) => p.metadata?.name)).toEqual(['web-1']);
  });

  it('refuses a field selector on an unsupported field with 400', async () => {
    const status = await failure(api.core.listNode({ fieldSelector: 'spec.podCIDR=x' }));
    expect(status).toMatchObject({
      code: 400,
      reason: 'BadRequest',
      message: 'field label not supported: spec.podCIDR',
    });
  });

  it('refuses a malformed label selector with 400', async () => {
    const status = await failure(api.core.listNode({ labelSelector: 'a=b,' }));
    expect(status).toMatchObject({ code: 400, reason: 'BadRequest' });
  });
});

describe('replace (PUT)', () => {
  it('answers 409 Conflict when metadata.resourceVersion is stale', async () => {
    const first = await api.core.createNode({ body: node('n1') });
    await api.core.patchNode({ name: 'n1', body: { metadata: { labels: { a: 'b' } } } }, merge);
    const status = await failure(
      api.core.replaceNode({ name: 'n1', body: { ...first, spec: { unschedulable: true } } }),
    );
    expect(status).toMatchObject({ code: 409, reason: 'Conflict', details: { name: 'n1', kind: 'nodes' } });
    expect(status.message).toContain('the object has been modified');
    expect(api.server.get<V1Node>('nodes', undefined, 'n1')?.spec?.unschedulable).toBeUndefined();
  });

  it('writes with the current resourceVersion and answers the next one', async () => {
    const current = await api.core.createNode({ body: node('n1') });
    const replaced = await api.core.replaceNode({
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
    await api.core.createNode({ body: node('n1') });
    await api.core.patchNode({ name: 'n1', body: { metadata: { labels: { a: 'b' } } } }, merge);
    const replaced = await api.core.replaceNode({
      name: 'n1',
      body: { metadata: { name: 'n1' }, spec: { unschedulable: true } },
    });
    expect(replaced.spec?.unschedulable).toBe(true);
    expect(replaced.metadata?.labels).toBeUndefined();
  });

  it('keeps uid and creationTimestamp whatever the body says', async () => {
    const created = await api.core.createNode({ body: node('n1') });
    const replaced = await api.core.replaceNode({
      name: 'n1',
      body: { metadata: { name: 'n1', uid: 'forged', creationTimestamp: new Date(0) } },
    });
    expect(replaced.metadata?.uid).toBe(created.metadata?.uid);
    expect(replaced.metadata?.creationTimestamp).toEqual(created.metadata?.creationTimestamp);
  });

  it('refuses a body named differently from the URL with 400', async () => {
    await api.core.createNode({ body: node('n1') });
    const status = await failure(api.core.replaceNode({ name: 'n1', body: node('n2') }));
    expect(status).toMatchObject({ code: 400, reason: 'BadRequest' });
  });

  it('ignores status on the main resource and changes only status through /status', async () => {
    await api.core.createNode({ body: { ...node('n1'), status: { nodeInfo: { bootID: 'a' } as never } } });
    const current = await api.core.readNode({ name: 'n1' });
    const main = await api.core.replaceNode({
      name: 'n1',
      body: { ...current, spec: { unschedulable: true }, status: { nodeInfo: { bootID: 'b' } as never } },
    });
    expect(main.status?.nodeInfo?.bootID).toBe('a');
    const viaStatus = await api.core.replaceNodeStatus({
      name: 'n1',
      body: { ...main, spec: { unschedulable: false }, status: { nodeInfo: { bootID: 'b' } as never } },
    });
    expect(viaStatus.status?.nodeInfo?.bootID).toBe('b');
    expect(viaStatus.spec?.unschedulable).toBe(true);
  });

  it('does not bump resourceVersion for a write that changes nothing', async () => {
    const created = await api.core.createNode({ body: node('n1', { a: 'b' }) });
    const same = await api.core.patchNode({ name: 'n1', body: { metadata: { labels: { a: 'b' } } } }, merge);
    expect(same.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);
  });
});

describe('delete', () => {
  it('removes a node and answers a Success Status', async () => {
    await api.core.createNode({ body: node('n1') });
    const answer = await api.core.deleteNode({ name: 'n1' });
    expect(answer).toMatchObject({ status: 'Success' });
    expect(api.server.get('nodes', undefined, 'n1')).toBeUndefined();
    expect(await failure(api.core.deleteNode({ name: 'n1' }))).toMatchObject({
      code: 404,
      reason: 'NotFound',
    });
  });

  it('answers 409 Conflict when a precondition does not hold', async () => {
    await api.core.createNode({ body: node('n1') });
    const status = await failure(
      api.core.deleteNode({ name: 'n1', body: { preconditions: { uid: 'other' } } }),
    );
    expect(status).toMatchObject({ code: 409, reason: 'Conflict' });
    expect(api.server.get('nodes', undefined, 'n1')).toBeDefined();
  });

  it('removes a pod at once in the default immediate mode', async () => {
    await api.core.createNamespacedPod({ namespace: 'ns', body: pod('ns', 'web-1', 'n1') });
    const answer = await api.core.deleteNamespacedPod({ name: 'web-1', namespace: 'ns' });
    expect(answer.metadata?.name).toBe('web-1');
    expect(api.server.get('pods', 'ns', 'web-1')).toBeUndefined();
  });
});

describe('namespaces', () => {
  it('creates, lists and deletes namespaces', async () => {
    await api.core.createNamespace({ body: { metadata: { name: 'kube-system' } } });
    expect((await api.core.listNamespace()).items.map((n) => n.metadata?.name)).toEqual(['kube-system']);
    expect((await api.core.readNamespace({ name: 'kube-system' })).kind).toBe('Namespace');
    await api.core.deleteNamespace({ name: 'kube-system' });
    expect((await api.core.listNamespace()).items).toEqual([]);
  });
});

describe('in-process access', () => {
  it('creates, reads, updates and deletes objects as wire JSON without HTTP', async () => {
    const created = api.server.create<V1Pod>('pods', pod('ns', 'web-1', 'n1'));
    expect(created.metadata?.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const updated = api.server.update<V1Pod>('pods', {
      ...created,
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    });
    expect(Number(updated.metadata?.resourceVersion)).toBe(Number(created.metadata?.resourceVersion) + 1);
    const viaHttp = await api.core.readNamespacedPod({ name: 'web-1', namespace: 'ns' });
    expect(viaHttp.status?.conditions?.[0]?.type).toBe('Ready');
    expect(api.server.list<V1Pod>('pods', 'ns').map((p) => p.metadata?.name)).toEqual(['web-1']);
    expect(api.server.list<V1Pod>('pods', 'other')).toEqual([]);
    api.server.delete('pods', 'ns', 'web-1');
    expect(api.server.get('pods', 'ns', 'web-1')).toBeUndefined();
    expect(requestsOf(api.server)).toEqual(['GET /api/v1/namespaces/ns/pods/web-1']);
  });

  it('throws a 409 ApiError on a duplicate create and a 404 on update of a missing object', () => {
    api.server.create('nodes', node('n1'));
    expect(() => api.server.create('nodes', node('n1'))).toThrow(
      expect.objectContaining({ status: expect.objectContaining({ code: 409 }) }),
    );
    expect(() => api.server.update('nodes', node('n9'))).toThrow(
      expect.objectContaining({ status: expect.objectContaining({ code: 404 }) }),
    );
  });
});
