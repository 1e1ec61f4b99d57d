// Issue 46: the drain tells what the API server says about the pod from what it says about itself.
// KubeDrainer through the real client against the fake API server's failure injection ('fail': the
// request is refused; 'commit-then-fail': the eviction is carried out and its answer lost).
import { afterEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { waitFor } from '../../fakes/wait-for.js';
import type { V1Pod } from '../../../src/kube/kube.js';
import { instantClock } from '../../fakes/fake-clock.js';
import { ClientNodeKube } from '../../../src/kube/client.js';
import {
  KubeDrainer,
  MAX_EVICTION_ERRORS,
  type KubeDrainerOptions,
} from '../../../src/drain/kube-drainer.js';
import type { FakeApiServer, FakeApiServerOptions } from '../../../src/sim/fake-api-server.js';
import { testDrainer } from '../../fakes/drainer.js';

const NODE = 'n1';
const ETCD = 'etcdserver: request timed out';

let server: FakeApiServer | undefined;
let kube: ClientNodeKube | undefined;

afterEach(async () => {
  kube?.close();
  await server?.close();
  server = undefined;
  kube = undefined;
});

async function start(options: FakeApiServerOptions = {}): Promise<FakeApiServer> {
  server = await startClusterApiServer(options);
  kube = new ClientNodeKube(server.kubeConfig());
  return server;
}

function pod(name: string): V1Pod {
  return {
    metadata: { name, namespace: 'default', labels: { app: name } },
    spec: { nodeName: NODE, containers: [{ name: 'c', image: 'busybox' }] },
    status: { phase: 'Running' },
  };
}

/** A drainer whose back-off after answers about the server takes its shortest (random 0: half the ceiling). */
function drainer(o: Partial<KubeDrainerOptions> = {}): KubeDrainer {
  if (kube === undefined) throw new Error('start() first');
  return testDrainer(kube, NODE, { random: () => 0, ...o });
}

function evictions(s: FakeApiServer, name: string): { status: number; at: number }[] {
  return s.requests.filter((r) => r.method === 'POST' && r.path.endsWith(`/pods/${name}/eviction`));
}

describe('an eviction answered about the API server', () => {
  it(`is sent again until it passes, however often it failed (${MAX_EVICTION_ERRORS} 500s in a row), none counted against the pod`, async () => {
    const s = await start();
    s.create('pods', pod('web-1'));
    s.injectFailure({ method: 'POST', pathIncludes: '/pods/web-1/eviction' }, 500, MAX_EVICTION_ERRORS, {
      message: ETCD,
    });
    const result = await drainer().drain();
    expect(result).toMatchObject({ ok: true, evicted: ['default/web-1'] });
    expect(result.requests).toEqual({ evicted: 1, refused: 0, failed: MAX_EVICTION_ERRORS });
    expect(evictions(s, 'web-1').map((r) => r.status)).toEqual([500, 500, 500, 201]);
  });

  it.each([
    ['gone at once (immediate deletion)', 'immediate' as const],
    ['terminating with the UID it had', 'graceful' as const],
  ])(
    'whose answer was lost after it was carried out is judged by what the cluster shows: a pod %s is evicted, and not evicted again',
    async (_name, podDeletion) => {
      const s = await start({ podDeletion });
      s.create('pods', pod('web-1'));
      s.injectFailure({ method: 'POST', pathIncludes: '/pods/web-1/eviction' }, 500, 1, {
        message: ETCD,
        mode: 'commit-then-fail',
      });
      const drained = drainer().drain();
      if (podDeletion === 'graceful') {
        // the kubelet removes the pod once it is deleting
        await waitFor(
          () => s.get<V1Pod>('pods', 'default', 'web-1')?.metadata?.deletionTimestamp !== undefined,
          'web-1 is deleting',
        );
        s.delete('pods', 'default', 'web-1');
      }
      const result = await drained;
      expect(result).toMatchObject({ ok: true, evicted: ['default/web-1'] });
      expect(evictions(s, 'web-1').map((r) => r.status)).toEqual([500]);
    },
  );

  it("waits out a 429 of API Priority and Fairness for its Retry-After, and does not take it for a budget's refusal", async () => {
    const s = await start();
    s.create('pods', pod('web-1'));
    // the fake answers every 429 with Retry-After: 1
    s.injectFailure({ method: 'POST', pathIncludes: '/pods/web-1/eviction' }, 429, 1, {
      message: 'Too many requests, please try again later.',
    });
    const result = await drainer({ evictionRetryDelayMs: 50 }).drain();
    expect(result).toMatchObject({ ok: true, evicted: ['default/web-1'] });
    expect(result.requests.refused).toBe(0);
    const [first, second] = evictions(s, 'web-1');
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1_000);
  });

  it('ends the drain at --drain-timeout saying the API server is failing, and blames no pod', async () => {
    const s = await start();
    s.create('pods', pod('web-1'));
    s.create('pods', pod('web-2'));
    s.injectFailure({ method: 'POST', pathIncludes: '/pods/web-1/eviction' }, 500, 1_000, { message: ETCD });
    const result = await drainer({ timeoutMs: 2_000 }).drain();
    expect(result.ok).toBe(false);
    expect(result.stopped).toBeUndefined();
    expect(result.serverFailure).toMatch(/^the API server is failing: etcdserver: request timed out \(500\)/);
    expect(result.evicted).toEqual(['default/web-2']);
    expect(result.pending).toEqual([
      expect.objectContaining({ pod: 'default/web-1', failure: 'api-server' }),
    ]);
  });

  it('without --drain-timeout ends the drain once such answers have lasted their limit, saying the API server is failing', async () => {
    const s = await start();
    s.create('pods', pod('web-1'));
    s.injectFailure({ method: 'POST', pathIncludes: '/pods/web-1/eviction' }, 503, 1_000);
    // the back-off's own time (not the machine's): the count below is the schedule's, on any machine
    const result = await drainer({
      timeoutMs: 0,
      serverFailureLimitMs: 2_000,
      clock: instantClock(),
    }).drain();
    expect(result.ok).toBe(false);
    expect(result.serverFailure).toMatch(
      /^the API server is failing: .*\(503\) \(eviction of default\/web-1\) for /,
    );
    expect(evictions(s, 'web-1').length).toBeGreaterThan(MAX_EVICTION_ERRORS);
  });
});

