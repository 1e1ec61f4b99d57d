/* eslint-disable @typescript-eslint/no-unsafe-class-instance-assignment, @typescript-eslint/no-misused-spread --
   client-node models are classes, yet its API sends them as plain JSON: object literals are how tests write Kubernetes objects. */
// Pod deletion, policy/v1 eviction and PodDisruptionBudget status of the fake API server, through client-node.
import { afterEach, describe, expect, it } from '@jest/globals';
import {
  CoreV1Api,
  PolicyV1Api,
  type V1Pod,
  type V1PodDisruptionBudget,
  type V1PodDisruptionBudgetSpec,
} from '@kubernetes/client-node';
import {
  startFakeApiServer,
  type FakeApiServer,
  type FakeApiServerOptions,
} from '../../../src/sim/fake-api-server.js';
import { failure } from '../../fakes/api-failure.js';
import { FakeClock } from '../../fakes/fake-clock.js';

let server: FakeApiServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(
  options: FakeApiServerOptions = {},
): Promise<{ core: CoreV1Api; policy: PolicyV1Api; api: FakeApiServer }> {
  const api = await startFakeApiServer(options);
  server = api;
  return {
    core: api.kubeConfig().makeApiClient(CoreV1Api),
    policy: api.kubeConfig().makeApiClient(PolicyV1Api),
    api,
  };
}

function pod(
  name: string,
  options: { ready?: boolean; phase?: string; nodeName?: string; grace?: number } = {},
): V1Pod {
  const ready = options.ready ?? true;
  return {
    metadata: { name, namespace: 'ns', labels: { app: 'web' } },
    spec: {
      nodeName: options.nodeName ?? 'n1',
      containers: [{ name: 'c' }],
      ...(options.grace === undefined ? {} : { terminationGracePeriodSeconds: options.grace }),
    },
    status: {
      phase: options.phase ?? 'Running',
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
    },
  };
}

function budget(
  name: string,
  spec: Omit<V1PodDisruptionBudgetSpec, 'selector'>,
  app = 'web',
): V1PodDisruptionBudget {
  return { metadata: { name, namespace: 'ns' }, spec: { ...spec, selector: { matchLabels: { app } } } };
}

function evict(core: CoreV1Api, name: string, gracePeriodSeconds?: number): Promise<unknown> {
  return core.createNamespacedPodEviction({
    name,
    namespace: 'ns',
    body: {
      metadata: { name, namespace: 'ns' },
      ...(gracePeriodSeconds === undefined ? {} : { deleteOptions: { gracePeriodSeconds } }),
    },
  });
}

