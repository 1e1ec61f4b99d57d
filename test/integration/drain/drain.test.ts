// KubeDrainer through the real client-node against the fake API server.
import { afterEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { waitFor, realDelay } from '../../fakes/wait-for.js';
import { FakeClock } from '../../fakes/fake-clock.js';
import type { V1Pod, V1PodDisruptionBudget } from '../../../src/kube/kube.js';
import { SystemClock } from '../../../src/clock/clock.js';
import { ClientNodeKube } from '../../../src/kube/client.js';
import type { Kube } from '../../../src/kube/kube.js';
import { KubeDrainer, type KubeDrainerOptions } from '../../../src/drain/kube-drainer.js';
import { parseLabelSelector } from '../../../src/selector/label-selector.js';
import { type FakeApiServer, type FakeApiServerOptions } from '../../../src/sim/fake-api-server.js';
import { testDrainer } from '../../fakes/drainer.js';

const NODE = 'n1';

let server: FakeApiServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(
  options: FakeApiServerOptions = {},
): Promise<{ server: FakeApiServer; kube: ClientNodeKube }> {
  server = await startClusterApiServer(options);
  return { server, kube: server.kubeInMemory() };
}

interface PodSpec {
  name: string;
  namespace?: string;
  node?: string;
  labels?: Record<string, string>;
  owner?: string;
  mirror?: boolean;
  phase?: string;
  emptyDir?: boolean;
  grace?: number;
}

function pod(p: PodSpec): V1Pod {
  return {
    metadata: {
      name: p.name,
      namespace: p.namespace ?? 'default',
      labels: p.labels ?? { app: p.name },
      ...(p.mirror === true ? { annotations: { 'kubernetes.io/config.mirror': 'hash' } } : {}),
      ...(p.owner === undefined
        ? {}
        : {
            ownerReferences: [
              { apiVersion: 'apps/v1', kind: p.owner, name: 'owner', uid: 'owner-uid', controller: true },
            ],
          }),
    },
    spec: {
      nodeName: p.node ?? NODE,
      containers: [{ name: 'c', image: 'busybox' }],
      ...(p.grace === undefined ? {} : { terminationGracePeriodSeconds: p.grace }),
      ...(p.emptyDir === true ? { volumes: [{ name: 'scratch', emptyDir: {} }] } : {}),
    },
    status: { phase: p.phase ?? 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

function pdb(name: string, app: string, minAvailable: number): V1PodDisruptionBudget {
  return {
    metadata: { name, namespace: 'default' },
    spec: { minAvailable, selector: { matchLabels: { app } } },
  };
}

/**
 * Wall-clock time whose timers end 1 ms before Date.now() has advanced by their delay: Node's timers
 * run on libuv's millisecond monotonic clock and do this to about 1 timer in 75.
 */
class EarlyTimersClock extends SystemClock {
  override async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    // eslint-disable-next-line no-restricted-syntax -- real time: the drain under test runs on real timers
    const end = Date.now() + ms - 1;
    await super.sleep(ms - 3, signal);
    // eslint-disable-next-line no-restricted-syntax -- real time: the drain under test runs on real timers
    while (Date.now() < end) await new Promise((resolve) => setImmediate(resolve));
  }
}

function drainer(kube: Kube, o: Partial<KubeDrainerOptions> = {}): KubeDrainer {
  return testDrainer(kube, NODE, { evictionRetryDelayMs: 5_000, ...o });
}

function evictionRequests(s: FakeApiServer, name?: string): { status: number; at: number }[] {
  return s.requests.filter(
    (r) =>
      r.method === 'POST' &&
      r.path.endsWith('/eviction') &&
      (name === undefined || r.path.includes(`/pods/${name}/`)),
  );
}

function podNames(s: FakeApiServer): string[] {
  return s
    .list<V1Pod>('pods')
    .filter((p) => p.spec?.nodeName === NODE)
    .map((p) => p.metadata!.name!)
    .sort();
}

describe('KubeDrainer', () => {
  it('skips DaemonSet, mirror and terminal pods, evicts emptyDir and unmanaged pods, leaves other nodes alone', async () => {
    const { server: s, kube } = await start();
    s.create('pods', pod({ name: 'ds-agent', owner: 'DaemonSet', namespace: 'kube-system' }));
    s.create('pods', pod({ name: 'kube-apiserver-n1', mirror: true, namespace: 'kube-system' }));
    s.create('pods', pod({ name: 'job-done', phase: 'Succeeded', owner: 'Job' }));
    s.create('pods', pod({ name: 'job-failed', phase: 'Failed', owner: 'Job' }));
    s.create('pods', pod({ name: 'cache', emptyDir: true, owner: 'ReplicaSet' }));
    s.create('pods', pod({ name: 'bare' }));
    s.create('pods', pod({ name: 'elsewhere', node: 'n2' }));
    const result = await drainer(kube).drain();
    expect(result).toMatchObject({
      ok: true,
      pending: [],
      requests: { evicted: 2, refused: 0, failed: 0 },
    });
    expect(result.evicted.sort()).toEqual(['default/bare', 'default/cache']);
    expect(result.skipped).toEqual(
      expect.arrayContaining([
        { pod: 'kube-system/ds-agent', reason: 'DaemonSet-owned' },
        { pod: 'kube-system/kube-apiserver-n1', reason: 'mirror pod' },
        { pod: 'default/job-done', reason: 'terminal (Succeeded)' },
        { pod: 'default/job-failed', reason: 'terminal (Failed)' },
      ]),
    );
    expect(result.skipped).toHaveLength(4);
    expect(podNames(s)).toEqual(['ds-agent', 'job-done', 'job-failed', 'kube-apiserver-n1']);
    expect(s.list<V1Pod>('pods').some((p) => p.metadata?.name === 'elsewhere')).toBe(true);
  });

  it('drains only pods matched by --drain-pod-selector', async () => {
    const { server: s, kube } = await start();
    s.create('pods', pod({ name: 'web', labels: { tier: 'web' } }));
    s.create('pods', pod({ name: 'db', labels: { tier: 'db' } }));
    const result = await drainer(kube, { podSelector: parseLabelSelector('tier=web') }).drain();
    expect(result.evicted).toEqual(['default/web']);
    expect(result.skipped).toEqual([{ pod: 'default/db', reason: 'not matched by --drain-pod-selector' }]);
    expect(podNames(s)).toEqual(['db']);
  });

  it.each([
    ['the system clock', new SystemClock()],
    ["timers ending 1 ms early, as Node's do now and then", new EarlyTimersClock()],
  ])(
    'retries a PDB refusal only every --eviction-retry-delay and reports the refusing PDB at --drain-timeout, with %s',
    async (_name, clock) => {
      const { server: s, kube } = await start();
      s.create('pods', pod({ name: 'web-1', labels: { app: 'web' } }));
      s.create('pods', pod({ name: 'free' }));
      s.create('poddisruptionbudgets', pdb('web-pdb', 'web', 1));
      const delayMs = 250;
      const timeoutMs = 1_300;
      const result = await drainer(kube, { evictionRetryDelayMs: delayMs, timeoutMs, clock }).drain();
      const attempts = evictionRequests(s, 'web-1');
      // A retry leaves when a full delay has passed since the answer to the previous request, which
      // came after that request arrived here: arrivals (the server's clock is the drainer's) are at
      // least one delay apart, however slow the machine. None leaves after the deadline, so at most
      // 0, 250, …, 1250 ms: six. (A slow machine only makes them fewer.)
      const gaps = attempts.slice(1).map((r, i) => r.at - attempts[i]!.at);
      expect(gaps.filter((gap) => gap < delayMs)).toEqual([]);
      expect(attempts.length).toBeGreaterThanOrEqual(3);
      expect(attempts.length).toBeLessThanOrEqual(Math.floor(timeoutMs / delayMs) + 1);
      expect(attempts.every((r) => r.status === 429)).toBe(true);
      expect(result).toMatchObject({
        ok: false,
        evicted: ['default/free'],
        pending: [
          { pod: 'default/web-1', pdb: 'default/web-pdb', reason: expect.stringMatching(/eviction refused/) },
        ],
        requests: { evicted: 1, refused: attempts.length, failed: 0 },
      });
      expect(result.durationMs).toBeGreaterThanOrEqual(1_250);
      expect(result.durationMs).toBeLessThan(5_000);
    },
  );

  it('names the refusing PDB by matching its selector when the 429 does not say', async () => {
    const { server: s, kube } = await start();
    s.create('pods', pod({ name: 'web-1', labels: { app: 'web' } }));
    s.create('poddisruptionbudgets', pdb('web-pdb', 'web', 1));
    // kube's words for a budget's refusal, without the cause that names the budget
    const message = "Cannot evict pod as it would violate the pod's disruption budget.";
    s.injectFailure({ method: 'POST', pathIncludes: '/eviction' }, 429, 1, { message });
    const result = await drainer(kube, { evictionRetryDelayMs: 100, timeoutMs: 50 }).drain();
    expect(result.pending).toEqual([
      expect.objectContaining({ pod: 'default/web-1', pdb: 'default/web-pdb' }),
    ]);
  });

  it('evicts the refused pod once the budget allows it', async () => {
    const { server: s, kube } = await start();
    s.create('pods', pod({ name: 'web-1', labels: { app: 'web' } }));
    s.create('poddisruptionbudgets', pdb('web-pdb', 'web', 1));
    // the budget allows an eviction only later: a second replica comes up 300 ms in (real time; the
    // drain retries on the system clock)
    // eslint-disable-next-line no-restricted-syntax -- real time: the drain under test runs on real timers
    setTimeout(() => {
      s.create('pods', pod({ name: 'web-2', node: 'n2', labels: { app: 'web' } }));
    }, 300);
    const result = await drainer(kube, { evictionRetryDelayMs: 200 }).drain();
    expect(result).toMatchObject({ ok: true, evicted: ['default/web-1'] });
    expect(result.requests.refused).toBeGreaterThanOrEqual(1);
    expect(result.requests.refused).toBeLessThanOrEqual(4);
  });

  it('treats an eviction answered 404 as done', async () => {
    const { server: s, kube } = await start();
    s.create('pods', pod({ name: 'vanishing' }));
    s.injectFailure({ method: 'POST', pathIncludes: '/pods/vanishing/eviction' }, 404, 1);
    const result = await drainer(kube).drain();
    expect(result).toMatchObject({
      ok: true,
      evicted: ['default/vanishing'],
      requests: { evicted: 0, refused: 0, failed: 0 },
    });
    expect(evictionRequests(s)).toHaveLength(1);
  });

  it('retries a failed eviction after the delay and counts the failure', async () => {
    const { server: s, kube } = await start();
    s.create('pods', pod({ name: 'flaky' }));
    s.injectFailure({ method: 'POST', pathIncludes: '/eviction' }, 422, 2);
    const result = await drainer(kube, { evictionRetryDelayMs: 50 }).drain();
    expect(result).toMatchObject({
      ok: true,
      evicted: ['default/flaky'],
      requests: { evicted: 1, failed: 2 },
    });
  });

  it('fails the drain after three answers about the pod or the request, naming the pod and the answer, whatever --drain-timeout says', async () => {
    const { server: s, kube } = await start();
    s.create('pods', pod({ name: 'broken' }));
    s.create('pods', pod({ name: 'fine' }));
    s.injectFailure({ method: 'POST', pathIncludes: '/pods/broken/eviction' }, 422, 100);
    const result = await drainer(kube, { evictionRetryDelayMs: 50, timeoutMs: 0 }).drain();
    expect(result.ok).toBe(false);
    expect(result.stopped).toContain('eviction of default/broken failed 3 times');
    expect(result.stopped).toContain('(422)');
    expect(evictionRequests(s, 'broken')).toHaveLength(3);
    expect(result.requests.failed).toBe(3);
  });

  it('retries a 403 for a namespace being deleted like a refusal, and evicts once it is allowed', async () => {
    const { server: s, kube } = await start();
    s.create('pods', pod({ name: 'web' }));
    const causes = [{ reason: 'NamespaceTerminating', message: 'namespace default is being terminated' }];
    s.injectFailure({ method: 'POST', pathIncludes: '/eviction' }, 403, 4, { causes });
    const result = await drainer(kube, { evictionRetryDelayMs: 20 }).drain();
    expect(result).toMatchObject({ ok: true, evicted: ['default/web'] });
    expect(evictionRequests(s, 'web')).toHaveLength(5);
  });

  it('counts each eviction request as it happens, before the drain returns', async () => {
    const { server: s, kube } = await start();
    s.create('pods', pod({ name: 'web-1', labels: { app: 'web' } }));
    s.create('poddisruptionbudgets', pdb('web-pdb', 'web', 1));
    const seen: string[] = [];
    let ended = false;
    const draining = drainer(kube, { evictionRetryDelayMs: 20, timeoutMs: 3_000 })
      .drain(undefined, { onEviction: (outcome) => seen.push(outcome) })
      .finally(() => (ended = true));
    await waitFor(() => seen.length >= 2 || ended, 'two refused evictions or the end of the drain');
    const endedFirst = ended;
    const result = await draining;
    expect(endedFirst).toBe(false);
    expect(seen.every((o) => o === 'refused')).toBe(true);
    expect(seen).toHaveLength(result.requests.refused);
  });

  it('asks between rounds whether to go on, and stops at once when told, saying why', async () => {
    const { server: s, kube } = await start();
    s.create('pods', pod({ name: 'web-1', labels: { app: 'web' } }));
    s.create('poddisruptionbudgets', pdb('web-pdb', 'web', 1));
    let asked = 0;
    const result = await drainer(kube, { evictionRetryDelayMs: 20, keepGoingEveryMs: 50 }).drain(undefined, {
      keepGoing: () => Promise.resolve(++asked >= 3 ? 'lock slot lost' : undefined),
    });
    expect(result).toMatchObject({ ok: false, stopped: 'lock slot lost' });
    expect(asked).toBe(3);
  });

  it('waits for evicted pods to terminate, and counts a pod recreated under the same name (new UID) as gone', async () => {
    const { server: s, kube } = await start({ podDeletion: 'graceful' });
    s.create('pods', pod({ name: 'slow', grace: 7 }));
    s.create('pods', pod({ name: 'db-0', owner: 'StatefulSet' }));
    // a kubelet: finishes 'slow' after 300 ms; 'db-0' is replaced at once by its StatefulSet
    const unsubscribe = s.onWrite((e) => {
      const p = e.object as V1Pod;
      if (e.resource !== 'pods' || e.type !== 'MODIFIED' || p.metadata?.deletionTimestamp === undefined)
        return;
      if (p.metadata.name === 'slow')
        // eslint-disable-next-line no-restricted-syntax -- real time: the drain under test runs on real timers
        setTimeout(() => {
          s.delete('pods', 'default', 'slow');
        }, 300);
      if (p.metadata.name === 'db-0') {
        // eslint-disable-next-line no-restricted-syntax -- real time: the drain under test runs on real timers
        setTimeout(() => {
          s.delete('pods', 'default', 'db-0');
          s.create('pods', pod({ name: 'db-0', owner: 'StatefulSet' }));
        }, 10);
      }
    });
    try {
      const result = await drainer(kube).drain();
      expect(result).toMatchObject({ ok: true, pending: [] });
      expect(result.evicted.sort()).toEqual(['default/db-0', 'default/slow']);
      // Returned only once 'slow' was gone (300 ms after its eviction), the new db-0 not waited for.
      expect(podNames(s)).toEqual(['db-0']);
    } finally {
      unsubscribe();
    }
  });

  it("asks for --drain-grace-period when set, and for the pod's own grace period with -1", async () => {
    const { server: s, kube } = await start({ podDeletion: 'graceful' });
    s.create('pods', pod({ name: 'a', grace: 7 }));
    const graces: number[] = [];
    const unsubscribe = s.onWrite((e) => {
      const g = (e.object as V1Pod).metadata?.deletionGracePeriodSeconds;
      if (e.resource === 'pods' && g !== undefined) graces.push(g);
    });
    try {
      await drainer(kube, { timeoutMs: 50 }).drain();
      await drainer(kube, { timeoutMs: 50, gracePeriodSeconds: 3 }).drain();
      expect(graces).toEqual([7, 3]);
    } finally {
      unsubscribe();
    }
  });

  it('reports pods still terminating at --drain-timeout as pending', async () => {
    const { server: s, kube } = await start({ podDeletion: 'graceful' });
    s.create('pods', pod({ name: 'stuck' }));
    const result = await drainer(kube, { timeoutMs: 200 }).drain();
    expect(result).toMatchObject({
      ok: false,
      evicted: [],
      pending: [{ pod: 'default/stuck', reason: 'still terminating at --drain-timeout' }],
      requests: { evicted: 1 },
    });
  });

  it.each([
    ['31 minutes behind ours (our clock runs fast)', -31 * 60_000],
    ['31 minutes ahead of ours (our clock runs slow)', 31 * 60_000],
  ])(
    'counts --skip-wait-for-delete-timeout from when it first saw the pod deleting, with the server clock %s',
    async (_name, clockOffsetMs) => {
      const { server: s, kube } = await start({ podDeletion: 'graceful', clockOffsetMs });
      s.create('pods', pod({ name: 'stuck' }));
      // a minute's grace: a pod deleting since (by the server's clock) 31 minutes is still waited for
      const waited = await drainer(kube, { timeoutMs: 1_500, skipWaitForDeleteTimeoutSeconds: 60 }).drain();
      expect(waited).toMatchObject({ ok: false, pending: [{ pod: 'default/stuck' }] });
      // one second of our own: skipped after about a second, not at once and not never
      const skipped = await drainer(kube, { timeoutMs: 5_000, skipWaitForDeleteTimeoutSeconds: 1 }).drain();
      expect(skipped).toMatchObject({ ok: true, evicted: ['default/stuck'] });
      expect(skipped.durationMs).toBeGreaterThanOrEqual(1_000);
      expect(skipped.durationMs).toBeLessThan(4_000);
    },
  );

  it('keeps at most 5 evictions in flight', async () => {
    const { server: s, kube } = await start();
    for (let i = 0; i < 12; i++) s.create('pods', pod({ name: `p${i}` }));
    let inFlight = 0;
    let maxInFlight = 0;
    const counting = new Proxy(kube, {
      get(target, prop, receiver): unknown {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (prop !== 'evictPod' || typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          maxInFlight = Math.max(maxInFlight, ++inFlight);
          try {
            // each eviction stays in flight a moment of real time, so that the drainer's parallel ones overlap
            await realDelay(20);
            return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          } finally {
            inFlight--;
          }
        };
      },
    });
    const result = await drainer(counting).drain();
    expect(result.evicted).toHaveLength(12);
    expect(maxInFlight).toBe(5);
  });

  it("rejects with the signal's reason when aborted, even with no --drain-timeout", async () => {
    const { server: s, kube } = await start();
    s.create('pods', pod({ name: 'web-1', labels: { app: 'web' } }));
    s.create('poddisruptionbudgets', pdb('web-pdb', 'web', 1));
    const controller = new AbortController();
    const clock = new FakeClock('2026-01-05T10:00:00Z');
    let asked = 0; // evictions asked of the client, counted as the drainer calls it
    const counting = new Proxy(kube, {
      get(target, prop, receiver): unknown {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (prop !== 'evictPod' || typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          asked++;
          return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        };
      },
    });
    const draining = drainer(counting, { clock, evictionRetryDelayMs: 100 }).drain(controller.signal);
    // Refused once, the drain waits out its retry delay on the clock: aborted there.
    await waitFor(() => evictionRequests(s).length === 1 && clock.pending === 1, 'the drain waits to retry');
    controller.abort(new Error('shutting down'));
    await expect(draining).rejects.toThrow('shutting down');
    await clock.advance(10 * 100); // ten retry delays: a drain that went on would ask again
    expect(asked).toBe(1);
  });
});
