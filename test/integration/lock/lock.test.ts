// DaemonSetLock through the real client-node against the fake API server.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { waitFor, realDelay } from '../../fakes/wait-for.js';
import { countedKube, seenBy, type KubeCounts } from '../../fakes/counted-kube.js';
import type { V1DaemonSet, V1Node } from '../../../src/kube/kube.js';
import { SystemClock, type Clock } from '../../../src/clock/clock.js';
import { ClientNodeKube } from '../../../src/kube/client.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { DaemonSetLock, HERD_SPREAD_MS, UNPARSABLE_HOLDER } from '../../../src/lock/daemonset-lock.js';
import { WATCH_BASE_BACKOFF_MS } from '../../../src/kube/reflector.js';
import { entriesOf, parseLockAnnotation } from '../../../src/lock/kured-lock-format.js';
import { type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { FakeClock, skewed } from '../../fakes/fake-clock.js';
import { CYCLE_ANNOTATION, CYCLE_LABEL } from '../../../src/node/cycle.js';
import { kuredDaemonSet, readyNode } from '../../fakes/kube-objects.js';
import { FleetCensus } from '../../../src/capacity/fleet-census.js';

const NS = 'kube-system';
const DS = 'kured';
const ANNOTATION = 'weave.works/kured-node-lock';

let server: FakeApiServer;
let kube: ClientNodeKube;
/** What the client did: calls, and lock changes its watches delivered (countedKube). */
let counts: KubeCounts;
let log: MemoryLogger;

beforeEach(async () => {
  server = await startClusterApiServer();
  ({ kube, counts } = countedKube(server.kubeInMemory()));
  log = new MemoryLogger();
  server.create('daemonsets', kuredDaemonSet());
  for (let i = 0; i < 20; i++) server.create<V1Node>('nodes', { metadata: { name: `n${i}` } });
});

afterEach(async () => {
  await server.close();
});

function lock(
  nodeId: string,
  o: {
    concurrency?: number;
    ttlMs?: number;
    clock?: Clock;
    attempts?: number;
    groups?: { label: string; concurrency: number };
  } = {},
): DaemonSetLock {
  return new DaemonSetLock({
    kube,
    nodeId,
    namespace: NS,
    name: DS,
    annotation: ANNOTATION,
    ttlMs: o.ttlMs ?? 0,
    concurrency: { count: o.concurrency ?? 1 },
    clock: o.clock ?? new SystemClock(),
    log,
    attempts: o.attempts ?? 8,
    ...(o.groups === undefined
      ? {}
      : {
          groups: { label: o.groups.label, concurrency: { count: o.groups.concurrency } },
          // the group's members by label decide which slots count against it
          census: new FleetCensus({
            kube,
            clock: o.clock ?? new SystemClock(),
            nodeId,
            groupLabel: o.groups.label,
          }),
        }),
  });
}

function annotation(): string | undefined {
  return server.get<V1DaemonSet>('daemonsets', NS, DS)?.metadata?.annotations?.[ANNOTATION];
}

function setAnnotation(value: string): void {
  const ds = server.get<V1DaemonSet>('daemonsets', NS, DS)!;
  ds.metadata!.annotations = { ...ds.metadata!.annotations, [ANNOTATION]: value };
  server.update('daemonsets', ds);
}

function holderIds(): string[] {
  const text = annotation();
  return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID);
}

function dsPatches(): { contentType: string | undefined; status: number }[] {
  return server.requests
    .filter((r) => r.method === 'PATCH' && r.path.includes('/daemonsets/'))
    .map((r) => ({ contentType: r.contentType, status: r.status }));
}