describe('eviction', () => {
  it('evicts a pod no budget covers: 201, and the pod is gone', async () => {
    const { core, api } = await start();
    api.create('pods', pod('web-1'));
    await evict(core, 'web-1');
    expect(api.requests.at(-1)).toMatchObject({
      method: 'POST',
      path: '/api/v1/namespaces/ns/pods/web-1/eviction',
      status: 201,
    });
    expect(api.get('pods', 'ns', 'web-1')).toBeUndefined();
  });

  it('answers 404 NotFound for a pod that is gone', async () => {
    const { core } = await start();
    expect(await failure(evict(core, 'web-1'))).toMatchObject({
      kind: 'Status',
      code: 404,
      reason: 'NotFound',
      details: { name: 'web-1', kind: 'pods' },
    });
  });

  it('answers 429 TooManyRequests with a DisruptionBudget cause while the budget allows no disruption', async () => {
    const { core, policy, api } = await start();
    api.create('pods', pod('web-1'));
    api.create('pods', pod('web-2'));
    await policy.createNamespacedPodDisruptionBudget({
      namespace: 'ns',
      body: budget('web', { minAvailable: 2 }),
    });
    const status = await failure(evict(core, 'web-1'));
    expect(status).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      code: 429,
      reason: 'TooManyRequests',
      message: "Cannot evict pod as it would violate the pod's disruption budget.",
      details: {
        causes: [
          {
            reason: 'DisruptionBudget',
            message: 'The disruption budget web needs 2 healthy pods and has 2 currently',
          },
        ],
      },
    });
    expect(api.get('pods', 'ns', 'web-1')).toBeDefined();
  });

  it('lets evictions through until the budget is spent, recounting the pods that remain', async () => {
    const { core, policy, api } = await start();
    for (const name of ['web-1', 'web-2', 'web-3']) api.create('pods', pod(name));
    await policy.createNamespacedPodDisruptionBudget({
      namespace: 'ns',
      body: budget('web', { minAvailable: 2 }),
    });
    await evict(core, 'web-1');
    expect(await failure(evict(core, 'web-2'))).toMatchObject({ code: 429 });
    api.create('pods', pod('web-4'));
    await evict(core, 'web-2');
    expect(api.list<V1Pod>('pods', 'ns').map((p) => p.metadata?.name)).toEqual(['web-3', 'web-4']);
  });

  it('evicts an unready pod while the budget is met without it', async () => {
    const { core, policy, api } = await start();
    api.create('pods', pod('web-1'));
    api.create('pods', pod('web-2'));
    api.create('pods', pod('web-3', { ready: false }));
    await policy.createNamespacedPodDisruptionBudget({
      namespace: 'ns',
      body: budget('web', { minAvailable: 2 }),
    });
    expect(await failure(evict(core, 'web-1'))).toMatchObject({ code: 429 });
    await evict(core, 'web-3');
    expect(api.get('pods', 'ns', 'web-3')).toBeUndefined();
  });

  it.each([['Pending'], ['Succeeded'], ['Failed']])(
    'evicts a %s pod whatever its budget says',
    async (phase) => {
      const { core, policy, api } = await start();
      api.create('pods', pod('web-1', { phase, ready: false }));
      await policy.createNamespacedPodDisruptionBudget({
        namespace: 'ns',
        body: budget('web', { minAvailable: 5 }),
      });
      await evict(core, 'web-1');
      expect(api.get('pods', 'ns', 'web-1')).toBeUndefined();
    },
  );

  it('answers 500 when more than one budget covers the pod, as kube does', async () => {
    const { core, policy, api } = await start();
    api.create('pods', pod('web-1'));
    await policy.createNamespacedPodDisruptionBudget({
      namespace: 'ns',
      body: budget('a', { maxUnavailable: 1 }),
    });
    await policy.createNamespacedPodDisruptionBudget({
      namespace: 'ns',
      body: budget('b', { maxUnavailable: 1 }),
    });
    expect(await failure(evict(core, 'web-1'))).toMatchObject({ code: 500, reason: 'InternalError' });
  });

  it('ignores budgets of other namespaces and other selectors', async () => {
    const { core, policy, api } = await start();
    api.create('pods', pod('web-1'));
    await policy.createNamespacedPodDisruptionBudget({
      namespace: 'ns',
      body: budget('db', { minAvailable: 1 }, 'db'),
    });
    await policy.createNamespacedPodDisruptionBudget({
      namespace: 'other',
      body: { ...budget('web', { minAvailable: 1 }), metadata: { name: 'web', namespace: 'other' } },
    });
    await evict(core, 'web-1');
    expect(api.get('pods', 'ns', 'web-1')).toBeUndefined();
  });
});