describe('an eviction answered about the pod or the request', () => {
  it('stops the drain at the first denial of an admission webhook, naming it: no retry would pass it', async () => {
    const s = await start();
    s.create('pods', pod('web-1'));
    s.injectFailure({ method: 'POST', pathIncludes: '/pods/web-1/eviction' }, 400, 100, {
      message: 'admission webhook "guard.example.com" denied the request: web-1 may not be evicted',
    });
    const result = await drainer().drain();
    expect(result.ok).toBe(false);
    expect(result.serverFailure).toBeUndefined();
    expect(result.stopped).toBe(
      'eviction of default/web-1 denied by admission webhook guard.example.com: web-1 may not be evicted',
    );
    expect(result.pending).toEqual([
      expect.objectContaining({ pod: 'default/web-1', failure: 'eviction-denied' }),
    ]);
    expect(evictions(s, 'web-1')).toHaveLength(1);
  });

  it('fails on the pod, not on the server, when at --drain-timeout one pod met 500s and another 422s (an invalid request)', async () => {
    const s = await start();
    s.create('pods', pod('web-1'));
    s.create('pods', pod('web-2'));
    s.injectFailure({ method: 'POST', pathIncludes: '/pods/web-1/eviction' }, 500, 1_000, { message: ETCD });
    s.injectFailure({ method: 'POST', pathIncludes: '/pods/web-2/eviction' }, 422, 1_000);
    const result = await drainer({ timeoutMs: 2_000 }).drain();
    expect(result.ok).toBe(false);
    expect(result.serverFailure).toBeUndefined();
    expect(result.stopped).toMatch(`eviction of default/web-2 failed ${MAX_EVICTION_ERRORS} times`);
    expect(result.pending.map((p) => [p.pod, p.failure])).toEqual([
      ['default/web-1', 'api-server'],
      ['default/web-2', 'eviction-rejected'],
    ]);
  });
});
