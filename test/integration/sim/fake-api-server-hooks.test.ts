/* eslint-disable @typescript-eslint/no-unsafe-class-instance-assignment, @typescript-eslint/no-misused-spread --
   client-node models are classes, yet its API sends them as plain JSON: object literals are how tests write Kubernetes objects. */
// The fake API server driven through the real @kubernetes/client-node, against what the Kubernetes
// API conventions say kube-apiserver does: Events, and the hooks tests use (request log, injected failures, watches ended).
import { describe, expect, it } from '@jest/globals';
import { CoreV1Api, type CoreV1Event, type V1Node } from '@kubernetes/client-node';
import { startFakeApiServer, type WriteEvent } from '../../../src/sim/fake-api-server.js';
import { failure } from '../../fakes/api-failure.js';
import { merge, node, useFakeApi } from '../../fakes/fake-api-fixtures.js';

const api = useFakeApi();

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
    await api.core.createNamespacedEvent({ namespace: 'default', body: event });
    await api.core.createNamespacedEvent({
      namespace: 'default',
      body: { ...event, metadata: { name: 'n2.reboot' }, involvedObject: { kind: 'Node', name: 'n2' } },
    });
    const bumped = await api.core.patchNamespacedEvent(
      { name: 'n1.reboot', namespace: 'default', body: { count: 2 } },
      merge,
    );
    expect(bumped.count).toBe(2);
    const list = await api.core.listNamespacedEvent({
      namespace: 'default',
      fieldSelector: 'involvedObject.name=n1,reason=RebootRequired',
    });
    expect(list.items.map((e) => [e.metadata.name, e.count])).toEqual([['n1.reboot', 2]]);
    const all = await api.core.listEventForAllNamespaces();
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
    // eslint-disable-next-line no-restricted-syntax -- real time: the fake API server stamps requests and Events on the system clock
    ['an event with eventTime but no action', nodeEvent('default', { eventTime: new Date() }), 'action'],
  ])('refuses %s with 422 Invalid, as kube does', async (_name, body, field) => {
    const status = await failure(
      api.core.createNamespacedEvent({ namespace: body.metadata.namespace ?? '', body }),
    );
    expect(status).toMatchObject({ code: 422, reason: 'Invalid' });
    expect(status.details?.causes?.map((c) => (c as { field?: string }).field)).toContain(field);
  });

  it('accepts a Node event with eventTime in kube-system when it names its reporter and action', async () => {
    const body = nodeEvent('kube-system', {
      // eslint-disable-next-line no-restricted-syntax -- real time: the fake API server stamps requests and Events on the system clock
      eventTime: new Date(),
      action: 'Reboot',
      reportingInstance: 'n1',
    });
    const created = await api.core.createNamespacedEvent({ namespace: 'kube-system', body });
    expect(created.action).toBe('Reboot');
  });
});

describe('test hooks', () => {
  it('records every request with method, path, query, content type and status', async () => {
    await api.core.createNode({ body: node('n1') });
    await api.core.listNode({ labelSelector: 'a=b' });
    await failure(api.core.readNode({ name: 'n2' }));
    expect(api.server.requests.map((r) => [r.method, r.path, r.query, r.status])).toEqual([
      ['POST', '/api/v1/nodes', {}, 201],
      ['GET', '/api/v1/nodes', { labelSelector: 'a=b' }, 200],
      ['GET', '/api/v1/nodes/n2', {}, 404],
    ]);
    expect(api.server.requests[0]?.contentType).toBe('application/json');
    // eslint-disable-next-line no-restricted-syntax -- real time: the fake API server stamps requests and Events on the system clock
    expect(api.server.requests[0]?.at).toBeLessThanOrEqual(Date.now());
  });

  it('fails the next N matching requests with a Status of the injected code, then serves again', async () => {
    await api.core.createNode({ body: node('n1') });
    api.server.injectFailure({ method: 'patch', pathIncludes: '/nodes/n1' }, 500, 2);
    const patch = (): Promise<V1Node> =>
      api.core.patchNode({ name: 'n1', body: { spec: { unschedulable: true } } }, merge);
    expect(await api.core.readNode({ name: 'n1' })).toBeDefined();
    expect(await failure(patch())).toMatchObject({ kind: 'Status', code: 500, reason: 'InternalError' });
    expect(await failure(patch())).toMatchObject({ code: 500 });
    expect((await patch()).spec?.unschedulable).toBe(true);
    expect(api.server.requests.map((r) => r.status)).toEqual([201, 200, 500, 500, 200]);
  });

  it.each([
    [409, 'Conflict'],
    [429, 'TooManyRequests'],
    [503, 'ServiceUnavailable'],
  ])('injects %i with reason %s', async (code, reason) => {
    api.server.injectFailure({}, code, 1);
    expect(await failure(api.core.listNode())).toMatchObject({ code, reason });
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
    const stop = api.server.onWrite((e: WriteEvent) =>
      seen.push(`${e.type} ${e.resource} ${e.object.metadata?.name ?? ''}`),
    );
    await api.core.createNode({ body: node('n1') });
    await failure(api.core.createNode({ body: node('n1') }));
    api.server.update('nodes', {
      ...api.server.get<V1Node>('nodes', undefined, 'n1')!,
      spec: { unschedulable: true },
    });
    expect(seen).toEqual(['ADDED nodes n1', 'MODIFIED nodes n1']);
    api.server.delete('nodes', undefined, 'n1');
    stop();
    api.server.create('nodes', node('n2'));
    expect(seen).toEqual(['ADDED nodes n1', 'MODIFIED nodes n1', 'DELETED nodes n1']);
  });
});
