// The fleet gates that the node about to take a slot judges itself from the Nodes (DESIGN §12): the
// cluster-health gate (--max-unhealthy-nodes) and the quarantine cap (--max-quarantined), through the
// lock's own acquisition over a hand-written Kube; and the coordinator's census of the workers ahead.
import { describe, expect, it } from '@jest/globals';
import { DaemonSetLock, type DaemonSetLockOptions } from '../../src/lock/daemonset-lock.js';
import type { Budget } from '../../src/config/budget.js';
import { FleetCensus } from '../../src/capacity/fleet-census.js';
import { fleetHealth, judgeNode, unhealthy } from '../../src/capacity/fleet-judge.js';
import type { AcquireResult } from '../../src/lock/lock.js';
import { silentLogger } from '../../src/log/logger.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { HEALTH_NAMES_SHOWN, WORKERS_NAMED } from '../../src/capacity/fleet-health.js';
import type { V1Node } from '../../src/kube/kube.js';
import { FakeKube } from '../fakes/fake-kube.js';
import { KubeApiError } from '../../src/kube/http.js';

type Health =
  'ready' | 'not-ready' | 'unknown' | 'no-condition' | 'cordoned' | 'unreachable-taint' | 'in-cycle';

function node(name: string, health: Health = 'ready'): V1Node {
  const status = { 'not-ready': 'False', unknown: 'Unknown' }[health as string] ?? 'True';
  return {
    metadata: { name, labels: health === 'in-cycle' ? { 'kured-ts.dev/rebooting': 'true' } : {} },
    spec: {
      unschedulable: health === 'cordoned' || health === 'in-cycle',
      taints:
        health === 'unreachable-taint'
          ? [{ key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' }]
          : [],
    },
    status: { conditions: health === 'no-condition' ? [] : [{ type: 'Ready', status }] },
  };
}

function fleet(...healths: Health[]): V1Node[] {
  return [node('me'), ...healths.map((h, i) => node(`n${i + 1}`, h))];
}

/** kured's multi form with a slot (of this moment, no TTL) for each of `nodes`, recording `group` when given. */
function forgedLock(nodes: string[], group?: string): string {
  return JSON.stringify({
    maxOwners: 5,
    locks: nodes.map((nodeID) => ({
      nodeID,
      metadata: { unschedulable: false, ...(group === undefined ? {} : { group }) },
      created: '2026-01-05T10:00:00Z',
      TTL: 0,
    })),
  });
}

/** The census of node `me` over `kube` on `clock`. */
function censusOf(kube: FakeKube, clock: FakeClock): FleetCensus {
  return new FleetCensus({ kube, clock, nodeId: 'me', groupLabel: undefined });
}

/** The lock of node `me` over `kube`: the census of its own Kube, the gates as given. */
function lockOver(kube: FakeKube, options: Partial<DaemonSetLockOptions> = {}): DaemonSetLock {
  const clock = new FakeClock();
  return new DaemonSetLock({
    kube,
    nodeId: 'me',
    namespace: 'kube-system',
    name: 'kured',
    annotation: 'lock',
    ttlMs: 0,
    concurrency: { count: 5 },
    clock,
    log: silentLogger,
    census: new FleetCensus({ kube, clock, nodeId: 'me', groupLabel: undefined }),
    ...options,
  });
}

/** The lock (empty, room for 5) of node `me` asked whether it would take a slot, over `nodes`. */
async function wouldTake(
  nodes: V1Node[],
  gates: { maxUnhealthy?: Budget; maxQuarantined?: Budget; countUnavailable?: boolean },
): Promise<{ kube: FakeKube; result: AcquireResult }> {
  const kube = new FakeKube();
  kube.nodes = nodes;
  return { kube, result: await lockOver(kube, gates).wouldAcquire() };
}

function refusal(result: AcquireResult): { reason: string; gate?: string } | undefined {
  return result.acquired
    ? undefined
    : { reason: result.reason, ...(result.gate === undefined ? {} : { gate: result.gate }) };
}

describe('the health gate (--max-unhealthy-nodes), judged by the node about to take a slot', () => {
  it.each([
    ['lets a node go when every other node is healthy', fleet('ready', 'ready'), { count: 0 }, undefined],
    [
      'holds a node back when one more node than allowed is not ready',
      fleet('not-ready', 'ready', 'not-ready'),
      { count: 1 },
      '2 other nodes unhealthy (max 1): n1 not ready, n3 not ready',
    ],
    ['lets it go at exactly the limit', fleet('not-ready', 'cordoned', 'ready'), { count: 2 }, undefined],
    [
      'counts nodes that are not Ready: Ready False, Unknown (unreachable), or no Ready condition',
      fleet('not-ready', 'unknown', 'no-condition'),
      { count: 2 },
      '3 other nodes unhealthy (max 2): n1 not ready, n2 not ready, n3 not ready',
    ],
    [
      'counts nodes cordoned by someone else',
      fleet('cordoned', 'cordoned'),
      { count: 1 },
      '2 other nodes unhealthy (max 1): n1 cordoned, n2 cordoned',
    ],
    [
      'takes a percentage of all nodes, rounded down (10% of 11 = 1)',
      fleet('not-ready', 'not-ready', 'ready', 'ready', 'ready', 'ready', 'ready', 'ready', 'ready', 'ready'),
      { percent: 10 },
      '2 other nodes unhealthy (max 1): n1 not ready, n2 not ready',
    ],
    ['never counts its own node', [node('me', 'not-ready'), node('n1')], { count: 0 }, undefined],
  ])('%s', async (_name, nodes, limit, reason) => {
    const { result } = await wouldTake(nodes, { maxUnhealthy: limit });
    expect(refusal(result)).toEqual(
      reason === undefined ? undefined : { reason, gate: 'max-unhealthy-nodes' },
    );
  });

  it.each([
    [
      'does not count nodes in their reboot cycle that hold slots (--concurrency bounds them)',
      ['n1', 'n2'],
      undefined,
    ],
    [
      'counts nodes that label themselves in a cycle without a slot by their readiness (their own token can write the label)',
      [],
      '2 other nodes unhealthy (max 0): n1 cordoned, n2 cordoned',
    ],
  ])('%s', async (_name, slots, reason) => {
    const kube = new FakeKube();
    kube.nodes = fleet('in-cycle', 'in-cycle');
    kube.daemonSet = {
      metadata: { name: 'kured', namespace: 'kube-system', annotations: { lock: forgedLock(slots) } },
    };
    kube.getNode = ((name: string) => Promise.resolve({ metadata: { name } })) as FakeKube['getNode'];
    const result = await lockOver(kube, { maxUnhealthy: { count: 0 } }).wouldAcquire();
    expect(refusal(result)).toEqual(
      reason === undefined ? undefined : { reason, gate: 'max-unhealthy-nodes' },
    );
  });

  it('names ten nodes and says how many more', async () => {
    const { result } = await wouldTake(fleet(...Array.from({ length: 13 }, (): Health => 'not-ready')), {
      maxUnhealthy: { count: 0 },
    });
    expect(refusal(result)?.reason).toMatch(
      /^13 other nodes unhealthy \(max 0\): (n\d+ not ready, ){9}n\d+ not ready, and 3 more$/,
    );
  });

  it('reads every node as printed rows from the watch cache, and the nodes in a cycle afresh', async () => {
    const { kube } = await wouldTake(fleet('ready'), { maxUnhealthy: { count: 0 } });
    expect(kube.listNodeCalls).toEqual([
      { labelSelector: 'kured-ts.dev/rebooting=true' },
      { resourceVersion: '0' },
    ]);
  });

  it('asks nothing of the fleet while the lock has no room for this node anyway', async () => {
    const kube = new FakeKube();
    kube.nodes = fleet('not-ready');
    const other = {
      nodeID: 'n9',
      metadata: { unschedulable: false },
      created: '2026-01-05T10:00:00Z',
      TTL: 0,
    };
    kube.daemonSet = {
      metadata: { name: 'kured', namespace: 'kube-system', annotations: { lock: JSON.stringify(other) } },
    };
    kube.getNode = () => Promise.resolve({ metadata: { name: 'n9' } });
    const result = await lockOver(kube, {
      concurrency: { count: 1 },
      maxUnhealthy: { count: 0 },
    }).wouldAcquire();
    expect(result.acquired).toBe(false);
    expect(kube.listNodeCalls).toEqual([]);
  });

  it('holds the node back when the read of the fleet fails: unknown is not healthy', async () => {
    const kube = new FakeKube();
    kube.nodes = fleet('ready');
    kube.listNodeRows = () => Promise.reject(new Error('etcdserver: request timed out'));
    const lock = lockOver(kube, { maxUnhealthy: { count: 3 } });
    expect(refusal(await lock.wouldAcquire())).toEqual({
      reason: "cannot judge the fleet's capacity, so no slot is taken: etcdserver: request timed out",
      gate: 'fleet-census',
    });
  });

  it('lock entries naming unhealthy nodes do not hide them from --max-unhealthy-nodes (any agent may write an entry)', async () => {
    const kube = new FakeKube();
    kube.nodes = fleet('not-ready', 'not-ready', 'ready');
    // a stolen agent token writes slots for the two NotReady nodes: they take slots, and stay unhealthy
    kube.daemonSet = {
      metadata: {
        name: 'kured',
        namespace: 'kube-system',
        annotations: { lock: forgedLock(['n1', 'n2']) },
      },
    };
    kube.getNode = ((name: string) => Promise.resolve({ metadata: { name } })) as FakeKube['getNode'];
    const result = await lockOver(kube, { maxUnhealthy: { count: 1 } }).wouldAcquire();
    expect(refusal(result)).toEqual({
      reason: '2 other nodes unhealthy (max 1): n1 not ready, n2 not ready',
      gate: 'max-unhealthy-nodes',
    });
  });

  it('an acquisition whose write was lost reads the fleet again before its next attempt', async () => {
    const kube = new FakeKube();
    kube.nodes = fleet('ready', 'ready');
    let writes = 0;
    kube.mergePatchDaemonSet = () => {
      writes++;
      // another node took the lock meanwhile (409), and n1 went down
      kube.nodes = fleet('not-ready', 'ready');
      return Promise.reject(new KubeApiError(409, '{"kind":"Status","code":409}', 'PATCH daemonset'));
    };
    const clock = new FakeClock();
    const lock = lockOver(kube, { maxUnhealthy: { count: 0 }, clock, census: censusOf(kube, clock) });
    const run = lock.acquire({ unschedulable: false });
    await clock.advanceUntilIdle(); // the back-off before the next attempt
    const result = await run;
    expect(writes).toBe(1);
    expect(refusal(result)).toEqual({
      reason: '1 other node unhealthy (max 0): n1 not ready',
      gate: 'max-unhealthy-nodes',
    });
  });

  it('an acquisition reads the fleet afresh after a node went down since the pre-flight', async () => {
    const kube = new FakeKube();
    kube.nodes = fleet('ready', 'ready');
    const clock = new FakeClock();
    const lock = lockOver(kube, { maxUnhealthy: { count: 0 }, clock, census: censusOf(kube, clock) });
    expect((await lock.wouldAcquire()).acquired).toBe(true); // the pre-flight: all healthy
    kube.nodes = fleet('not-ready', 'ready'); // n1 goes down within the census's 10 s reuse
    await clock.advance(2_000); // past what an acquisition may reuse of its pass's pre-flight
    const result = await lock.acquire({ unschedulable: false });
    expect(refusal(result)).toEqual({
      reason: '1 other node unhealthy (max 0): n1 not ready',
      gate: 'max-unhealthy-nodes',
    });
  });

  it.each<[string, (kube: FakeKube) => void, RegExp]>([
    [
      'holds the node back when the list of the Nodes does not hold its own node (a partial answer)',
      (kube) => {
        kube.nodes = [node('n1'), node('n2')];
      },
      /^cannot judge the fleet's capacity, so no slot is taken: the list of the Nodes does not hold this node \(me\)$/,
    ],
    [
      'holds the node back when the list of the Nodes is empty',
      (kube) => {
        kube.listNodeRows = (options) =>
          options?.labelSelector === undefined ? Promise.resolve([]) : Promise.resolve([]);
      },
      /does not hold this node \(me\)$/,
    ],
    [
      'holds the node back when the list names a Node twice',
      (kube) => {
        kube.nodes = [node('me'), node('n1'), node('n1', 'not-ready')];
      },
      /the list of the Nodes names a Node twice$/,
    ],
    [
      'holds the node back when the list holds fewer Nodes than the lock DaemonSet runs on',
      (kube) => {
        kube.daemonSet = {
          metadata: { name: 'kured', namespace: 'kube-system' },
          status: {
            desiredNumberScheduled: 5,
            currentNumberScheduled: 5,
            numberMisscheduled: 0,
            numberReady: 5,
          },
        };
      },
      /the list of the Nodes holds 3 Nodes, fewer than the 5 the DaemonSet runs on$/,
    ],
  ])('%s', async (_name, arrange, reason) => {
    const kube = new FakeKube();
    kube.nodes = fleet('ready', 'ready');
    arrange(kube);
    const result = await lockOver(kube, { maxUnhealthy: { count: 3 } }).wouldAcquire();
    expect(refusal(result)?.gate).toBe('fleet-census');
    expect(refusal(result)?.reason).toMatch(reason);
  });

  it.each([
    ['a Ready node', node('a'), undefined],
    ['a NotReady node', node('a', 'not-ready'), 'not ready'],
    ['a cordoned Ready node', node('a', 'cordoned'), 'cordoned'],
  ])('the coordinator judges %s from the whole object', (_name, n, why) => {
    expect(unhealthy(n)).toBe(why);
  });
});

describe('the quarantine cap (--max-quarantined), judged by the node about to take a slot', () => {
  const quarantined = (name: string): V1Node => ({
    ...node(name, 'cordoned'),
    metadata: { name, labels: { 'kured-ts.dev/quarantined': 'drain-failed' } },
  });
  it.each([
    ['lets a node go within the cap', [node('me'), quarantined('q1')], { count: 1 }, undefined],
    [
      'halts every new cycle past the cap',
      [node('me'), quarantined('q1'), quarantined('q2')],
      { count: 1 },
      /^halted: 2 other nodes quarantined \(--max-quarantined 1\): q1, q2; no new cycle starts anywhere/,
    ],
    ['does not count the node itself', [quarantined('me'), quarantined('q1')], { count: 1 }, undefined],
  ])('%s', async (_name, nodes, limit, reason) => {
    const { result } = await wouldTake(nodes, { maxQuarantined: limit });
    if (reason === undefined) expect(result.acquired).toBe(true);
    else expect(refusal(result)).toEqual({ reason: expect.stringMatching(reason), gate: 'max-quarantined' });
  });
});

describe('the fleet census of the workers ahead of the control plane', () => {
  it('counts every worker that waits, and names at most WORKERS_NAMED (each agent reads them)', () => {
    const workers = Array.from({ length: 30 }, (_, i) => ({
      ...judgeNode({ metadata: { name: `w${String(i).padStart(2, '0')}` } }),
      waiting: true,
    }));
    const health = fleetHealth(workers, HEALTH_NAMES_SHOWN);
    expect(health.workersAhead?.count).toBe(30);
    expect(health.workersAhead?.names).toEqual(workers.slice(0, WORKERS_NAMED).map((w) => w.name));
  });
});

describe("a group's slots, counted by the Nodes' labels (--group-concurrency)", () => {
  const zoned = (name: string, zone: string, health: Health = 'ready'): V1Node => {
    const n = node(name, health);
    return { ...n, metadata: { ...n.metadata, name, labels: { ...n.metadata?.labels, zone } } };
  };

  it.each<[string, string | undefined, boolean]>([
    ['a slot of a node of this group that records another group still counts against it', 'zzz', false],
    ['a slot of a node of this group that records this group counts against it', 'a', false],
    [
      "a slot of a node of another group (by its label) that records no group counts (kured's)",
      undefined,
      false,
    ],
  ])('%s', async (_name, recorded, acquired) => {
    const kube = new FakeKube();
    kube.nodes = [zoned('me', 'a'), zoned('c', 'a'), zoned('d', 'b')];
    kube.daemonSet = {
      metadata: {
        name: 'kured',
        namespace: 'kube-system',
        annotations: { lock: forgedLock(['c'], recorded) },
      },
    };
    kube.getNode = ((name: string) => Promise.resolve({ metadata: { name } })) as FakeKube['getNode'];
    const clock = new FakeClock();
    const lock = lockOver(kube, {
      groups: { label: 'zone', concurrency: { count: 1 } },
      census: new FleetCensus({ kube, clock, nodeId: 'me', groupLabel: 'zone' }),
    });
    const result = await lock.wouldAcquire(undefined, { group: 'a' });
    expect(result.acquired).toBe(acquired);
    if (!result.acquired) expect(result.gate).toBe('group-concurrency');
  });

  it('a slot of a node of another group by its label, recording that group, leaves this group room', async () => {
    const kube = new FakeKube();
    kube.nodes = [zoned('me', 'a'), zoned('d', 'b')];
    kube.daemonSet = {
      metadata: { name: 'kured', namespace: 'kube-system', annotations: { lock: forgedLock(['d'], 'b') } },
    };
    kube.getNode = ((name: string) => Promise.resolve({ metadata: { name } })) as FakeKube['getNode'];
    const lock = lockOver(kube, {
      groups: { label: 'zone', concurrency: { count: 1 } },
      census: new FleetCensus({ kube, clock: new FakeClock(), nodeId: 'me', groupLabel: 'zone' }),
    });
    expect((await lock.wouldAcquire(undefined, { group: 'a' })).acquired).toBe(true);
  });
});
