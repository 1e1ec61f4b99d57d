// The coordinator (src/coordinator) through the real client-node against the fake API server: who
// gets the turn for a freed slot, that only that node is woken, what a dead leader costs, and that
// no turn, stale or forged, lets more than --concurrency nodes take a slot.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { FakeClock } from '../../fakes/fake-clock.js';
import { kuredDaemonSet, readyNode } from '../../fakes/kube-objects.js';
import type { Kube, V1DaemonSet, V1Lease, V1Node } from '../../../src/kube/kube.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { READ_ATTEMPTS } from '../../../src/kube/client.js';
import { Coordinator } from '../../../src/coordinator/coordinator.js';
import { LEASE_DURATION_MS, RETRY_PERIOD_MS } from '../../../src/coordinator/lease-elector.js';
import { CONTENDED_RETRY_MS, DaemonSetLock } from '../../../src/lock/daemonset-lock.js';
import {
  CoordinatorLease,
  ADVICE_ANNOTATION,
  parseAdvice,
  coordinatorLeaseName,
} from '../../../src/queue/coordinator-lease.js';
import { coordinatorOf, createLock } from '../../../src/agent/create-agent.js';
import { defaultConfig } from '../../../src/config/parse.js';
import { HANDOFF_GRACE_MS } from '../../../src/lock/lock-state.js';
import {
  TURN_ANNOTATION,
  formatLapsedTurn,
  formatTurn,
  parseLapsedTurn,
  parseTurn,
} from '../../../src/queue/turn.js';
import { NodeTurnGate, UNKNOWN_FLEET_RECHECK_MS, recheckMs } from '../../../src/queue/turn-gate.js';
import { STATUS_ANNOTATION, formatStatus } from '../../../src/node/status.js';
import { SystemClock, type Clock } from '../../../src/clock/clock.js';
import type { FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { realDelay } from '../../fakes/wait-for.js';
import { ForwardingKube } from '../../../src/kube/forwarding-kube.js';
import type { NodePage, PageOptions } from '../../../src/kube/kube.js';

const LOCK = 'weave.works/kured-node-lock';
const NS = 'kube-system';
const NODES = ['n0', 'n1', 'n2', 'n3', 'n4'];

let server: FakeApiServer;
let clock: FakeClock;
let log: MemoryLogger;
const stops: AbortController[] = [];

beforeEach(async () => {
  server = await startClusterApiServer();
  clock = new FakeClock('2026-01-05T10:00:00Z');
  log = new MemoryLogger();
  server.create('daemonsets', kuredDaemonSet());
  for (const name of NODES) server.create<V1Node>('nodes', readyNode(name));
});

afterEach(async () => {
  for (const stop of stops.splice(0)) stop.abort();
  await server.close();
});

/** The node's status says it waits for a slot, needed since `since`. */
/** A client whose every page of a Node list is answered `delayMs` (on `clock`) after it is asked. */
class SlowPages extends ForwardingKube {
  constructor(
    inner: Kube,
    private readonly clock: FakeClock,
    private readonly delayMs: number,
  ) {
    super(inner, true);
  }

  override async listNodesPage(options?: PageOptions, signal?: AbortSignal): Promise<NodePage> {
    await this.clock.sleep(this.delayMs, signal);
    return super.listNodesPage(options, signal);
  }
}

function waiting(name: string, since: string, reason = 'all 1 lock slot(s) held'): void {
  const node = server.get<V1Node>('nodes', undefined, name)!;
  const status = formatStatus({
    phase: 'waiting-for-lock',
    reason,
    since,
    bootID: 'b',
    requiredSince: since,
  });
  const annotations = { ...node.metadata?.annotations, [STATUS_ANNOTATION]: status };
  server.update('nodes', { ...node, metadata: { ...node.metadata, annotations } });
}

/** Writes the lock annotation as kured's single form naming `holder` (undefined: removes it). */
function lockHeldBy(holder: string | undefined): void {
  const ds = server.get<V1DaemonSet>('daemonsets', NS, 'kured')!;
  const annotations = { ...ds.metadata?.annotations };
  if (holder === undefined) Reflect.deleteProperty(annotations, LOCK);
  else
    annotations[LOCK] = JSON.stringify({
      nodeID: holder,
      metadata: { unschedulable: false },
      created: '2026-01-05T10:00:00Z',
      TTL: 0,
    });
  server.update('daemonsets', { ...ds, metadata: { ...ds.metadata, annotations } });
}

/** The nodes that have a turn (not a lapsed one). */
function turns(): string[] {
  return NODES.filter(
    (n) =>
      parseTurn(server.get<V1Node>('nodes', undefined, n)?.metadata?.annotations?.[TURN_ANNOTATION]) !==
      undefined,
  );
}

/** A Kube whose calls never return once killed: a process that died without a word. */
function killable(kube: Kube): { kube: Kube; kill: () => void } {
  let dead = false;
  const proxy = new Proxy(kube, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]): unknown =>
        dead ? new Promise(() => undefined) : (value as (...a: unknown[]) => unknown).apply(target, args);
    },
  });
  return {
    kube: proxy,
    kill: () => {
      dead = true;
    },
  };
}