describe('DaemonSetLock with concurrency 1', () => {
  it("takes the lock in kured's single form, guarded by resourceVersion, and gives it back", async () => {
    const result = await lock('n1').acquire({ unschedulable: false, bootID: 'b1' });
    expect(result).toMatchObject({
      acquired: true,
      holder: { nodeID: 'n1', ttlMs: 0, metadata: { unschedulable: false, bootID: 'b1' } },
    });
    expect(annotation()).toMatch(
      /^\{"nodeID":"n1","metadata":\{"unschedulable":false,"bootID":"b1"\},"created":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z","TTL":0\}$/,
    );
    expect(dsPatches()).toEqual([{ contentType: 'application/merge-patch+json', status: 200 }]);
    await expect(lock('n1').holding()).resolves.toMatchObject({ nodeID: 'n1' });
    await expect(lock('n2').holding()).resolves.toBeUndefined();
    await expect(lock('n2').acquire({ unschedulable: false })).resolves.toEqual({
      acquired: false,
      holders: ['n1'],
      reason: 'all 1 lock slot(s) held by n1',
    });
    await lock('n2').release();
    expect(holderIds()).toEqual(['n1']);
    await lock('n1').release();
    expect(annotation()).toBeUndefined();
    await lock('n1').release();
  });

  it('acquires idempotently while its cycle proves the slot: a second acquire returns our slot without writing', async () => {
    const first = await lock('n1').acquire({ unschedulable: true });
    const second = await lock('n1').acquire({ unschedulable: false }, undefined, { inCycle: true });
    expect(second).toEqual(first);
    expect(dsPatches()).toHaveLength(1);
  });

  it('asks anew for a slot the lock names it in without a cycle of its own: renewed while there is room', async () => {
    const clock = new FakeClock('2026-01-05T10:00:00Z');
    await lock('n1', { clock }).acquire({ unschedulable: true });
    await clock.advance(1_000);
    const again = await lock('n1', { clock }).acquire({ unschedulable: false });
    expect(again).toMatchObject({
      acquired: true,
      holder: { created: clock.now(), metadata: { unschedulable: false } },
    });
    expect(holderIds()).toEqual(['n1']);
  });

  it("renews our slot's lease (created moves to now, metadata kept) and says when we hold none", async () => {
    const clock = new FakeClock('2026-01-05T10:00:00Z');
    await lock('n1', { clock }).acquire({ unschedulable: false, bootID: 'b1' });
    const before = await lock('n1', { clock }).holding();
    await clock.advance(5_000);
    await expect(lock('n1', { clock }).renew()).resolves.toBe(true);
    const after = await lock('n1', { clock }).holding();
    expect(after).toEqual({ ...before, created: new Date(before!.created.getTime() + 5_000) });
    await expect(lock('n2', { clock }).renew()).resolves.toBe(false);
  });

  it('rejects a lock written from a stale read (409) by re-reading: a racing writer never loses its slot', async () => {
    // Another agent writes between our read and our write: our patch must fail and we must see it.
    let first = true;
    const racing = new Proxy(kube, {
      get(target, prop, receiver): unknown {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (prop !== 'getDaemonSet' || typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          const ds: unknown = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          if (first) {
            first = false;
            await lock('n7').acquire({ unschedulable: false });
          }
          return ds;
        };
      },
    });
    const l = new DaemonSetLock({
      kube: racing,
      nodeId: 'n1',
      namespace: NS,
      name: DS,
      annotation: ANNOTATION,
      ttlMs: 0,
      concurrency: { count: 1 },
      clock: new SystemClock(),
      log,
    });
    await expect(l.acquire({ unschedulable: false })).resolves.toMatchObject({
      acquired: false,
      holders: ['n7'],
    });
    expect(holderIds()).toEqual(['n7']);
    expect(dsPatches().map((p) => p.status)).toEqual([200, 409]);
  });
});

describe('kured compatibility', () => {
  it.each([
    [
      'single',
      '{"nodeID":"n5","metadata":{"unschedulable":false},"created":"2099-03-01T12:34:56.123456789Z","TTL":0}',
      ['n5'],
    ],
    [
      'multi',
      '{"maxOwners":2,"locks":[{"nodeID":"n5","metadata":{"unschedulable":false},"created":"2099-03-01T12:34:56Z","TTL":0},{"nodeID":"n6","metadata":{"unschedulable":true},"created":"2099-03-01T12:35:00Z","TTL":0}]}',
      ['n5', 'n6'],
    ],
    ['manual', '{"nodeID":"manual"}', ['manual']],
  ])('reads a %s lock written by kured as held', async (_form, text, holders) => {
    setAnnotation(text);
    const result = await lock('n1', { concurrency: holders.length, ttlMs: 60_000 }).acquire({
      unschedulable: false,
    });
    expect(result).toMatchObject({ acquired: false, holders });
    expect(annotation()).toBe(text);
  });

  it('writes the multi form for concurrency above 1, with maxOwners and the kept slots unchanged', async () => {
    const kured =
      '{"nodeID":"n5","metadata":{"unschedulable":true},"created":"2099-03-01T12:34:56.123456789Z","TTL":0}';
    setAnnotation(`{"maxOwners":2,"locks":[${kured}]}`);
    await lock('n1', { concurrency: 2 }).acquire({ unschedulable: false });
    const text = annotation()!;
    expect(
      text.startsWith(
        `{"maxOwners":2,"locks":[${kured},{"nodeID":"n1","metadata":{"unschedulable":false},"created":"`,
      ),
    ).toBe(true);
    await lock('n1', { concurrency: 2 }).release();
    expect(annotation()).toBe(`{"maxOwners":2,"locks":[${kured}]}`);
    await lock('n5', { concurrency: 2 }).release();
    expect(annotation()).toBe('{"maxOwners":2,"locks":[]}');
  });
});

describe('expiry, pruning and reclaim', () => {
  it("expires a slot --lock-ttl after the reader first saw it unchanged, on the reader's own clock, and prunes it", async () => {
    const clock = new FakeClock('2026-01-05T10:00:00Z');
    await lock('n1', { ttlMs: 60_000, clock }).acquire({ unschedulable: false });
    expect(annotation()).toContain('"TTL":60000000000');
    const reader = lock('n2', { ttlMs: 60_000, clock });
    await expect(reader.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: false });
    await clock.advance(59_999);
    await expect(reader.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: false });
    await clock.advance(1);
    await expect(reader.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: true });
    expect(holderIds()).toEqual(['n2']);
  });

  it('judges a slot that records no TTL by the configured --lock-ttl, as kured does', async () => {
    setAnnotation(
      '{"nodeID":"n5","metadata":{"unschedulable":false},"created":"2026-01-05T09:00:00Z","TTL":0}',
    );
    const clock = new FakeClock('2026-01-05T10:00:00Z');
    const forever = lock('n1', { ttlMs: 0, clock });
    const hourly = lock('n1', { ttlMs: 3_600_000, clock });
    await expect(hourly.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: false });
    await clock.advance(3_600_000);
    await expect(forever.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: false });
    await expect(hourly.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: true });
  });

  it.each([
    ['a reader whose clock runs 31 minutes fast', 0, 31 * 60_000],
    ['a reader whose clock runs 31 minutes slow', 0, -31 * 60_000],
    ['a holder whose clock runs 31 minutes fast', 31 * 60_000, 0],
    ['a holder whose clock runs 31 minutes slow', -31 * 60_000, 0],
  ])('never lets a 30-minute slot go early or late with %s', async (_name, holderSkew, readerSkew) => {
    const base = new FakeClock('2026-01-05T10:00:00Z');
    const ttlMs = 30 * 60_000;
    await lock('n1', { ttlMs, clock: skewed(base, holderSkew) }).acquire({ unschedulable: false });
    const reader = lock('n2', { ttlMs, clock: skewed(base, readerSkew) });
    await expect(reader.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: false });
    await base.advance(ttlMs - 1);
    await expect(reader.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: false });
    await base.advance(1);
    await expect(reader.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: true });
  });

  it('keeps a slot renewed every third of --lock-ttl alive for every reader, and lets it go a TTL after the reader saw the last renewal', async () => {
    const clock = new FakeClock('2026-01-05T10:00:00Z');
    const holder = lock('n1', { ttlMs: 60_000, clock });
    await holder.acquire({ unschedulable: false });
    const reader = lock('n2', { ttlMs: 60_000, clock });
    for (let i = 0; i < 15; i++) {
      await expect(reader.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: false });
      await clock.advance(20_000);
      await expect(holder.renew()).resolves.toBe(true);
    }
    await expect(reader.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: false });
    await clock.advance(59_999);
    await expect(reader.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: false });
    await clock.advance(1);
    await expect(reader.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: true });
  });

  it('makes a reader that has just started wait a whole TTL from its first look, however old the slot', async () => {
    setAnnotation(
      '{"nodeID":"n5","metadata":{"unschedulable":false},"created":"2020-01-01T00:00:00Z","TTL":60000000000}',
    );
    const clock = new FakeClock('2026-01-05T10:00:00Z');
    const reader = lock('n1', { ttlMs: 60_000, clock });
    await expect(reader.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: false });
    await clock.advance(60_000);
    await expect(reader.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: true });
  });

  it('prunes expired slots on every write, release included', async () => {
    const clock = new FakeClock('2026-01-05T10:00:00Z');
    const c = { concurrency: 3, ttlMs: 60_000, clock };
    const [n1, n2, n3, n4] = ['n1', 'n2', 'n3', 'n4'].map((n) => lock(n, c));
    await n1!.acquire({ unschedulable: false });
    await n3!.holding(); // n3 sees n1 from the start
    await clock.advance(30_000);
    await n2!.acquire({ unschedulable: false });
    await n3!.acquire({ unschedulable: false });
    expect(holderIds()).toEqual(['n1', 'n2', 'n3']);
    await clock.advance(30_000); // n1 unchanged for 60 s in n3's eyes
    await n3!.release();
    expect(holderIds()).toEqual(['n2']);
    await n4!.holding(); // n4 sees n2 from now on
    await clock.advance(60_000);
    await n4!.acquire({ unschedulable: false });
    expect(holderIds()).toEqual(['n4']);
  });

  it('reclaims the slot of a holder whose Node was deleted, never one whose Node exists', async () => {
    await lock('n1').acquire({ unschedulable: false });
    await expect(lock('n2').acquire({ unschedulable: false })).resolves.toMatchObject({
      acquired: false,
      holders: ['n1'],
    });
    server.delete('nodes', undefined, 'n1');
    await expect(lock('n2').acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: true });
    expect(holderIds()).toEqual(['n2']);
    expect(
      log.entries.some((e) => e.message === 'lock reclaimed from deleted node' && e.fields.holder === 'n1'),
    ).toBe(true);
  });

  it("looks a live holder's Node up at most once per minute", async () => {
    const clock = new FakeClock('2026-01-05T10:00:00Z');
    await lock('n1', { clock }).acquire({ unschedulable: false });
    const waiter = lock('n2', { clock });
    const nodeGets = (): number =>
      server.requests.filter((r) => r.method === 'GET' && r.path === '/api/v1/nodes/n1').length;
    await waiter.acquire({ unschedulable: false });
    await waiter.acquire({ unschedulable: false });
    expect(nodeGets()).toBe(1);
    server.delete('nodes', undefined, 'n1');
    await clock.advance(59_999);
    await expect(waiter.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: false });
    await clock.advance(1);
    await expect(waiter.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: true });
    expect(nodeGets()).toBe(2);
  });

  it('never reclaims kured\'s manual lock although no Node is called "manual"', async () => {
    setAnnotation('{"nodeID":"manual"}');
    await expect(lock('n2').acquire({ unschedulable: false })).resolves.toMatchObject({
      acquired: false,
      holders: ['manual'],
    });
    expect(annotation()).toBe('{"nodeID":"manual"}');
  });
});

