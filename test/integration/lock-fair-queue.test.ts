// The fair lock queue through the real client-node against the fake API server: a freed slot goes to
// the waiting node whose reboot has been needed longest, as the Nodes' status annotations record it.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../fakes/cluster-api-server.js';
import { waitFor } from '../fakes/wait-for.js';
import type { Kube, V1Node } from '../../src/kube/kube.js';
import { SystemClock, type Clock } from '../../src/clock/clock.js';
import { ClientNodeKube } from '../../src/kube/client.js';
import { MemoryLogger } from '../../src/log/logger.js';
import { DaemonSetLock, HANDOFF_GRACE_MS } from '../../src/lock/daemonset-lock.js';
import { NodeWaitQueue } from '../../src/lock/wait-queue.js';
import { createAgentDeps } from '../../src/agent/create-agent.js';
import { defaultConfig } from '../../src/config/parse.js';
import { STATUS_ANNOTATION, formatStatus, type NodeStatus } from '../../src/node/status.js';
import { type FakeApiServer } from '../../src/sim/fake-api-server.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { kuredDaemonSet } from '../fakes/kube-objects.js';

const META = { unschedulable: false, bootID: 'b' };

let server: FakeApiServer;
let log: MemoryLogger;

beforeEach(async () => {
  server = await startClusterApiServer();
  log = new MemoryLogger();
  server.create('daemonsets', kuredDaemonSet());
  for (const name of ['n1', 'n2', 'n3', 'n4']) server.create<V1Node>('nodes', { metadata: { name } });
});

afterEach(async () => {
  await server.close();
});

/** The node's status annotation says it waits for a slot, needed since `since`. */
function waiting(name: string, since: string, extra: Partial<NodeStatus> = {}): void {
  const node = server.get<V1Node>('nodes', undefined, name)!;
  const status: NodeStatus = {
    phase: 'waiting-for-lock',
    reason: 'all 1 lock slot(s) held',
    since,
    bootID: 'b',
    requiredSince: since,
    ...extra,
  };
  node.metadata = { ...node.metadata, annotations: { [STATUS_ANNOTATION]: formatStatus(status) } };
  server.update('nodes', node);
}

/** Counts this agent's requests by Kube method. */
function counted(kube: Kube): { kube: Kube; calls: string[] } {
  const calls: string[] = [];
  const proxy = new Proxy(kube, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]): unknown => {
        // the queue lists every node; the lock's own list of nodes in a cycle selects by label
        const selector = (args[0] as { labelSelector?: string } | undefined)?.labelSelector;
        calls.push(key === 'listNodes' && selector !== undefined ? `listNodes ${selector}` : String(key));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { kube: proxy, calls };
}

function lock(nodeId: string, o: { clock?: Clock; kube?: Kube; graceMs?: number } = {}): DaemonSetLock {
  const clock = o.clock ?? new SystemClock();
  const kube = o.kube ?? new ClientNodeKube(server.kubeConfig());
  return new DaemonSetLock({
    kube,
    nodeId,
    namespace: 'kube-system',
    name: 'kured',
    annotation: 'weave.works/kured-node-lock',
    ttlMs: 0,
    concurrency: 1,
    clock,
    log,
    random: () => 0,
    ...(o.graceMs === undefined ? {} : { handoffGraceMs: o.graceMs }),
    queue: new NodeWaitQueue({ kube, nodeId, clock, groupLabel: undefined }),
  });
}

