// Issue 55, item 1: what forged turns can make the waiters cost. A thief with the coordinator's token
// takes its Lease and rewrites a turn on every waiting node every 100 ms, while an unavailable node
// fills the only slot (--concurrency 1, --count-unavailable). Before, each rewrite woke each waiter,
// which then read the fleet again (on a real kube-apiserver: 168 LIST nodes in 90 s from 3 waiters).
// Now a waiter that held a turn and found no room waits for what would change the room: a slot
// freed in the lock, or the unavailable node back. Through the real client against the fake API
// server, with the agents' own locks (createAgentDeps), counted in the requests the server served.
import { afterEach, beforeEach, expect, it } from '@jest/globals';
import { createAgentDeps } from '../../../src/agent/create-agent.js';
import { SystemClock } from '../../../src/clock/clock.js';
import type { V1Lease, V1Node } from '../../../src/kube/kube.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { ADVICE_ANNOTATION, coordinatorLeaseName } from '../../../src/queue/coordinator-lease.js';
import { TURN_ANNOTATION, formatTurn } from '../../../src/queue/turn.js';
import type { FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { testConfig } from '../../fakes/config.js';
import { RecordingMetrics } from '../../fakes/fake-cluster.js';
import { kuredDaemonSet, readyNode } from '../../fakes/kube-objects.js';
import { waitFor, realDelay } from '../../fakes/wait-for.js';
import { lockHolders } from '../../fakes/cluster-reads.js';

const NS = 'kube-system';
const WAITERS = Array.from({ length: 20 }, (_, i) => `w${String(i).padStart(2, '0')}`);
const DOWN = 'down-1';

let server: FakeApiServer;
const stops: AbortController[] = [];

beforeEach(async () => {
  server = await startClusterApiServer();
  server.create('daemonsets', kuredDaemonSet());
  for (const name of WAITERS) server.create<V1Node>('nodes', readyNode(name));
  server.create<V1Node>('nodes', readyNode(DOWN, 'boot-1', 'False'));
});

afterEach(async () => {
  for (const stop of stops.splice(0)) stop.abort();
  await server.close();
});

/** The thief: the coordinator's Lease as its own, and a fresh turn on every waiter. */
function steal(seq: number): void {
  const name = coordinatorLeaseName('kured');
  const lease: V1Lease = {
    metadata: {
      name,
      namespace: NS,
      annotations: { [ADVICE_ANNOTATION]: JSON.stringify({ by: 'attacker', seq, nodes: 21 }) },
    },
    // eslint-disable-next-line no-restricted-syntax -- real time: the storm and the agents run on the system clock
    spec: { holderIdentity: 'attacker', leaseDurationSeconds: 60, renewTime: new Date().toISOString() },
  };
  if (server.get('leases', NS, name) === undefined) server.create('leases', lease);
  else server.update('leases', lease);
  if (seq === 0) return;
  for (const w of WAITERS) {
    const n = server.get<V1Node>('nodes', undefined, w)!;
    // eslint-disable-next-line no-restricted-syntax -- real time: the storm and the agents run on the system clock
    const turn = formatTurn({ since: new Date(Date.now() + seq).toISOString(), by: 'attacker' });
    n.metadata = { ...n.metadata, annotations: { ...n.metadata?.annotations, [TURN_ANNOTATION]: turn } };
    server.update('nodes', n);
  }
}

/** The storm's rewrites of every waiter's turn, one each 100 ms; the waiters have read the fleet once their first 20 are past. */
const STORM_REWRITES = 50;
const STORM_LATE_FROM = 20;

const holders = (): string[] => lockHolders(server);

/** The requests of one kind the agents sent since `from` (ms since the epoch). */
function sent(kind: 'list nodes' | 'get daemonsets' | 'get leases', from: number): number {
  return server.requests.filter((r) => {
    if (r.at < from || r.method !== 'GET' || r.query.watch === 'true') return false;
    if (kind === 'list nodes') return r.path === '/api/v1/nodes';
    if (kind === 'get daemonsets') return r.path.endsWith('/daemonsets/kured');
    return r.path.includes('/leases/');
  }).length;
}

/** A waiter as the agent's loop drives its lock: acquire, and wait as the refusal says. */
async function waiter(name: string, took: string[], signal: AbortSignal): Promise<void> {
  const config = testConfig({ nodeId: name, concurrency: { count: 1 }, coordinator: true });
  const deps = createAgentDeps(config, {
    kube: server.kubeInMemory(),
    clock: new SystemClock(),
    logger: new MemoryLogger(),
    metrics: new RecordingMetrics(),
    views: false,
  });
  while (!signal.aborted) {
    const result = await deps.lock.acquire({ unschedulable: false }, signal);
    if (result.acquired) {
      took.push(name);
      return;
    }
    await deps.lock.waitForChange(600_000, signal, result.wait);
  }
}

it('turns rewritten on 20 waiters every 100 ms wake each at most once; the unavailable node back wakes them', async () => {
  steal(0);
  const stop = new AbortController();
  stops.push(stop);
  const took: string[] = [];
  const running = WAITERS.map((w) => waiter(w, took, stop.signal).catch(() => undefined));
  await waitFor(
    () => server.requests.filter((r) => r.query.watch === 'true').length >= 20,
    '20 waiters wait',
  );
  // on every accepted write: at most one node out of service (the slot, or the unavailable node)
  const violations: string[] = [];
  const unwatch = server.onWrite(() => {
    const down = server.get<V1Node>('nodes', undefined, DOWN)?.status?.conditions?.[0]?.status !== 'True';
    const out = holders().length + (down ? 1 : 0);
    if (out > 1)
      violations.push(`${String(out)} out of service: ${holders().join(', ')}${down ? ` and ${DOWN}` : ''}`);
  });
  // eslint-disable-next-line no-restricted-syntax -- real time: the storm and the agents run on the system clock
  const start = Date.now();
  let seq = 0;
  let lateFrom = Number.POSITIVE_INFINITY;
  // eslint-disable-next-line no-restricted-syntax -- real time: the storm and the agents run on the system clock
  const storm = setInterval(() => {
    steal(++seq);
    // eslint-disable-next-line no-restricted-syntax -- real time: the storm and the agents run on the system clock
    if (seq === STORM_LATE_FROM) lateFrom = Date.now();
  }, 100);
  // a storm of so many rewrites, however long a loaded machine takes to send them (nominally 5 s):
  // counted, not timed, so that a slow machine does not measure a smaller storm
  await waitFor(() => seq >= STORM_REWRITES, `${String(STORM_REWRITES)} rewrites of the turns`, 45_000);
  clearInterval(storm);
  const figures = {
    listNodes: sent('list nodes', start),
    getDaemonSets: sent('get daemonsets', start),
    getLeases: sent('get leases', start),
    lateListNodes: sent('list nodes', lateFrom),
  };
  // each waiter woke for the first turn at most, read the fleet (its census: two lists) once, and
  // waits for the room since (before: 1,040 LIST nodes, 640 of them in the last 3 s)
  expect(figures.listNodes).toBeLessThanOrEqual(2 * WAITERS.length);
  expect(figures.getDaemonSets).toBeLessThanOrEqual(2 * WAITERS.length);
  expect(figures.getLeases).toBeLessThanOrEqual(2 * WAITERS.length);
  expect(figures.lateListNodes).toBe(0);
  expect(took).toEqual([]);
  // the unavailable node comes back: one waiter takes the slot within seconds, not at a recheck minutes later
  const down = server.get<V1Node>('nodes', undefined, DOWN)!;
  server.update('nodes', {
    ...down,
    status: { ...down.status, conditions: [{ type: 'Ready', status: 'True' }] },
  });
  await waitFor(() => took.length === 1, 'a waiter takes the freed slot', 15_000);
  expect(holders()).toEqual(took);
  stop.abort();
  await Promise.all(running);
  unwatch();
  expect(violations).toEqual([]);
  expect(holders()).toHaveLength(1);
}, 60_000);

it('an unavailable node whose readiness flaps every 100 ms (its kubelet, or its token, lying) wakes each waiter once, then not for 10 s', async () => {
  // no coordinator: the waiters go first come. A second node down for good, so that the flapping
  // node's return gives no room either (--concurrency 1, --count-unavailable)
  server.create<V1Node>('nodes', readyNode('down-2', 'boot-1', 'False'));
  const stop = new AbortController();
  stops.push(stop);
  const took: string[] = [];
  const running = WAITERS.map((w) => waiter(w, took, stop.signal).catch(() => undefined));
  const follows = (): number =>
    server.requests.filter(
      (r) => r.query.watch === 'true' && r.query.fieldSelector === `metadata.name=${DOWN}`,
    ).length;
  await waitFor(() => follows() >= WAITERS.length, '20 waiters follow the unavailable node');
  // eslint-disable-next-line no-restricted-syntax -- real time: the storm and the agents run on the system clock
  const start = Date.now();
  let ready = false;
  // eslint-disable-next-line no-restricted-syntax -- real time: the storm and the agents run on the system clock
  const flapping = setInterval(() => {
    ready = !ready;
    const down = server.get<V1Node>('nodes', undefined, DOWN)!;
    const status = ready ? 'True' : 'False';
    server.update('nodes', { ...down, status: { ...down.status, conditions: [{ type: 'Ready', status }] } });
  }, 100);
  await realDelay(5_000);
  clearInterval(flapping);
  // the first return wakes each waiter (spread over a second), whose census finds no room; the
  // next follow of that node starts 10 s later (without the back-off: every return, every waiter)
  expect(sent('list nodes', start)).toBeLessThanOrEqual(2 * WAITERS.length);
  expect(sent('list nodes', start + 2_000)).toBe(0);
  expect(took).toEqual([]);
  expect(holders()).toEqual([]);
  stop.abort();
  await Promise.all(running);
}, 60_000);