describe('a malformed lock annotation', () => {
  it('is reported and treated as held when --lock-ttl is 0', async () => {
    setAnnotation('{"nodeID": n1');
    const result = await lock('n1').acquire({ unschedulable: false });
    expect(result).toMatchObject({ acquired: false, holders: [UNPARSABLE_HOLDER] });
    expect(result.acquired ? '' : result.reason).toMatch(/cannot be parsed \(treated as held\): not JSON/);
    expect(log.entries.some((e) => e.level === 'warn' && e.message === 'lock annotation unparsable')).toBe(
      true,
    );
    await expect(lock('n1').holding()).resolves.toBeUndefined();
    await lock('n1').release();
    expect(annotation()).toBe('{"nodeID": n1');
    expect(dsPatches()).toEqual([]);
  });

  it('expires after --lock-ttl counted from when the agent first saw it, then is replaced', async () => {
    setAnnotation('{"nodeID":"n5","TTL":"forever"}');
    const clock = new FakeClock('2026-01-05T10:00:00Z');
    const l = lock('n1', { ttlMs: 60_000, clock });
    await expect(l.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: false });
    await clock.advance(59_000);
    await expect(l.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: false });
    await clock.advance(1_000);
    await expect(l.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: true });
    expect(holderIds()).toEqual(['n1']);
  });
});

