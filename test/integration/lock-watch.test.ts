// LockWatch: following the lock's DaemonSet, and backing off when the API server refuses watches.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { ClientNodeKube } from '../../src/kube/client.js';
import type { V1DaemonSet } from '../../src/kube/kube.js';
import { LockWatch, WATCH_MAX_BACKOFF_MS } from '../../src/lock/lock-watch.js';
import { MemoryLogger } from '../../src/log/logger.js';
import { startFakeApiServer, type FakeApiServer } from '../../src/sim/fake-api-server.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { kuredDaemonSet } from '../fakes/kube-objects.js';

let server: FakeApiServer;
let kube: ClientNodeKube;

beforeEach(async () => {
  server = await startFakeApiServer();
  kube = new ClientNodeKube(server.kubeConfig());
  server.create('daemonsets', kuredDaemonSet());
});

afterEach(async () => {
  kube.close();
  await server.close();
});

/**
 * A moment of real time for loopback requests to be sent and answered between moves of the fake
 * clock (the watch's pauses are on the fake clock, its HTTP is not). A request that came late would
 * be counted in the next second, and the per-second counts asserted would differ: it cannot make a
 * test pass.
 */
const realTick = (): Promise<void> => new Promise((r) => setTimeout(r, 5));

function watchRequests(): number[] {
  return server.requests.filter((r) => r.query.watch === 'true').map((r) => r.at);
}

/** Follows for `seconds` of virtual time, one second at a time; returns the watches sent per second. */
async function follow(clock: FakeClock, seconds: number): Promise<number[]> {
  const watch = new LockWatch({
    kube,
    namespace: 'kube-system',
    name: 'kured',
    clock,
    log: new MemoryLogger(),
    random: () => 0.5,
  });
  const controller = new AbortController();
  const seen: V1DaemonSet[] = [];
  const from = await kube.getDaemonSet('kube-system', 'kured');
  const done = watch.follow(from, (ds) => seen.push(ds), controller.signal);
  const perSecond: number[] = [];
  for (let s = 0; s < seconds; s++) {
    const before = watchRequests().length;
    for (let i = 0; i < 4; i++) await realTick();
    await clock.advance(1000);
    perSecond.push(watchRequests().length - before);
  }
  controller.abort();
  await done;
  return perSecond;
}

describe('LockWatch', () => {
  it('backs off exponentially, up to 30 s, while the API server refuses watches (429)', async () => {
    server.injectFailure({ method: 'GET', pathIncludes: 'watch=true' }, 429, 10_000);
    const perSecond = await follow(new FakeClock(), 120);
    const total = perSecond.reduce((a, b) => a + b, 0);
    // 1 s, 2 s, 4 s, 8 s, 16 s, then every 30 s: about 8 watches in two minutes (a restart every
    // second would be 120)
    expect(total).toBeGreaterThanOrEqual(6);
    expect(total).toBeLessThanOrEqual(10);
    const gaps = perSecond.flatMap((n, s) => (n > 0 ? [s] : [])).map((s, i, all) => s - (all[i - 1] ?? s));
    expect(Math.max(...gaps)).toBeLessThanOrEqual(WATCH_MAX_BACKOFF_MS / 1000 + 1);
    expect(gaps.slice(1, 5)).toEqual([...gaps.slice(1, 5)].sort((a, b) => a - b));
  }, 30_000);

  it('watches again at once after a healthy watch that the server ended', async () => {
    const clock = new FakeClock();
    const watch = new LockWatch({
      kube,
      namespace: 'kube-system',
      name: 'kured',
      clock,
      log: new MemoryLogger(),
      random: () => 0.5,
    });
    const controller = new AbortController();
    const from = await kube.getDaemonSet('kube-system', 'kured');
    const seen: string[] = [];
    const done = watch.follow(from, (ds) => seen.push(ds.metadata?.resourceVersion ?? ''), controller.signal);
    await until(() => watchRequests().length === 1);
    const ds = server.get<V1DaemonSet>('daemonsets', 'kube-system', 'kured')!;
    ds.metadata = { ...ds.metadata, annotations: { a: 'b' } };
    server.update('daemonsets', ds); // a change: the watch was healthy
    await until(() => seen.length > 0);
    server.endWatches();
    await until(() => watchRequests().length === 2);
    expect(watch.nextPauseMs()).toBe(0);
    controller.abort();
    await done;
  });
});

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !check(); i++) await realTick();
  expect(check()).toBe(true);
}