function coordinator(
  identity: string,
  kube: Kube = server.kubeInMemory(),
  pageSize?: number,
  extra: { countUnavailable?: boolean } = {},
): Coordinator {
  const c = new Coordinator({
    ...extra,
    ...(pageSize === undefined ? {} : { pageSize }),
    kube,
    namespace: NS,
    dsName: 'kured',
    leaseName: coordinatorLeaseName('kured'),
    annotation: LOCK,
    ttlMs: 0,
    concurrency: { count: 1 },
    identity,
    clock,
    log,
    random: () => 0.5,
  });
  const stop = new AbortController();
  stops.push(stop);
  void c.run(stop.signal);
  return c;
}

/** Moves the fake clock in small steps until `condition` holds (HTTP answers arrive in real time). */
async function advanceUntil(condition: () => boolean, what: string, limitMs = 120_000): Promise<number> {
  let moved = 0;
  while (!condition()) {
    if (moved > limitMs) throw new Error(`not within ${limitMs} ms of fake time: ${what}`);
    await clock.advance(100);
    moved += 100;
    await realDelay(5);
  }
  return moved;
}

describe('the coordinator', () => {
  it('gives a freed slot to the waiting node whose reboot has been needed longest, and to no other', async () => {
    lockHeldBy('n0');
    waiting('n1', '2026-01-05T09:30:00Z');
    waiting('n2', '2026-01-05T09:10:00Z');
    waiting('n3', '2026-01-05T09:20:00Z');
    const c = coordinator('a');
    await advanceUntil(() => c.leading && c.stats.plans > 0, 'the coordinator leads and has planned');
    expect(turns()).toEqual([]); // the lock is full: no turn
    lockHeldBy(undefined);
    await advanceUntil(() => turns().length > 0, 'a turn is given');
    await clock.advance(1000);
    expect(turns()).toEqual(['n2']);
    // n2 takes the slot: the lock is full again, so nobody else gets a turn; n2's used turn stays
    // while it holds the slot (no write to a node in its cycle) and goes once its cycle is over
    lockHeldBy('n2');
    await clock.advance(5000);
    expect(turns()).toEqual(['n2']);
    lockHeldBy(undefined);
    const n2 = server.get<V1Node>('nodes', undefined, 'n2')!;
    const done = formatStatus({ phase: 'idle', reason: 'done', since: '2026-01-05T10:05:00Z', bootID: 'b2' });
    server.update('nodes', {
      ...n2,
      metadata: { ...n2.metadata, annotations: { ...n2.metadata?.annotations, [STATUS_ANNOTATION]: done } },
    });
    await advanceUntil(() => !turns().includes('n2'), 'the used turn is taken back after the cycle');
    await advanceUntil(() => turns().includes('n3'), 'the next oldest gets the freed slot');
  });

  it('passes over a node that does not take its turn within the grace, to the next oldest', async () => {
    waiting('n1', '2026-01-05T09:30:00Z');
    waiting('n2', '2026-01-05T09:10:00Z');
    const c = coordinator('a');
    await advanceUntil(() => turns().includes('n2'), 'n2 gets the turn');
    const before = c.stats.lapsed;
    await clock.advance(HANDOFF_GRACE_MS - 1000);
    expect(turns()).toEqual(['n2']);
    await advanceUntil(() => turns().includes('n1'), 'n1 gets the turn after n2 lapsed');
    expect(turns()).toEqual(['n1']);
    expect(c.stats.lapsed).toBe(before + 1);
  });

  it.each([
    ['keeps a node whose turn lapsed behind the others while its agent says nothing', false, 'n1'],
    ['gives a node whose turn lapsed its place back once its agent writes its status again', true, 'n2'],
  ])('%s', async (_name, signOfLife, next) => {
    waiting('n1', '2026-01-05T09:30:00Z');
    waiting('n2', '2026-01-05T09:10:00Z');
    waiting('n3', '2026-01-05T09:20:00Z');
    const c = coordinator('a');
    await advanceUntil(() => turns().includes('n2'), 'n2, the oldest, gets the turn');
    await advanceUntil(() => turns().includes('n3'), 'n3 gets the turn after n2 lapsed');
    expect(turns()).toEqual(['n3']);
    // n2 carries the record of its lapsed turn, which is no turn
    const n2 = server.get<V1Node>('nodes', undefined, 'n2')?.metadata?.annotations?.[TURN_ANNOTATION];
    expect(parseLapsedTurn(n2)?.turn.by).toBe('a');
    // the slow agent of n2 finds its turn gone and says so in its status (lapsedTurnReason)
    if (signOfLife)
      waiting('n2', '2026-01-05T09:10:00Z', 'waiting for its turn again: the one given at … lapsed');
    await advanceUntil(() => !turns().includes('n3'), "n3's turn lapses too");
    await advanceUntil(() => turns().length > 0, 'the next turn');
    expect(turns()).toEqual([next]);
    expect(c.stats.lapsed).toBe(2);
  });

  it('is replaced by its standby within one lease duration when the leader dies without a word', async () => {
    lockHeldBy('n0');
    waiting('n1', '2026-01-05T09:30:00Z');
    const first = killable(server.kubeInMemory());
    const a = coordinator('a', first.kube);
    await advanceUntil(() => a.leading, 'a leads');
    const b = coordinator('b');
    await clock.advance(2 * RETRY_PERIOD_MS);
    expect(b.leading).toBe(false);
    first.kill();
    const lease = (): V1Lease | undefined => server.get<V1Lease>('leases', NS, coordinatorLeaseName('kured'));
    const lastRenewal = lease()?.metadata?.resourceVersion;
    const took = await advanceUntil(() => b.leading, 'b takes over');
    // b must have seen the Lease unchanged for a whole duration, and not much more
    expect(took).toBeGreaterThanOrEqual(LEASE_DURATION_MS - 2 * RETRY_PERIOD_MS);
    expect(took).toBeLessThanOrEqual(LEASE_DURATION_MS + 2 * RETRY_PERIOD_MS);
    expect(lease()?.spec?.holderIdentity).toBe('b');
    expect(lease()?.metadata?.resourceVersion).not.toBe(lastRenewal);
    lockHeldBy(undefined);
    await advanceUntil(() => turns().includes('n1'), 'the new leader gives the turn');
  });

  it('lists the fleet page by page from one snapshot, and gives the turn to the oldest waiter on its last page', async () => {
    waiting('n1', '2026-01-05T09:30:00Z');
    waiting('n4', '2026-01-05T09:10:00Z');
    const c = coordinator('a', undefined, 2);
    await advanceUntil(() => turns().length > 0, 'a turn is given');
    expect(turns()).toEqual(['n4']);
    expect(c.stats.plans).toBeGreaterThan(0);
    const pages = server.requests.filter((r) => r.path === '/api/v1/nodes' && r.query.limit === '2');
    // 5 nodes by 2: three pages, the later two continuing the first's snapshot
    expect(pages).toHaveLength(3);
    expect(pages.filter((r) => r.query.continue !== undefined)).toHaveLength(2);
  });

  it('gives up leading when it cannot list the nodes for a lease duration: releases its Lease, and the standby takes over and gives the turn', async () => {
    waiting('n1', '2026-01-05T09:30:00Z');
    server.injectFailure({ method: 'GET', pathIncludes: '/api/v1/nodes?limit=' }, 500, 1_000_000);
    // the client's retries of the 500 wait on the test's clock: the list fails (it is not still being answered)
    const a = coordinator('a', server.kubeInMemory({ clock }));
    const ledAt = await advanceUntil(() => a.leading, 'a leads');
    const b = coordinator('b', server.kubeInMemory({ clock }));
    const lease = (): V1Lease | undefined => server.get<V1Lease>('leases', NS, coordinatorLeaseName('kured'));
    const blindFor = await advanceUntil(
      () => lease()?.spec?.holderIdentity === '',
      'a steps down and releases its Lease',
    );
    expect(ledAt + blindFor).toBeGreaterThanOrEqual(LEASE_DURATION_MS);
    expect(blindFor).toBeLessThanOrEqual(LEASE_DURATION_MS + 2 * RETRY_PERIOD_MS);
    expect(a.stats.stepDowns).toBe(1);
    expect(turns()).toEqual([]);
    // an agent reading the Lease now waits for the standby (not first come at once: no herd)
    const reader = new CoordinatorLease({
      kube: server.kubeInMemory(),
      namespace: NS,
      name: coordinatorLeaseName('kured'),
      clock,
    });
    expect(await reader.read()).toMatchObject({ live: true, holder: 'none: released, its standby expected' });
    server.clearFailures();
    await advanceUntil(() => b.leading, 'the standby takes over', 2 * RETRY_PERIOD_MS);
    await advanceUntil(() => turns().includes('n1'), 'the standby gives the turn');
    // a sits out: it does not take the Lease back from a standby that can see
    await clock.advance(LEASE_DURATION_MS);
    expect(lease()?.spec?.holderIdentity).toBe('b');
  });

  it('waits for its first list of the nodes while it is still being answered past a lease duration, and gives the turn from it', async () => {
    waiting('n1', '2026-01-05T09:30:00Z');
    waiting('n2', '2026-01-05T09:10:00Z');
    // a loaded server: each page of the list (two Nodes a page) is answered 12 s after it is asked
    const slow = (): Kube => new SlowPages(server.kubeInMemory({ clock }), clock, 12_000);
    const a = coordinator('a', slow(), 2);
    const ledAt = await advanceUntil(() => a.leading, 'a leads');
    const b = coordinator('b', slow(), 2);
    const took = await advanceUntil(
      () => turns().includes('n2'),
      'a gives the turn once its list is answered',
    );
    expect(ledAt + took).toBeGreaterThan(LEASE_DURATION_MS);
    expect(a.stats.stepDowns).toBe(0);
    expect(b.leading).toBe(false);
  });

  it('leads on while the API server turns its list of the nodes away (429) for longer than a lease, and gives the turn once it answers', async () => {
    waiting('n1', '2026-01-05T09:30:00Z');
    server.injectFailure({ method: 'GET', pathIncludes: '/api/v1/nodes?limit=' }, 429, 1_000_000);
    // the client's retries of the 429 (Retry-After 1 s) wait on the test's clock
    const a = coordinator('a', server.kubeInMemory({ clock }));
    await advanceUntil(() => a.leading, 'a leads');
    const b = coordinator('b', server.kubeInMemory({ clock }));
    const lease = (): V1Lease | undefined => server.get<V1Lease>('leases', NS, coordinatorLeaseName('kured'));
    // three lease durations blind: the standby, the same ServiceAccount, would be turned away alike
    for (let t = 0; t < 3 * LEASE_DURATION_MS; t += RETRY_PERIOD_MS) {
      await clock.advance(RETRY_PERIOD_MS);
      expect(lease()?.spec?.holderIdentity).toBe('a');
    }
    expect(a.stats.stepDowns).toBe(0);
    expect(b.leading).toBe(false);
    expect(turns()).toEqual([]);
    const throttled = server.requests.filter((r) => r.path === '/api/v1/nodes' && r.status === 429);
    expect(throttled.length).toBeGreaterThan(1);
    server.clearFailures();
    await advanceUntil(() => turns().includes('n1'), 'a gives the turn once the server answers');
    expect(lease()?.spec?.holderIdentity).toBe('a');
  });

  it('keeps planning after its turn write was committed but answered 500, and gives no second turn for it', async () => {
    waiting('n1', '2026-01-05T09:30:00Z');
    waiting('n2', '2026-01-05T09:10:00Z');
    server.injectFailure({ method: 'PATCH', pathIncludes: '/nodes/n2' }, 500, 1, {
      mode: 'commit-then-fail',
    });
    const c = coordinator('a');
    await advanceUntil(() => turns().includes('n2'), 'n2 has the turn (written, answered 500)');
    await clock.advance(3000);
    expect(turns()).toEqual(['n2']);
    expect(c.leading).toBe(true);
    const failed = server.requests.filter((r) => r.method === 'PATCH' && r.path.endsWith('/nodes/n2'));
    expect(failed.map((r) => r.status)).toContain(500);
  });
});