describe('409 storms', () => {
  it('retries injected conflicts with a fresh read each time and then takes the lock', async () => {
    server.injectFailure({ method: 'PATCH', pathIncludes: `/daemonsets/${DS}` }, 409, 5);
    await expect(lock('n1').acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: true });
    expect(dsPatches().map((p) => p.status)).toEqual([409, 409, 409, 409, 409, 200]);
    const gets = server.requests.filter((r) => r.method === 'GET' && r.path.endsWith(`/daemonsets/${DS}`));
    expect(gets).toHaveLength(6);
  });

  it('gives up after the bounded attempts and reports the contention instead of looping', async () => {
    server.injectFailure({ method: 'PATCH', pathIncludes: `/daemonsets/${DS}` }, 409, 100);
    const result = await lock('n1', { attempts: 4 }).acquire({ unschedulable: false });
    expect(result).toMatchObject({ acquired: false });
    expect(result.acquired ? '' : result.reason).toMatch(/contended after 4 attempts/);
    expect(dsPatches()).toHaveLength(4);
  });

  it('retries a release through conflicts', async () => {
    await lock('n1').acquire({ unschedulable: false });
    server.injectFailure({ method: 'PATCH', pathIncludes: `/daemonsets/${DS}` }, 409, 3);
    await lock('n1').release();
    expect(annotation()).toBeUndefined();
  });
});

