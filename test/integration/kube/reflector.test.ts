// The Reflector (src/kube/reflector.ts): the one list-and-watch loop, its hazards tested once, through
// the real client against the fake API server's failure injection: watches refused, closed at once,
// 410 in the stream and as the answer, a watch gone silent, lists failing; and what it tells its
// callers (the objects, blindness, the back-off).
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { ClientNodeKube, READ_ATTEMPTS } from '../../../src/kube/client.js';
import type { V1DaemonSet, V1Node } from '../../../src/kube/kube.js';
import { daemonSetListWatch, nodeListWatch, nodesListWatch } from '../../../src/kube/list-watch.js';
import {
  Reflector,
  WATCH_BASE_BACKOFF_MS,
  WATCH_MAX_BACKOFF_MS,
  latest,
  type ReflectorHandler,
} from '../../../src/kube/reflector.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { startFakeApiServer, type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { BOOKMARK_MS } from '../../../src/sim/fake-api/watch.js';
import { FakeClock } from '../../fakes/fake-clock.js';
import { kuredDaemonSet, readyNode } from '../../fakes/kube-objects.js';

let server: FakeApiServer;
let kube: ClientNodeKube;
let watchClock: FakeClock;

beforeEach(async () => {
  watchClock = new FakeClock();
  server = await startFakeApiServer({ historyLimit: 50, watchClock });
  // watches ask the server for 450 s (5-10 minutes, spread by `random`)
  kube = new ClientNodeKube(server.kubeConfig(), { random: () => 0.5 });
  server.create('daemonsets', kuredDaemonSet());
  for (const name of ['n1', 'n2']) server.create('nodes', readyNode(name));
});

afterEach(async () => {
  kube.close();
  await server.close();
});

/**
 * A moment of real time for loopback requests to be sent and answered between moves of the fake
 * clock (the reflector's pauses are on the fake clock, its HTTP is not). A request that came late
 * would be counted in the next second, and the per-second counts asserted would differ: it cannot
 * make a test pass.
 */
// eslint-disable-next-line no-restricted-syntax -- real time: the reflector under test runs on real timers
const realTick = (): Promise<void> => new Promise((r) => setTimeout(r, 5));

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 600 && !check(); i++) await realTick();
  if (!check()) throw new Error(`timed out waiting until ${what}`);
}

function requests(watch: boolean, pathIncludes = ''): number {
  return server.requests.filter((r) => (r.query.watch === 'true') === watch && r.path.includes(pathIncludes))
    .length;
}

/** A handler keeping the objects by name, counting whole lists. */
function keeper<T extends { metadata?: { name?: string } }>(): ReflectorHandler<T> & {
  objects: Map<string, T>;
  lists: number;
} {
  const objects = new Map<string, T>();
  const k = {
    objects,
    lists: 0,
    replace: (items: readonly T[]) => {
      k.lists++;
      objects.clear();
      for (const o of items) objects.set(o.metadata?.name ?? '', o);
    },
    apply: (type: 'ADDED' | 'MODIFIED' | 'DELETED', o: T) => {
      if (type === 'DELETED') objects.delete(o.metadata?.name ?? '');
      else objects.set(o.metadata?.name ?? '', o);
    },
  };
  return k;
}

function reflectorOf<T>(
  source: ConstructorParameters<typeof Reflector<T>>[0],
  clock: FakeClock,
  extra: { relistEachRound?: boolean; silenceMs?: number } = {},
): Reflector<T> {
  return new Reflector(source, { clock, log: new MemoryLogger(), random: () => 0.5, ...extra });
}

/** Runs `reflector` for `seconds` of virtual time, one second at a time; the watches sent each second. */
async function perSecond<T>(reflector: Reflector<T>, clock: FakeClock, seconds: number): Promise<number[]> {
  const controller = new AbortController();
  const done = reflector.run(keeper<{ metadata?: { name?: string } }>() as never, controller.signal);
  const counts: number[] = [];
  for (let s = 0; s < seconds; s++) {
    const before = requests(true);
    for (let i = 0; i < 4; i++) await realTick();
    await clock.advance(1000);
    counts.push(requests(true) - before);
  }
  controller.abort();
  await done;
  return counts;
}

function touch(name: string, value: string): void {
  const node = server.get<V1Node>('nodes', undefined, name)!;
  node.metadata = { ...node.metadata, annotations: { touched: value } };
  server.update('nodes', node);
}