/** The agent's own lock for `nodeId` (createLock: with the turn gate), on a client of its own. */
function agentLock(nodeId: string, concurrency: number, onClock: Clock = new SystemClock()): DaemonSetLock {
  const kube = server.kubeInMemory();
  const config = {
    ...defaultConfig(),
    nodeId,
    dsNamespace: NS,
    dsName: 'kured',
    lockAnnotation: LOCK,
    concurrency: { count: concurrency },
    lockQueue: 'fair' as const,
  };
  const io = { kube, clock: onClock, logger: log, random: Math.random };
  return createLock(config, io, coordinatorOf(config, io));
}

/** A coordinator's Lease that looks alive to a reader that has just started (a fleet of 5 nodes). */
async function liveLease(): Promise<void> {
  const advice = JSON.stringify({ by: 'someone', seq: 1, nodes: NODES.length });
  await server.kubeInMemory().createLease(NS, {
    metadata: {
      name: coordinatorLeaseName('kured'),
      namespace: NS,
      annotations: { [ADVICE_ANNOTATION]: advice },
    },
    spec: { holderIdentity: 'someone', leaseDurationSeconds: 30 },
  });
}

describe("other operators' nodes", () => {
  /** The coordinator's advice: why it gives no turn, as the waiters show it. */
  function held(): string {
    const lease = server.get<V1Lease>('leases', NS, coordinatorLeaseName('kured'));
    return parseAdvice(lease?.metadata?.annotations?.[ADVICE_ANNOTATION])?.held?.reason ?? '';
  }

  function tainted(name: string, taint: { key: string; value?: string; effect: string } | undefined): void {
    const node = server.get<V1Node>('nodes', undefined, name)!;
    server.update('nodes', { ...node, spec: { ...node.spec, taints: taint === undefined ? [] : [taint] } });
  }

  it.each([
    ['Karpenter disrupts', { key: 'karpenter.sh/disrupted', effect: 'NoSchedule' }, 'Karpenter'],
    [
      'Karpenter (before v1) disrupts',
      { key: 'karpenter.sh/disruption', value: 'disrupting', effect: 'NoSchedule' },
      'Karpenter',
    ],
    [
      'the cluster autoscaler removes',
      { key: 'ToBeDeletedByClusterAutoscaler', value: '1767607200', effect: 'NoSchedule' },
      'the cluster autoscaler',
    ],
  ])(
    'at --concurrency 1 gives no turn while %s a node, names it, and gives the turn once its taint is gone',
    async (_name, taint, by) => {
      tainted('n4', taint);
      waiting('n1', '2026-01-05T09:30:00Z');
      const c = coordinator('a', undefined, undefined, { countUnavailable: true });
      await advanceUntil(() => c.leading && c.stats.plans > 0 && held() !== '', 'it leads and advises');
      await clock.advance(5000);
      expect(turns()).toEqual([]);
      expect(held()).toContain(`n4: taken out by ${by} (${taint.key})`);
      tainted('n4', undefined);
      await advanceUntil(() => turns().includes('n1'), 'the waiter gets its turn');
    },
  );

  it('does not count a node the cluster autoscaler only considers (its PreferNoSchedule candidate taint)', async () => {
    tainted('n4', {
      key: 'DeletionCandidateOfClusterAutoscaler',
      value: '1767607200',
      effect: 'PreferNoSchedule',
    });
    waiting('n1', '2026-01-05T09:30:00Z');
    coordinator('a', undefined, undefined, { countUnavailable: true });
    await advanceUntil(() => turns().includes('n1'), 'the waiter gets its turn');
  });

  /** n4 under a medik8s NodeMaintenance, n1 waiting, and a coordinator leading that names n4 as held. */
  async function maintainedN4(): Promise<void> {
    server.create('nodemaintenances', {
      apiVersion: 'nodemaintenance.medik8s.io/v1beta1',
      kind: 'NodeMaintenance',
      metadata: { name: 'nm-n4' },
      spec: { nodeName: 'n4', reason: 'firmware' },
    });
    waiting('n1', '2026-01-05T09:30:00Z');
    const c = coordinator('a', undefined, undefined, { countUnavailable: true });
    await advanceUntil(() => c.leading && held().includes('n4'), 'it names the maintained node');
  }

  it("counts a node under a medik8s NodeMaintenance from before its operator's cordon, until the object is gone", async () => {
    await maintainedN4();
    await clock.advance(60_000);
    expect(turns()).toEqual([]);
    expect(held()).toContain('n4: taken out by a medik8s NodeMaintenance');
    server.delete('nodemaintenances', undefined, 'nm-n4');
    await advanceUntil(() => turns().includes('n1'), 'the waiter gets its turn within a read of them');
  });

  it('keeps counting a maintained node while the lists of NodeMaintenances fail (500), and lets go once one answers without it', async () => {
    await maintainedN4();
    // the object goes, but every list of it fails: the maintenance is not taken to be over
    server.injectFailure({ method: 'GET', pathIncludes: 'nodemaintenance.medik8s.io' }, 500, 1000);
    server.delete('nodemaintenances', undefined, 'nm-n4');
    const failed = (): number =>
      server.requests.filter((r) => r.path.includes('nodemaintenance.medik8s.io') && r.status === 500).length;
    await advanceUntil(() => failed() >= READ_ATTEMPTS, 'a whole read of them fails (every attempt)');
    for (let i = 0; i < 6; i++) {
      expect(turns()).toEqual([]);
      await clock.advance(10_000);
      await realDelay(2);
    }
    expect(turns()).toEqual([]);
    server.clearFailures();
    await advanceUntil(() => turns().includes('n1'), 'the waiter gets its turn once a list answers');
  });

  it.each([
    ['let through by its operator (Draining)', 'Draining', true],
    ["still Pending behind its operator's own limit", 'Pending', false],
  ])(
    "counts a node under NVIDIA's NodeMaintenance %s: %p holds the waiter back",
    async (_name, reason, holds) => {
      server.create('nvidianodemaintenances', {
        apiVersion: 'maintenance.nvidia.com/v1alpha1',
        kind: 'NodeMaintenance',
        metadata: { name: 'driver-n4', namespace: 'default' },
        spec: { nodeName: 'n4', requestorID: 'nvidia.gpu-operator' },
        status: { conditions: [{ type: 'Ready', status: 'False', reason }] },
      });
      waiting('n1', '2026-01-05T09:30:00Z');
      const c = coordinator('a', undefined, undefined, { countUnavailable: true });
      await advanceUntil(() => c.leading && c.stats.plans > 0, 'it leads');
      await clock.advance(60_000);
      if (holds) {
        expect(turns()).toEqual([]);
        expect(held()).toContain('n4: taken out by an NVIDIA maintenance-operator NodeMaintenance');
      } else expect(turns()).toEqual(['n1']);
    },
  );

  it('reads no NodeMaintenance kind the API server does not serve more than once per 10 minutes, and says nothing of it', async () => {
    server.injectFailure({ method: 'GET', pathIncludes: 'nodemaintenances' }, 404, 1000);
    waiting('n1', '2026-01-05T09:30:00Z');
    coordinator('a', undefined, undefined, { countUnavailable: true });
    await advanceUntil(() => turns().includes('n1'), 'the waiter gets its turn');
    for (let i = 0; i < 60; i++) {
      await clock.advance(10_000);
      await realDelay(2);
    }
    const reads = server.requests.filter((r) => r.path.includes('nodemaintenances')).length;
    expect(reads).toBeLessThanOrEqual(4); // 2 kinds, at the start and 10 minutes later
    expect(log.entries.filter((e) => e.level === 'warn' || e.level === 'error')).toEqual([]);
  });
});