describe('waitForChange', () => {
  const watches = (): number[] =>
    server.requests.filter((r) => r.query.watch === 'true').map((r) => r.status);

  // The waiter's clock moves only as the test says: the timeout (60 s) cannot be what wakes it.
  it('wakes on a watch as soon as the lock annotation changes', async () => {
    await lock('n1').acquire({ unschedulable: false });
    const clock = new FakeClock('2026-01-05T10:00:00Z');
    const waiter = lock('n2', { clock });
    await waiter.holding();
    const waiting = waiter.waitForChange(60_000).then(() => 'woke');
    await waitFor(() => watches().includes(200), 'the waiter watches');
    await lock('n1').release();
    await waitFor(() => clock.pending === 2, 'the waiter pauses its spread before it looks again');
    await clock.advance(HERD_SPREAD_MS);
    expect(await waiting).toBe('woke');
    expect(annotation()).toBeUndefined();
  });

  it('watches again after a failed watch and still wakes long before the timeout', async () => {
    await lock('n1').acquire({ unschedulable: false });
    const clock = new FakeClock('2026-01-05T10:00:00Z');
    const waiter = lock('n2', { clock });
    await waiter.holding();
    server.injectFailure({ method: 'GET', pathIncludes: 'watch=true' }, 410, 1);
    const waiting = waiter.waitForChange(60_000).then(() => 'woke');
    await waitFor(() => clock.pending === 2, 'the waiter backs off after the failed watch');
    await clock.advance(WATCH_BASE_BACKOFF_MS);
    await waitFor(() => watches().includes(200), 'the waiter watches again');
    await lock('n1').release();
    await waitFor(() => clock.pending === 2, 'the waiter pauses its spread before it looks again');
    await clock.advance(HERD_SPREAD_MS);
    expect(await waiting).toBe('woke');
    expect(watches()).toEqual([410, 200]);
  });

  it('returns after the timeout when nothing changes', async () => {
    const clock = new FakeClock('2026-01-05T10:00:00Z');
    const waiter = lock('n2', { clock });
    let done = false;
    const waiting = waiter.waitForChange(30_000).then(() => {
      done = true;
    });
    await waitFor(() => clock.pending > 0, 'the waiter sleeps on the clock');
    await clock.advance(29_999);
    expect(done).toBe(false);
    await clock.advance(1);
    await waiting;
    expect(done).toBe(true);
  });

  it('rejects when its signal aborts', async () => {
    const controller = new AbortController();
    const waiting = lock('n2', { clock: new FakeClock('2026-01-05T10:00:00Z') }).waitForChange(
      60_000,
      controller.signal,
    );
    await waitFor(() => watches().includes(200), 'the waiter watches');
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
  });
});