/** A reflector of every Node on a fake clock, running, watching: what it keeps, and how to stop it. */
async function followingNodes(extra: { silenceMs?: number } = {}): Promise<{
  clock: FakeClock;
  reflector: Reflector<V1Node>;
  kept: ReturnType<typeof keeper<V1Node>>;
  stop: () => Promise<void>;
}> {
  const clock = new FakeClock();
  const reflector = reflectorOf(nodesListWatch(kube), clock, extra);
  const kept = keeper<V1Node>();
  const controller = new AbortController();
  const done = reflector.run(kept, controller.signal);
  await until(() => requests(true) === 1, 'it watches');
  return {
    clock,
    reflector,
    kept,
    stop: async () => {
      controller.abort();
      await done;
    },
  };
}

describe('Reflector', () => {
  it('lists, then keeps every change it is told of by its watch', async () => {
    const { reflector, kept, stop } = await followingNodes();
    expect([...kept.objects.keys()].sort()).toEqual(['n1', 'n2']);
    expect(reflector.synced).toBe(true);
    server.create('nodes', readyNode('n3'));
    server.delete('nodes', undefined, 'n1');
    touch('n2', 'x');
    await until(() => kept.objects.get('n2')?.metadata?.annotations?.touched === 'x', 'the change arrives');
    expect([...kept.objects.keys()].sort()).toEqual(['n2', 'n3']);
    expect(kept.lists).toBe(1);
    await stop();
  });

  it('backs off exponentially, up to 30 s, while the API server refuses watches (429)', async () => {
    server.injectFailure({ method: 'GET', pathIncludes: 'watch=true' }, 429, 10_000);
    const clock = new FakeClock();
    const counts = await perSecond(
      reflectorOf(daemonSetListWatch(kube, 'kube-system', 'kured'), clock),
      clock,
      120,
    );
    const total = counts.reduce((a, b) => a + b, 0);
    // 1 s, 2 s, 4 s, 8 s, 16 s, then every 30 s: about 8 watches in two minutes (a restart every
    // second would be 120)
    expect(total).toBeGreaterThanOrEqual(6);
    expect(total).toBeLessThanOrEqual(10);
    const gaps = counts.flatMap((n, s) => (n > 0 ? [s] : [])).map((s, i, all) => s - (all[i - 1] ?? s));
    expect(Math.max(...gaps)).toBeLessThanOrEqual(WATCH_MAX_BACKOFF_MS / 1000 + 1);
    expect(gaps.slice(1, 5)).toEqual([...gaps.slice(1, 5)].sort((a, b) => a - b));
  }, 30_000);

  it('does not spin on a server that ends every watch at once without an event', async () => {
    // 'silent' with no body would hang: an immediate clean end is a watch answered 200 and closed
    const clock = new FakeClock();
    const reflector = reflectorOf(nodesListWatch(kube), clock);
    const controller = new AbortController();
    const done = reflector.run(keeper<V1Node>(), controller.signal);
    await until(() => requests(true) === 1, 'it watches');
    for (let i = 0; i < 5; i++) {
      const before = requests(true);
      server.endWatches();
      await until(() => clock.pending > 0 || requests(true) > before, 'the watch ends');
      await realTick();
      // each end within a second, without an event, counts as a failure: it pauses before watching again
      expect(requests(true)).toBe(before);
      expect(reflector.nextPauseMs()).toBeGreaterThanOrEqual((WATCH_BASE_BACKOFF_MS * 2 ** i) / 2);
      await clock.advance(reflector.nextPauseMs());
      await until(() => requests(true) === before + 1, 'it watches again after the pause');
    }
    controller.abort();
    await done;
  });

  it('watches again at once, from where it was, after a healthy watch that the server ended', async () => {
    const { reflector, kept, stop } = await followingNodes();
    touch('n1', 'a'); // a change: the watch was healthy
    await until(() => kept.objects.get('n1')?.metadata?.annotations?.touched === 'a', 'the change arrives');
    server.endWatches();
    await until(() => requests(true) === 2, 'it watches again');
    expect(reflector.nextPauseMs()).toBe(0);
    expect(requests(false, '/api/v1/nodes')).toBe(1); // no list again
    const second = server.requests.filter((r) => r.query.watch === 'true')[1];
    expect(second?.query.resourceVersion).toBe(kept.objects.get('n1')?.metadata?.resourceVersion);
    await stop();
  });

  it.each([
    ['410 Gone as the answer to the watch', 'answer'],
    ['410 Expired as an ERROR event in the stream', 'stream'],
  ])('lists afresh after %s, and misses no change made meanwhile', async (_name, how) => {
    const clock = new FakeClock();
    const reflector = reflectorOf(nodesListWatch(kube), clock);
    const kept = keeper<V1Node>();
    const controller = new AbortController();
    if (how === 'answer') server.injectFailure({ method: 'GET', pathIncludes: 'watch=true' }, 410, 1);
    // 'stream': the watch starts from a version the server no longer keeps (its history holds 50)
    else for (let i = 0; i < 60; i++) touch('n2', `v${i}`);
    const from = { items: [], resourceVersion: '1' };
    const done = reflector.run(kept, controller.signal, how === 'stream' ? { from } : {});
    await until(() => requests(true) >= 1, 'it watches');
    await until(() => clock.pending > 0, 'it pauses after the failed watch');
    await clock.advance(WATCH_BASE_BACKOFF_MS);
    await until(() => kept.lists >= 2, 'it lists afresh');
    await until(() => requests(true) >= 2, 'it watches again');
    server.create('nodes', readyNode('n9'));
    await until(() => kept.objects.has('n9'), 'it follows again');
    expect([...kept.objects.keys()].sort()).toEqual(['n1', 'n2', 'n9']);
    controller.abort();
    await done;
  });

  it('gives up a watch that goes silent (no event, no bookmark) and is blind until it follows again', async () => {
    const clock = new FakeClock();
    const reflector = reflectorOf(nodesListWatch(kube), clock, { silenceMs: 3 * BOOKMARK_MS });
    const kept = keeper<V1Node>();
    const controller = new AbortController();
    server.injectFailure({ method: 'GET', pathIncludes: 'watch=true' }, 200, 1, { mode: 'silent' });
    const done = reflector.run(kept, controller.signal);
    await until(() => requests(true) === 1, 'it watches');
    await clock.advance(2 * BOOKMARK_MS);
    expect(reflector.blindSince).toBeUndefined(); // a watch running: following, as far as it can tell
    touch('n1', 'lost'); // the silent stream never brings it
    await clock.advance(BOOKMARK_MS);
    await until(() => reflector.nextPauseMs() > 0, 'it gives the silent watch up');
    expect(reflector.blindSince).toBe(clock.now().getTime());
    await clock.advance(WATCH_BASE_BACKOFF_MS);
    await until(() => requests(true) === 2, 'it watches again after its pause');
    expect(kept.objects.get('n1')?.metadata?.annotations?.touched).toBeUndefined();
    await clock.advance(WATCH_BASE_BACKOFF_MS);
    await until(() => reflector.blindSince === undefined, 'the new watch runs');
    touch('n1', 'seen');
    await until(() => kept.objects.get('n1')?.metadata?.annotations?.touched === 'seen', 'it follows again');
    controller.abort();
    await done;
  });

  it('keeps a quiet watch that the server sends bookmarks to', async () => {
    const clock = new FakeClock();
    const reflector = reflectorOf(nodesListWatch(kube), clock, { silenceMs: 3 * BOOKMARK_MS });
    const controller = new AbortController();
    const done = reflector.run(keeper<V1Node>(), controller.signal);
    await until(() => requests(true) === 1, 'it watches');
    for (let minute = 0; minute < 6; minute++) {
      await until(() => watchClock.pending > 0, 'the server times its bookmark');
      await watchClock.advance(BOOKMARK_MS);
      await until(() => reflector.lastHeardMs === clock.now().getTime(), 'the bookmark arrives');
      await clock.advance(BOOKMARK_MS);
    }
    expect(requests(true)).toBe(1);
    expect(reflector.blindSince).toBeUndefined();
    controller.abort();
    await done;
  });

  it('backs off and stays blind while the list fails (500), then follows', async () => {
    // two lists fail (each is tried READ_ATTEMPTS times inside the call), the third is answered
    server.injectFailure({ method: 'GET', pathIncludes: '/api/v1/nodes?' }, 500, 2 * READ_ATTEMPTS);
    const clock = new FakeClock();
    const onClock = new ClientNodeKube(server.kubeConfig(), { clock, random: () => 0.5 });
    const reflector = reflectorOf(nodesListWatch(onClock), clock);
    const kept = keeper<V1Node>();
    const controller = new AbortController();
    const blindFrom = reflector.blindSince;
    const done = reflector.run(kept, controller.signal);
    for (let s = 0; s < 60 && !reflector.synced; s++) {
      for (let i = 0; i < 4; i++) await realTick();
      expect(reflector.blindSince).toBe(blindFrom);
      await clock.advance(1000);
    }
    await until(() => reflector.synced, 'a list succeeds');
    expect(reflector.blindSince).toBeUndefined();
    expect(kept.objects.size).toBe(2);
    expect(requests(false, '/api/v1/nodes')).toBe(2 * READ_ATTEMPTS + 1);
    controller.abort();
    await done;
    onClock.close();
  });

  it('reads one object again after every watch when asked to, and says when it is gone', async () => {
    const clock = new FakeClock();
    const reflector = reflectorOf(daemonSetListWatch(kube, 'kube-system', 'kured'), clock, {
      relistEachRound: true,
    });
    const seen: (V1DaemonSet | undefined)[] = [];
    const controller = new AbortController();
    const done = reflector.run(
      latest<V1DaemonSet>((ds) => {
        seen.push(ds);
        if (ds === undefined) controller.abort();
      }),
      controller.signal,
    );
    await until(() => requests(true) === 1, 'it watches');
    const ds = server.get<V1DaemonSet>('daemonsets', 'kube-system', 'kured')!;
    ds.metadata = { ...ds.metadata, annotations: { a: 'b' } };
    server.update('daemonsets', ds);
    await until(() => seen.length === 2, 'the change arrives');
    server.endWatches();
    await until(() => requests(true) === 2, 'it watches again');
    expect(requests(false, '/daemonsets/kured')).toBe(2); // the first read, and one after the watch
    server.delete('daemonsets', 'kube-system', 'kured');
    await done;
    expect(seen.at(-1)).toBeUndefined();
  });

  it.each([
    ['a Node by name', (): ReturnType<typeof nodeListWatch> => nodeListWatch(kube, 'n1'), 'nodes'],
    [
      'the lock DaemonSet',
      (): ReturnType<typeof daemonSetListWatch> => daemonSetListWatch(kube, 'kube-system', 'kured'),
      'daemonsets',
    ],
  ] as const)(
    'follows %s left unchanged while the server forgot its version: one read, then a watch from now, no GET and 410 loop',
    async (_name, source, resource) => {
      // the object's own version falls out of the server's history (it keeps 50 changes) while others
      // change: kube-apiserver's watch cache does the same at scale within a minute or so
      for (let i = 0; i < 60; i++) touch('n2', `v${i}`);
      const clock = new FakeClock();
      const log = new MemoryLogger();
      const reflector = new Reflector<{ metadata?: { name?: string } }>(source(), {
        clock,
        log,
        random: () => 0.5,
      });
      const kept = keeper<{ metadata?: { name?: string; annotations?: Record<string, string> } }>();
      const controller = new AbortController();
      const done = reflector.run(kept, controller.signal);
      await until(() => requests(true) >= 1, 'it watches');
      await until(() => clock.pending > 0 || requests(true) >= 2, 'its first watch is refused');
      await clock.advance(WATCH_BASE_BACKOFF_MS);
      await until(() => requests(true) >= 2, 'it watches again');
      // the second watch holds: a change made now arrives at once, without another read or back-off
      const reads = requests(false, `/${resource}`);
      if (resource === 'nodes') touch('n1', 'now');
      else {
        const ds = server.get<V1DaemonSet>('daemonsets', 'kube-system', 'kured')!;
        ds.metadata = { ...ds.metadata, annotations: { touched: 'now' } };
        server.update('daemonsets', ds);
      }
      await until(
        () => [...kept.objects.values()][0]?.metadata?.annotations?.touched === 'now',
        'the change arrives',
      );
      for (let s = 0; s < 30; s++) {
        for (let i = 0; i < 4; i++) await realTick();
        await clock.advance(1000);
      }
      expect(requests(false, `/${resource}`)).toBe(reads);
      expect(requests(true)).toBe(2);
      expect(log.entries.filter((l) => l.level === 'warn')).toEqual([]);
      controller.abort();
      await done;
    },
  );

  it('follows one Node by name, from a read the caller already holds', async () => {
    const clock = new FakeClock();
    const reflector = reflectorOf(nodeListWatch(kube, 'n1'), clock);
    const node = await kube.getNode('n1');
    const kept = keeper<V1Node>();
    const controller = new AbortController();
    const done = reflector.run(kept, controller.signal, {
      from: { items: [node], resourceVersion: node.metadata?.resourceVersion ?? '' },
    });
    await until(() => requests(true) === 1, 'it watches');
    expect(requests(false, '/api/v1/nodes')).toBe(1); // the caller's read only
    touch('n2', 'other');
    touch('n1', 'mine');
    await until(
      () => kept.objects.get('n1')?.metadata?.annotations?.touched === 'mine',
      'its change arrives',
    );
    expect([...kept.objects.keys()]).toEqual(['n1']);
    controller.abort();
    await done;
  });
});