describe('turns and the lock', () => {
  it.each([
    ['every waiter holds a forged turn', 1],
    ['every waiter holds a forged turn, concurrency 2', 2],
  ])('%s: at most --concurrency nodes take a slot', async (_name, concurrency) => {
    await liveLease();
    const kube = server.kubeInMemory();
    for (const n of ['n1', 'n2', 'n3', 'n4']) {
      await kube.mergePatchNode(n, {
        metadata: { annotations: { [TURN_ANNOTATION]: formatTurn({ since: 'x', by: 'thief' }) } },
      });
    }
    const locks = ['n1', 'n2', 'n3', 'n4'].map((nodeId) => agentLock(nodeId, concurrency));
    const results = await Promise.all(locks.map((l) => l.acquire({ unschedulable: false })));
    expect(results.filter((r) => r.acquired)).toHaveLength(concurrency);
    const reasons = results.flatMap((r) => (r.acquired ? [] : [r.reason]));
    expect(reasons).toHaveLength(4 - concurrency);
    for (const reason of reasons) expect(reason).toMatch(/lock slot|contended/);
  });

  it('a node whose turn write loses every retry to conflicts tries again within seconds, before its turn lapses', async () => {
    await liveLease();
    await server.kubeInMemory().mergePatchNode('n1', {
      metadata: { annotations: { [TURN_ANNOTATION]: formatTurn({ since: 'x', by: 'a' }) } },
    });
    server.injectFailure({ method: 'PATCH', pathIncludes: '/daemonsets/kured' }, 409, 8);
    const lock = agentLock('n1', 1, clock);
    let first: Awaited<ReturnType<DaemonSetLock['acquire']>> | undefined;
    void lock.acquire({ unschedulable: false }).then((r) => (first = r));
    await advanceUntil(() => first !== undefined, 'the first acquisition gives up');
    expect(first?.acquired).toBe(false);
    if (first?.acquired === false) expect(first.reason).toMatch(/contended/);
    let waited = false;
    // the refusal says how to wait (a short back-off), and the wait is told so
    const how = first?.acquired === false ? first.wait : undefined;
    expect(how).toEqual({ for: 'contended' });
    void lock.waitForChange(3_600_000, undefined, how).then(() => (waited = true));
    const took = await advanceUntil(() => waited, 'the wait ends');
    expect(took).toBeLessThanOrEqual(CONTENDED_RETRY_MS * 1.5 + 100);
    expect(took).toBeLessThan(HANDOFF_GRACE_MS);
    let second: Awaited<ReturnType<DaemonSetLock['acquire']>> | undefined;
    void lock.acquire({ unschedulable: false }).then((r) => (second = r));
    await advanceUntil(() => second !== undefined, 'the second acquisition');
    expect(second?.acquired).toBe(true);
  });

  it('a waiter without a turn, with a live coordinator, does not take a free slot', async () => {
    await liveLease();
    const lists = (): number =>
      server.requests.filter((r) => r.path === '/api/v1/nodes' && r.query.labelSelector !== undefined).length;
    const before = lists();
    const result = await agentLock('n1', 1).acquire({ unschedulable: false });
    expect(result.acquired).toBe(false);
    // nor lists the nodes in a cycle: only the head of the queue pays for that list
    expect(lists()).toBe(before);
    if (!result.acquired) expect(result.reason).toMatch(/waiting for its turn/);
    expect(server.get<V1DaemonSet>('daemonsets', NS, 'kured')?.metadata?.annotations?.[LOCK]).toBeUndefined();
    // and with no coordinator Lease at all: first come
    server.delete('leases', NS, coordinatorLeaseName('kured'));
    expect((await agentLock('n1', 1).acquire({ unschedulable: false })).acquired).toBe(true);
  });
});