describe('20 contenders for 2 slots', () => {
  it('never lets 3 hold at once, lets exactly 2 in first, and lets everyone in after releases', async () => {
    let maxHolders = 0;
    let writes = 0;
    const unsubscribe = server.onWrite((e) => {
      if (e.resource !== 'daemonsets') return;
      writes++;
      const text = (e.object as V1DaemonSet).metadata?.annotations?.[ANNOTATION];
      const holders = text === undefined ? 0 : entriesOf(parseLockAnnotation(text)).length;
      maxHolders = Math.max(maxHolders, holders);
    });
    try {
      const locks = Array.from({ length: 20 }, (_, i) => lock(`n${i}`, { concurrency: 2, attempts: 30 }));
      const first = await Promise.all(locks.map((l) => l.acquire({ unschedulable: false })));
      const winners = first.flatMap((r) => (r.acquired ? [r.holder.nodeID] : []));
      expect(winners).toHaveLength(2);
      // what the winners believe is what the cluster records: no acquire was lost
      expect(holderIds().sort()).toEqual(winners.sort());
      for (const r of first.filter((x) => !x.acquired))
        expect(r).toMatchObject({ holders: expect.arrayContaining([expect.any(String)]) });

      // Everyone loops: acquire, hold briefly, release; or wait for a change and try again.
      const acquiredBy = new Set<string>();
      await Promise.all(
        locks.map(async (l, i) => {
          for (let round = 0; round < 200; round++) {
            const r = await l.acquire({ unschedulable: false });
            if (r.acquired) {
              acquiredBy.add(`n${i}`);
              // the holder keeps its slot a moment of real time, so that others find it taken
              await realDelay(5);
              await l.release();
              return;
            }
            await l.waitForChange(1_000);
          }
        }),
      );
      expect(acquiredBy.size).toBe(20);
      expect(maxHolders).toBe(2);
      expect(writes).toBeGreaterThanOrEqual(40);
      expect(holderIds()).toEqual([]);
    } finally {
      unsubscribe();
    }
  });
});

describe("kured's manual lock and nodes in a reboot cycle", () => {
  it.each([1, 3])("holds every slot with kured's manual lock at concurrency %i", async (concurrency) => {
    setAnnotation(
      concurrency === 1
        ? '{"nodeID":"manual"}'
        : '{"maxOwners":3,"locks":[{"nodeID":"manual","metadata":{"unschedulable":false},"created":"0001-01-01T00:00:00Z","TTL":0}]}',
    );
    const result = await lock('n1', { concurrency, ttlMs: 60_000 }).acquire({ unschedulable: false });
    expect(result).toMatchObject({ acquired: false, holders: ['manual'] });
    expect(!result.acquired && result.reason).toContain('manual lock');
    expect(await lock('n1', { concurrency }).wouldAcquire()).toMatchObject({ acquired: false });
  });

  /** Marks a node as in a reboot cycle, as the agent does (label + record). */
  function inCycle(
    name: string,
    record = '{"bootID":"b1","cordoned":true,"attempts":1,"started":"x"}',
  ): void {
    const node = server.get<V1Node>('nodes', undefined, name)!;
    node.metadata!.labels = { ...node.metadata!.labels, [CYCLE_LABEL]: 'true' };
    node.metadata!.annotations = { ...node.metadata!.annotations, [CYCLE_ANNOTATION]: record };
    server.update('nodes', node);
  }

  it('counts a node in a cycle whose slot is missing, whatever --lock-ttl, until its label goes', async () => {
    const clock = new FakeClock('2026-01-05T10:00:00Z');
    inCycle('n1'); // n1 is down rebooting; its slot was deleted
    const reader = lock('n2', { ttlMs: 60_000, clock });
    const refused = await reader.acquire({ unschedulable: false });
    expect(refused).toMatchObject({ acquired: false, holders: ['n1'] });
    expect(!refused.acquired && refused.reason).toContain('n1 is in a reboot cycle without a slot');
    await clock.advance(24 * 3_600_000);
    await expect(reader.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: false });
    const n1 = server.get<V1Node>('nodes', undefined, 'n1')!;
    n1.metadata!.labels = {}; // the cycle ended (or an operator released the node)
    server.update('nodes', n1);
    await expect(reader.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: true });
  });

  it('counts a node in a cycle without a slot for ever when slots never expire either (--lock-ttl 0)', async () => {
    const clock = new FakeClock('2026-01-05T10:00:00Z');
    inCycle('n1');
    const reader = lock('n2', { clock });
    await clock.advance(30 * 24 * 3_600_000);
    await expect(reader.acquire({ unschedulable: false })).resolves.toMatchObject({ acquired: false });
  });

  it('lets the node in a cycle take its own slot back, and counts it once', async () => {
    inCycle('n1');
    await expect(lock('n1', { concurrency: 2 }).acquire({ unschedulable: false })).resolves.toMatchObject({
      acquired: true,
    });
    await expect(lock('n2', { concurrency: 2 }).acquire({ unschedulable: false })).resolves.toMatchObject({
      acquired: true,
    });
    await expect(lock('n3', { concurrency: 2 }).acquire({ unschedulable: false })).resolves.toMatchObject({
      acquired: false,
      holders: ['n1', 'n2'],
    });
  });
});