describe('the fair lock queue', () => {
  it('hands a freed slot to the waiter whose need is oldest, not to the first to ask', async () => {
    expect((await lock('n1').acquire(META)).acquired).toBe(true);
    waiting('n2', '2026-01-05T09:00:00Z');
    waiting('n3', '2026-01-05T09:30:00Z');
    await lock('n1').release();
    const n3 = lock('n3');
    const first = await n3.acquire(META);
    expect(first).toMatchObject({ acquired: false, holders: [] });
    expect(!first.acquired && first.reason).toMatch(
      /^a lock slot is free, but n2 has needed a reboot longer and goes first/,
    );
    expect((await lock('n2').acquire(META)).acquired).toBe(true);
    const after = await n3.acquire(META);
    expect(!after.acquired && after.reason).toMatch(/^all 1 lock slot\(s\) held by n2/);
  });

  it('lets an overdue node go before an older one that is not', async () => {
    waiting('n2', '2026-01-05T09:00:00Z');
    waiting('n3', '2026-01-05T09:30:00Z', { due: '2026-01-05T09:40:00Z' });
    const n2 = await lock('n2', { clock: new FakeClock('2026-01-05T10:00:00Z') }).acquire(META);
    expect(!n2.acquired && n2.reason).toMatch(/but n3 has needed a reboot longer/);
    expect((await lock('n3', { clock: new FakeClock('2026-01-05T10:00:00Z') }).acquire(META)).acquired).toBe(
      true,
    );
  });

  it('passes over an older waiter that does not take the slot within the grace (its agent is gone)', async () => {
    waiting('n2', '2026-01-05T09:00:00Z'); // n2's agent crashed: its status still says waiting
    waiting('n3', '2026-01-05T09:30:00Z');
    const clock = new FakeClock('2026-01-05T10:00:00Z');
    const n3 = lock('n3', { clock });
    expect((await n3.acquire(META)).acquired).toBe(false);
    await clock.advance(HANDOFF_GRACE_MS - 1000);
    expect((await n3.acquire(META)).acquired).toBe(false);
    await clock.advance(1000);
    expect((await n3.acquire(META)).acquired).toBe(true);
  });

  it('queues a node on its first try for a slot behind those already waiting', async () => {
    waiting('n2', '2026-01-05T09:00:00Z');
    waiting('n3', '2026-01-05T09:30:00Z');
    expect((await lock('n2').acquire(META)).acquired).toBe(true);
    await lock('n2').release();
    server.update('nodes', { metadata: { name: 'n2' } });
    expect((await lock('n4').acquire(META)).acquired).toBe(false); // n3 waits; n4 only now asks
    expect((await lock('n3').acquire(META)).acquired).toBe(true);
  });

  it('wakes a waiter for a freed slot with one node list, and sends it back to waiting without a request when the older one takes it', async () => {
    expect((await lock('n1').acquire(META)).acquired).toBe(true);
    waiting('n2', '2026-01-05T09:00:00Z');
    waiting('n3', '2026-01-05T09:30:00Z');
    const agent = counted(new ClientNodeKube(server.kubeConfig()));
    const n3 = lock('n3', { kube: agent.kube, graceMs: 60_000 });
    const stop = new AbortController();
    let woke = false;
    await n3.acquire(META); // full: n3 waits
    const waited = n3.waitForChange(120_000, stop.signal).then(
      () => (woke = true),
      () => undefined,
    );
    await waitFor(() => agent.calls.includes('watchDaemonSet') || agent.calls.length > 1, 'n3 watching');
    const before = agent.calls.length;
    await lock('n1').release();
    await waitFor(() => agent.calls.slice(before).includes('listNodes'), 'n3 asks the queue');
    expect((await lock('n2').acquire(META)).acquired).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    expect(woke).toBe(false);
    expect(agent.calls.slice(before).filter((c) => c !== 'watchDaemonSet')).toEqual(['listNodes']);
    stop.abort();
    await waited;
  });

  it('lets the oldest waiter, woken for a freed slot, list the nodes once and take the slot', async () => {
    expect((await lock('n1').acquire(META)).acquired).toBe(true);
    waiting('n2', '2026-01-05T09:00:00Z');
    waiting('n3', '2026-01-05T09:30:00Z');
    const agent = counted(new ClientNodeKube(server.kubeConfig()));
    const n2 = lock('n2', { kube: agent.kube });
    await n2.acquire(META); // full: n2 waits
    const woke = n2.waitForChange(120_000);
    await waitFor(() => agent.calls.length > 1, 'n2 watching');
    const before = agent.calls.length;
    await lock('n1').release();
    await woke;
    expect((await n2.acquire(META)).acquired).toBe(true);
    expect(agent.calls.slice(before).filter((c) => c === 'listNodes')).toHaveLength(1);
  });

  it.each([
    ['fair', false],
    ['none', true],
  ] as const)(
    'with --lock-queue %s, a node asking for a free slot while an older one waits takes it: %s',
    async (lockQueue, taken) => {
      waiting('n2', '2026-01-05T09:00:00Z');
      const agent = counted(new ClientNodeKube(server.kubeConfig()));
      const config = { ...defaultConfig(), nodeId: 'n3', lockQueue };
      const deps = createAgentDeps(config, { kube: agent.kube, clock: new SystemClock(), logger: log });
      expect((await deps.lock.acquire(META)).acquired).toBe(taken);
      // kured's order asks nobody who waits: no list of every node
      expect(agent.calls.includes('listNodes')).toBe(!taken);
    },
  );
});