/** This node's turn gate (the agent's), reading the coordinator's Lease on the fake clock. */
function turnGate(nodeId: string): NodeTurnGate {
  const kube = server.kubeInMemory();
  const coordinatorLease = new CoordinatorLease({
    kube,
    namespace: NS,
    name: coordinatorLeaseName('kured'),
    clock,
  });
  return new NodeTurnGate({ kube, nodeId, coordinator: coordinatorLease, clock, log, random: () => 0.5 });
}

/** Renews the coordinator's Lease as a live leader does (a new resourceVersion). */
/** A renewal as the coordinator makes it: a new renewTime, and its advice (if any) published anew. */
function renewLease(): void {
  const lease = server.get<V1Lease>('leases', NS, coordinatorLeaseName('kured'))!;
  const annotations = { ...lease.metadata?.annotations };
  const advice = parseAdvice(annotations[ADVICE_ANNOTATION]);
  if (advice !== undefined)
    annotations[ADVICE_ANNOTATION] = JSON.stringify({ ...advice, seq: advice.seq + 1 });
  server.update('leases', {
    ...lease,
    metadata: { ...lease.metadata, annotations },
    // eslint-disable-next-line no-restricted-syntax -- real time: the Lease is judged on the coordinator's system clock
    spec: { ...lease.spec, renewTime: new Date().toISOString() },
  });
}