describe('per-group concurrency under the global cap (--group-label, --group-concurrency)', () => {
  const ZONE = 'topology.kubernetes.io/zone';
  const groups = { label: ZONE, concurrency: 1 };
  /** Nine nodes in three zones, n9 without the label. */
  const zoneOf = (i: number): string | undefined => (i === 9 ? undefined : `zone-${'abc'[i % 3] ?? ''}`);

  beforeEach(() => {
    for (let i = 0; i < 10; i++) {
      const zone = zoneOf(i);
      server.update<V1Node>('nodes', {
        metadata: { name: `n${i}`, labels: zone === undefined ? {} : { [ZONE]: zone } },
      });
    }
  });

  const take = (i: number, concurrency = 3) =>
    lock(`n${i}`, { concurrency, groups }).acquire({ unschedulable: false, group: zoneOf(i) ?? '' });

  it.each([
    {
      name: 'lets one node per zone in, up to the global cap of 3',
      order: [0, 3, 1, 4, 2, 5],
      acquired: [0, 1, 2],
    },
    { name: 'keeps the global cap when every zone still has room', order: [0, 1, 2, 9], acquired: [0, 1, 2] },
    {
      name: 'treats nodes without the label as one group of their own',
      order: [9, 0, 1],
      acquired: [9, 0, 1],
    },
  ])('$name', async ({ order, acquired }) => {
    const got: number[] = [];
    for (const i of order) if ((await take(i)).acquired) got.push(i);
    expect(got).toEqual(acquired);
    expect(holderIds().sort()).toEqual(acquired.map((i) => `n${i}`).sort());
  });

  it("names the group, its label and its holders when the group is full, and records each slot's group", async () => {
    expect((await take(0)).acquired).toBe(true);
    expect(await take(3)).toEqual({
      acquired: false,
      holders: ['n0'],
      reason: `group ${ZONE}=zone-a: all 1 slot(s) of the group held by n0`,
      gate: 'group-concurrency',
    });
    expect(await lock('n9', { concurrency: 3, groups }).wouldAcquire(undefined, { group: '' })).toMatchObject(
      {
        acquired: true,
      },
    );
    const entries = entriesOf(parseLockAnnotation(annotation() ?? ''));
    expect(entries.map((e) => e.metadata)).toEqual([{ unschedulable: false, group: 'zone-a' }]);
  });

  it("counts a slot that records no group (kured's, during a migration) against every group", async () => {
    expect((await lock('n1', { concurrency: 3 }).acquire({ unschedulable: false })).acquired).toBe(true);
    const full = await take(0);
    expect(full).toMatchObject({ acquired: false, holders: ['n1'] });
    expect((await take(4)).acquired).toBe(false);
  });

  it('counts a node of the group in a reboot cycle whose slot is missing', async () => {
    const n3 = server.get<V1Node>('nodes', undefined, 'n3')!;
    n3.metadata!.labels = { ...n3.metadata!.labels, [CYCLE_LABEL]: 'true' };
    server.update('nodes', n3);
    expect(await take(0)).toEqual({
      acquired: false,
      holders: ['n3'],
      reason: `group ${ZONE}=zone-a: all 1 slot(s) of the group held by n3`,
      gate: 'group-concurrency',
    });
    expect((await take(1)).acquired).toBe(true);
  });

  it('never lets two nodes of one zone hold slots at once, 9 contenders racing', async () => {
    const results = await Promise.all([0, 1, 2, 3, 4, 5, 6, 7, 8].map((i) => take(i, 9)));
    const holders = results.flatMap((r, i) => (r.acquired ? [i] : []));
    expect(holders).toHaveLength(3);
    expect(new Set(holders.map((i) => zoneOf(i))).size).toBe(3);
    expect(holderIds()).toHaveLength(3);
  });

  it('wakes a waiter of a full group only when a slot of its group frees, not for another group', async () => {
    await take(0);
    await take(1);
    const clock = new FakeClock();
    const waiter = lock('n3', { concurrency: 3, groups, clock });
    expect((await waiter.acquire({ unschedulable: false, group: 'zone-a' })).acquired).toBe(false);
    let woke = false;
    const wait = waiter.waitForChange(3_600_000).then(() => (woke = true));
    await seenBy(server, counts, 1, () => lock('n1', { concurrency: 3, groups }).release());
    await clock.advance(HERD_SPREAD_MS); // past the pause of a waiter that took the write for its slot
    expect(woke).toBe(false);
    await seenBy(server, counts, 1, () => lock('n0', { concurrency: 3, groups }).release());
    await clock.advance(HERD_SPREAD_MS);
    await wait;
    expect(woke).toBe(true);
  });
});