describe('PodDisruptionBudget status', () => {
  interface Case {
    name: string;
    spec: Omit<V1PodDisruptionBudgetSpec, 'selector'>;
    ready: number;
    unready: number;
    /** expectedPods, currentHealthy, desiredHealthy, disruptionsAllowed */
    want: [number, number, number, number];
  }
  const cases: Case[] = [
    { name: 'minAvailable as an int', spec: { minAvailable: 1 }, ready: 3, unready: 0, want: [3, 3, 1, 2] },
    {
      name: 'minAvailable as a percentage, rounded up',
      spec: { minAvailable: '50%' },
      ready: 3,
      unready: 0,
      want: [3, 3, 2, 1],
    },
    {
      name: 'maxUnavailable as an int',
      spec: { maxUnavailable: 1 },
      ready: 3,
      unready: 0,
      want: [3, 3, 2, 1],
    },
    {
      name: 'maxUnavailable as a percentage, rounded up',
      spec: { maxUnavailable: '34%' },
      ready: 3,
      unready: 0,
      want: [3, 3, 1, 2],
    },
    {
      name: 'unready pods, which are not healthy',
      spec: { minAvailable: 2 },
      ready: 2,
      unready: 1,
      want: [3, 2, 2, 0],
    },
    { name: 'maxUnavailable 0', spec: { maxUnavailable: 0 }, ready: 3, unready: 0, want: [3, 3, 3, 0] },
    { name: 'no pods', spec: { minAvailable: 1 }, ready: 0, unready: 0, want: [0, 0, 1, 0] },
  ];
  it.each(cases)('is computed by the server for $name', async ({ spec, ready, unready, want }) => {
    const { policy, api } = await start();
    for (let i = 0; i < ready; i++) api.create('pods', pod(`web-r${String(i)}`));
    for (let i = 0; i < unready; i++) api.create('pods', pod(`web-u${String(i)}`, { ready: false }));
    api.create('pods', {
      ...pod('db-1'),
      metadata: { name: 'db-1', namespace: 'ns', labels: { app: 'db' } },
    });
    await policy.createNamespacedPodDisruptionBudget({ namespace: 'ns', body: budget('web', spec) });
    const read = await policy.readNamespacedPodDisruptionBudget({ name: 'web', namespace: 'ns' });
    const s = read.status;
    expect([s?.expectedPods, s?.currentHealthy, s?.desiredHealthy, s?.disruptionsAllowed]).toEqual(want);
    expect(s?.observedGeneration).toBe(1);
    expect(s?.conditions?.[0]).toMatchObject({
      type: 'DisruptionAllowed',
      status: want[3] > 0 ? 'True' : 'False',
    });
  });

  it('follows pods becoming ready and being deleted, and lists across namespaces', async () => {
    const { policy, api } = await start();
    const p = api.create<V1Pod>('pods', pod('web-1', { ready: false }));
    await policy.createNamespacedPodDisruptionBudget({
      namespace: 'ns',
      body: budget('web', { minAvailable: 0 }),
    });
    const allowed = async (): Promise<number | undefined> =>
      (await policy.listPodDisruptionBudgetForAllNamespaces()).items[0]?.status?.disruptionsAllowed;
    expect(await allowed()).toBe(0);
    api.update('pods', {
      ...p,
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    });
    expect(await allowed()).toBe(1);
    api.delete('pods', 'ns', 'web-1');
    expect(await allowed()).toBe(0);
  });

  it('ignores a status written by a client and recomputes it for the new spec', async () => {
    const { policy, api } = await start();
    api.create('pods', pod('web-1'));
    await policy.createNamespacedPodDisruptionBudget({
      namespace: 'ns',
      body: budget('web', { minAvailable: 0 }),
    });
    const current = await policy.readNamespacedPodDisruptionBudget({ name: 'web', namespace: 'ns' });
    const written = await policy.replaceNamespacedPodDisruptionBudget({
      name: 'web',
      namespace: 'ns',
      body: {
        ...current,
        spec: { ...current.spec, minAvailable: 1 },
        status: { ...current.status!, disruptionsAllowed: 9 },
      },
    });
    // the write keeps the stored status; the server then recomputes it for the new spec, like the
    // disruption controller does right after
    expect(written.status?.disruptionsAllowed).toBe(1);
    expect(written.metadata?.generation).toBe(2);
    const read = await policy.readNamespacedPodDisruptionBudget({ name: 'web', namespace: 'ns' });
    expect(read.status?.disruptionsAllowed).toBe(0);
    expect(read.status?.observedGeneration).toBe(2);
  });
});