/** Writes `node`'s turn annotation as a coordinator would: a turn, a lapsed one, or none. */
async function turnAnnotation(node: string, value: string | null): Promise<void> {
  await server.kubeInMemory().mergePatchNode(node, {
    metadata: { annotations: { [TURN_ANNOTATION]: value } },
  });
}

const lapsedAt = (since: string): string =>
  formatLapsedTurn({ turn: { since, by: 'c-0' }, at: '2026-01-05T10:00:30Z' });

describe('a turn that lapsed before its node took the slot', () => {
  it.each<[string, string | null, RegExp]>([
    [
      'a waiter finds its lapsed turn on its node and says so, naming the turn, whatever it remembers',
      lapsedAt('T1'),
      /^waiting for its turn again: the one given at T1 by c-0 lapsed before this node took its slot/,
    ],
    ['a waiter without a turn annotation waits for its turn', null, /^waiting for its turn: the coordinator/],
    [
      'an unreadable turn annotation is no turn and no lapse',
      '{"lapsed":"x"}',
      /^waiting for its turn: the coordinator/,
    ],
  ])('%s', async (_name, annotation, reason) => {
    await liveLease();
    await turnAnnotation('n1', annotation);
    // a fresh gate: an agent restarted since, or one that never saw the turn, reads the same
    const verdict = await turnGate('n1').verdict();
    expect(verdict).toMatchObject({ kind: 'wait', reason: expect.stringMatching(reason) as unknown });
  });

  it('reads a lapsed turn as no turn: an agent with one takes no free slot', async () => {
    await liveLease();
    await turnAnnotation('n1', lapsedAt('T1'));
    const result = await agentLock('n1', 1).acquire({ unschedulable: false });
    expect(result.acquired).toBe(false);
    expect(server.get<V1DaemonSet>('daemonsets', NS, 'kured')?.metadata?.annotations?.[LOCK]).toBeUndefined();
  });

  it('words each lapse anew, so that the agent writes its status again for each', async () => {
    await liveLease();
    const gate = turnGate('n1');
    const reasonAfter = async (since: string): Promise<string> => {
      await turnAnnotation('n1', lapsedAt(since));
      const verdict = await gate.verdict();
      return verdict.kind === 'wait' ? verdict.reason : verdict.kind;
    };
    const first = await reasonAfter('T1');
    const second = await reasonAfter('T2');
    expect(first).toMatch(/lapsed/);
    expect(second).toMatch(/lapsed/);
    expect(second).not.toBe(first);
  });
});