describe('budgets as a share of the fleet (--concurrency N%) and unavailable nodes (--count-unavailable)', () => {
  /** The DaemonSet controller says its pods run on `nodes` nodes. */
  function runsOn(nodes: number): void {
    const ds = server.get<V1DaemonSet>('daemonsets', NS, DS)!;
    server.update('daemonsets', { ...ds, status: { ...ds.status, desiredNumberScheduled: nodes } });
  }

  function shareLock(nodeId: string, percent: number, census?: FleetCensus): DaemonSetLock {
    return new DaemonSetLock({
      kube,
      nodeId,
      namespace: NS,
      name: DS,
      annotation: ANNOTATION,
      ttlMs: 0,
      concurrency: { percent },
      clock: new SystemClock(),
      log,
      ...(census === undefined ? {} : { census, countUnavailable: true }),
    });
  }

  it("gives 50% of the 4 nodes the DaemonSet runs on two slots, and writes kured's multi form with maxOwners 2", async () => {
    runsOn(4);
    const results = [];
    for (const n of ['n1', 'n2', 'n3'])
      results.push(await shareLock(n, 50).acquire({ unschedulable: false }));
    expect(results.map((r) => r.acquired)).toEqual([true, true, false]);
    expect(results[2]).toMatchObject({
      reason: expect.stringMatching(/^all 50% = 2 lock slot\(s\) held by n1, n2/),
    });
    expect(JSON.parse(annotation() ?? '{}')).toMatchObject({ maxOwners: 2 });
  });

  it('follows the fleet as it grows: the same 50% of 6 nodes gives a third slot', async () => {
    runsOn(4);
    for (const n of ['n1', 'n2']) await shareLock(n, 50).acquire({ unschedulable: false });
    runsOn(6);
    expect(await shareLock('n3', 50).acquire({ unschedulable: false })).toMatchObject({ acquired: true });
    expect(JSON.parse(annotation() ?? '{}')).toMatchObject({ maxOwners: 3 });
  });

  it('gives one slot, in the multi form, while the DaemonSet controller has not counted the nodes yet', async () => {
    expect(await shareLock('n1', 50).acquire({ unschedulable: false })).toMatchObject({ acquired: true });
    expect(await shareLock('n2', 50).acquire({ unschedulable: false })).toMatchObject({ acquired: false });
    expect(JSON.parse(annotation() ?? '{}')).toMatchObject({ maxOwners: 1 });
  });

  it('counts a NotReady node and a node cordoned by someone else against the budget, naming them, with one list of the Nodes', async () => {
    runsOn(20);
    for (let i = 0; i < 20; i++) server.update<V1Node>('nodes', readyNode(`n${i}`));
    server.update<V1Node>('nodes', readyNode('n7', 'boot-1', 'False'));
    server.update<V1Node>('nodes', { ...readyNode('n8'), spec: { unschedulable: true } });
    const census = new FleetCensus({ kube, clock: new SystemClock(), nodeId: 'n1', groupLabel: undefined });
    // 15% of 20 nodes: 3 slots, two taken by unavailable nodes
    const fullLists = (): number =>
      server.requests.filter(
        (r) => r.method === 'GET' && r.path === '/api/v1/nodes' && !r.query.labelSelector,
      ).length;
    expect(await shareLock('n1', 15, census).acquire({ unschedulable: false })).toMatchObject({
      acquired: true,
    });
    expect(await shareLock('n2', 15, census).acquire({ unschedulable: false })).toMatchObject({
      acquired: false,
      reason: expect.stringContaining(
        'n7, n8 unavailable (not ready, unreachable or cordoned by someone else: --count-unavailable)',
      ),
    });
    // one list of every Node: an acquisition may judge from a read of its moment (FRESH_CENSUS_MS)
    expect(fullLists()).toBe(1);
  });
});