describe('graceful pod deletion', () => {
  const clock = (): FakeClock => new FakeClock('2026-01-05T10:00:00Z');

  it.each([
    ['the query', { gracePeriodSeconds: 10 }, 10],
    ['the body', { body: { gracePeriodSeconds: 20 } }, 20],
    ['the pod spec', {}, 45],
  ])(
    'marks the pod with a grace period from %s and leaves it for the kubelet',
    async (_name, options, seconds) => {
      const { core, api } = await start({ podDeletion: 'graceful', clock: clock() });
      api.create('pods', pod('web-1', { grace: 45 }));
      const answer = await core.deleteNamespacedPod({ name: 'web-1', namespace: 'ns', ...options });
      expect(answer.metadata?.deletionGracePeriodSeconds).toBe(seconds);
      const stored = api.get<V1Pod>('pods', 'ns', 'web-1');
      expect(String(stored?.metadata?.deletionTimestamp)).toBe(
        new Date(Date.parse('2026-01-05T10:00:00Z') + seconds * 1000).toISOString().replace('.000', ''),
      );
      expect(stored?.metadata?.deletionGracePeriodSeconds).toBe(seconds);
      api.delete('pods', 'ns', 'web-1');
      expect(api.get('pods', 'ns', 'web-1')).toBeUndefined();
    },
  );

  it('defaults to 30 seconds, as kube does', async () => {
    const { core, api } = await start({ podDeletion: 'graceful', clock: clock() });
    api.create('pods', pod('web-1'));
    const answer = await core.deleteNamespacedPod({ name: 'web-1', namespace: 'ns' });
    expect(answer.metadata?.deletionGracePeriodSeconds).toBe(30);
  });

  it('shortens but never extends a pending grace period', async () => {
    const { core, api } = await start({ podDeletion: 'graceful', clock: clock() });
    api.create('pods', pod('web-1'));
    await core.deleteNamespacedPod({ name: 'web-1', namespace: 'ns', gracePeriodSeconds: 30 });
    expect(
      (await core.deleteNamespacedPod({ name: 'web-1', namespace: 'ns', gracePeriodSeconds: 60 })).metadata
        ?.deletionGracePeriodSeconds,
    ).toBe(30);
    expect(
      (await core.deleteNamespacedPod({ name: 'web-1', namespace: 'ns', gracePeriodSeconds: 5 })).metadata
        ?.deletionGracePeriodSeconds,
    ).toBe(5);
  });

  it.each([
    ['a zero grace period', pod('web-1'), 0],
    ['an unscheduled pod', pod('web-1', { nodeName: '' }), undefined],
    ['a terminated pod', pod('web-1', { phase: 'Succeeded' }), undefined],
  ])('removes at once for %s', async (_name, body, gracePeriodSeconds) => {
    const { core, api } = await start({ podDeletion: 'graceful', clock: clock() });
    api.create('pods', body);
    await core.deleteNamespacedPod({
      name: 'web-1',
      namespace: 'ns',
      ...(gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds }),
    });
    expect(api.get('pods', 'ns', 'web-1')).toBeUndefined();
  });

  it('evicts gracefully and counts the terminating pod as unhealthy for its budget', async () => {
    const { core, policy, api } = await start({ podDeletion: 'graceful', clock: clock() });
    for (const name of ['web-1', 'web-2', 'web-3']) api.create('pods', pod(name));
    await policy.createNamespacedPodDisruptionBudget({
      namespace: 'ns',
      body: budget('web', { maxUnavailable: 1 }),
    });
    await evict(core, 'web-1', 7);
    expect(api.get<V1Pod>('pods', 'ns', 'web-1')?.metadata?.deletionGracePeriodSeconds).toBe(7);
    expect(await failure(evict(core, 'web-2'))).toMatchObject({ code: 429 });
    // evicting the terminating pod again is allowed (kube ignores the budget for it)
    await evict(core, 'web-1');
    api.delete('pods', 'ns', 'web-1');
    api.create('pods', pod('web-4'));
    await evict(core, 'web-2');
  });

  it('keeps the deletion mark when the kubelet writes an older copy of the pod', async () => {
    const { core, api } = await start({ podDeletion: 'graceful', clock: clock() });
    const copy = api.create<V1Pod>('pods', pod('web-1'));
    await core.deleteNamespacedPod({ name: 'web-1', namespace: 'ns' });
    api.update('pods', { ...copy, status: { phase: 'Running' } });
    expect(String(api.get<V1Pod>('pods', 'ns', 'web-1')?.metadata?.deletionTimestamp)).toBe(
      '2026-01-05T10:00:30Z',
    );
  });
});