describe('waiting for a turn', () => {
  it.each<[string, number | undefined, number]>([
    ['a small fleet: every lease duration', 5, LEASE_DURATION_MS],
    ['1,000 nodes: every 1,000 s (the fleet one read a second)', 1_000, 1_000_000],
    ['5,000 nodes: every 5,000 s', 5_000, 5_000_000],
    ['a fleet whose size is not published yet: every 5 minutes', undefined, UNKNOWN_FLEET_RECHECK_MS],
  ])("rereads the coordinator's Lease for %s", (_name, nodes, every) => {
    expect(recheckMs(LEASE_DURATION_MS, nodes)).toBe(every);
  });

  it('a Lease that says a 1 s duration and a fleet of none makes a waiter reread it at most every 10 s', () => {
    expect(recheckMs(1_000, 0)).toBe(10_000);
  });

  it('a waiter that queued before the coordinator published the fleet size rereads the Lease at the pace of the size it then publishes', async () => {
    await server.kubeInMemory().createLease(NS, {
      metadata: { name: coordinatorLeaseName('kured'), namespace: NS },
      spec: { holderIdentity: 'c-0', leaseDurationSeconds: 30 },
    });
    const gate = turnGate('n1');
    expect((await gate.verdict()).kind).toBe('wait');
    const stop = new AbortController();
    stops.push(stop);
    void gate.waitForTurn(3_600_000, stop.signal).catch(() => undefined);
    const reads = (): number =>
      server.requests.filter(
        (r) => r.method === 'GET' && r.path.endsWith(`/leases/${coordinatorLeaseName('kured')}`),
      ).length;
    const before = reads();
    // the coordinator now sees 5,000 nodes, and keeps renewing
    const lease = server.get<V1Lease>('leases', NS, coordinatorLeaseName('kured'))!;
    const advice = JSON.stringify({ by: 'c-0', seq: 1, nodes: 5_000 });
    server.update('leases', {
      ...lease,
      metadata: { ...lease.metadata, annotations: { [ADVICE_ANNOTATION]: advice } },
    });
    for (let t = 0; t < 40 * 60_000; t += 10_000) {
      renewLease();
      await clock.advance(10_000);
      await realDelay(2); // real time for the HTTP this step set off
    }
    // one read at about 5 minutes (the size unknown), then none for 5,000 s
    expect(reads() - before).toBe(1);
  });

  it.each([
    [
      'the coordinator releases its Lease and no standby takes it',
      () => {
        const lease = server.get<V1Lease>('leases', NS, coordinatorLeaseName('kured'))!;
        server.update('leases', { ...lease, spec: { ...lease.spec, holderIdentity: '' } });
      },
    ],
    ['the coordinator dies without a word and nobody renews its Lease', () => undefined],
    [
      'the coordinator is uninstalled (its Lease deleted)',
      () => {
        server.delete('leases', NS, coordinatorLeaseName('kured'));
      },
    ],
  ])(
    '%s: a waiter stops waiting for a turn within two lease durations, not its whole timeout',
    async (_name, end) => {
      await liveLease();
      const gate = turnGate('n1');
      expect((await gate.verdict()).kind).toBe('wait');
      const stop = new AbortController();
      stops.push(stop);
      let woke = false;
      void gate.waitForTurn(3_600_000, stop.signal).then(() => (woke = true));
      // alive: renewed every 10 s for five minutes, the waiter keeps waiting
      for (let t = 0; t < 300_000; t += 10_000) {
        renewLease();
        await clock.advance(10_000);
        await realDelay(5); // real time for the HTTP this step set off
      }
      expect(woke).toBe(false);
      end();
      const took = await advanceUntil(() => woke, 'the waiter wakes', 3_600_000);
      expect(took).toBeLessThanOrEqual(2 * LEASE_DURATION_MS * 1.25 + 1000);
      // and its next verdict goes first come
      expect((await gate.verdict()).kind).toBe('first-come');
    },
  );
});
