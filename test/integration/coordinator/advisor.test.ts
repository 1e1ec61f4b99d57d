// Issue 41 (DESIGN §12): the coordinator advises, the agents decide. A thief with the coordinator's
// token (or anyone who can write its Lease where the admission policy is off) replaces the Lease with
// one that says "all healthy", lasts for ever, and names whom it likes, and gives turns: no node goes
// past a gate that protects capacity, through the real client against the fake API server, with the
// invariants checked on every accepted write. And the coordinator itself: a new leader, or one whose
// watch went silent, advises nothing.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { Agent, type Outcome } from '../../../src/agent/agent.js';
import { createAgentDeps } from '../../../src/agent/create-agent.js';
import { SystemClock } from '../../../src/clock/clock.js';
import type { Config } from '../../../src/config/config.js';
import { ClientNodeKube } from '../../../src/kube/client.js';
import type { V1Lease, V1Node, V1Pod } from '../../../src/kube/kube.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { Coordinator } from '../../../src/coordinator/coordinator.js';
import { CONTROL_PLANE_LABEL } from '../../../src/node/role.js';
import { STATUS_ANNOTATION, parseStatus } from '../../../src/node/status.js';
import {
  ADVICE_ANNOTATION,
  LEGACY_HEALTH_ANNOTATION,
  coordinatorLeaseName,
} from '../../../src/queue/coordinator-lease.js';
import { TURN_ANNOTATION, formatTurn } from '../../../src/queue/turn.js';
import type { FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { BOOKMARK_MS } from '../../../src/sim/fake-api/watch.js';
import { testConfig } from '../../fakes/config.js';
import { FakeClock } from '../../fakes/fake-clock.js';
import { RecordingMetrics } from '../../fakes/fake-cluster.js';
import { kuredDaemonSet, readyNode, webPod } from '../../fakes/kube-objects.js';
import { realDelay } from '../../fakes/wait-for.js';
import { storedNode } from '../../fakes/cluster-reads.js';

const NS = 'kube-system';
const DS = 'kured';
const LEASE = coordinatorLeaseName(DS);
const ZONE = 'topology.kubernetes.io/zone';

let server: FakeApiServer;
let nodes: string[];
const reboots = new Map<string, number>();
let violations: string[];
let unwatch: () => void;
const kubes: ClientNodeKube[] = [];

beforeEach(async () => {
  server = await startClusterApiServer();
  violations = [];
  unwatch = () => undefined;
  reboots.clear();
  server.create('daemonsets', kuredDaemonSet());
});

afterEach(async () => {
  unwatch();
  for (const k of kubes.splice(0)) k.close();
  await server.close();
});

/** Nodes `names`, Ready, each with a pod; labels per node. */
function fleet(names: string[], labels: Record<string, Record<string, string>> = {}): void {
  nodes = names;
  for (const name of names) {
    const n = readyNode(name);
    n.metadata = { ...n.metadata, labels: { ...n.metadata?.labels, ...labels[name] } };
    server.create<V1Node>('nodes', n);
    server.create<V1Pod>('pods', webPod(`web-${name}`, name));
  }
}

function node(name: string): V1Node {
  return storedNode(server, name);
}

function notReady(name: string): void {
  const n = node(name);
  n.status = { ...n.status, conditions: [{ type: 'Ready', status: 'False' }] };
  server.update('nodes', n);
}

const ready = (n: V1Node): boolean =>
  (n.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

/** Out of service: cordoned, not Ready, or its host rebooted. */
const down = (name: string): boolean =>
  node(name).spec?.unschedulable === true || !ready(node(name)) || (reboots.get(name) ?? 0) > 0;

/** On every accepted write: at most `max` of `among` (default every node) out of service. */
function atMostDown(max: number, among?: () => string[]): void {
  unwatch = server.onWrite((e) => {
    if (e.resource !== 'nodes') return;
    const out = (among?.() ?? nodes).filter(down);
    if (out.length > max) violations.push(`${out.length} down (max ${max}): ${out.join(', ')}`);
  });
}

/**
 * What a thief with the coordinator's token writes: its own Lease (a holder of its choosing, an
 * endless duration, an older coordinator's "all healthy" and advice saying nothing holds the queue),
 * and turns on `turns`.
 */
function steal(turns: string[], holder = 'attacker'): void {
  const lease: V1Lease = {
    metadata: {
      name: LEASE,
      namespace: NS,
      annotations: {
        [LEGACY_HEALTH_ANNOTATION]: JSON.stringify({
          total: nodes.length,
          count: 0,
          unhealthy: [],
          groups: {},
          workersAhead: { count: 0, names: [] },
          reported: nodes.length,
          quarantined: [],
          quarantinedCount: 0,
        }),
        [ADVICE_ANNOTATION]: JSON.stringify({ by: holder, seq: 1, nodes: nodes.length }),
      },
    },
    spec: { holderIdentity: holder, leaseDurationSeconds: 2147483647 },
  };
  if (server.get('leases', NS, LEASE) === undefined) server.create('leases', lease);
  else server.update('leases', lease);
  for (const name of turns) {
    const n = node(name);
    // eslint-disable-next-line no-restricted-syntax -- real time: the coordinator under test judges turns on the system clock
    const turn = formatTurn({ since: new Date().toISOString(), by: holder });
    n.metadata = { ...n.metadata, annotations: { ...n.metadata?.annotations, [TURN_ANNOTATION]: turn } };
    server.update('nodes', n);
  }
}

/** A fresh agent for `name` whose host needs a reboot. */
function agent(name: string, overrides: Partial<Config> = {}): Agent {
  const kube = new ClientNodeKube(server.kubeConfig());
  kubes.push(kube);
  const config = testConfig({
    nodeId: name,
    periodMs: 60_000,
    drainTimeoutMs: 5000,
    postRebootTimeoutMs: 60_000,
    blockOnPdb: false,
    ...overrides,
  });
  const deps = createAgentDeps(config, {
    kube,
    clock: new SystemClock(),
    logger: new MemoryLogger(),
    metrics: new RecordingMetrics(),
    sentinel: { rebootRequired: () => Promise.resolve({ required: (reboots.get(name) ?? 0) === 0 }) },
    rebooter: {
      reboot: () => {
        reboots.set(name, (reboots.get(name) ?? 0) + 1);
        return Promise.resolve();
      },
    },
  });
  return new Agent(config, deps);
}

function status(name: string): { phase?: string; reason: string } | undefined {
  return parseStatus(node(name).metadata?.annotations?.[STATUS_ANNOTATION]);
}

describe('a thief with the coordinator token cannot let a node past a gate', () => {
  it('at --concurrency 1, with one node NotReady: the node holding the forged turn waits, counting it (--count-unavailable)', async () => {
    fleet(['n1', 'n2', 'n3', 'n4']);
    notReady('n4');
    atMostDown(1);
    steal(['n1', 'n2', 'n3']);
    const outcomes: Outcome[] = [];
    for (const name of ['n1', 'n2', 'n3']) outcomes.push(await agent(name).tick());
    for (const outcome of outcomes)
      expect(outcome).toMatchObject({ kind: 'waiting-for-lock', gate: 'count-unavailable' });
    expect(outcomes[0]?.reason).toMatch(/n4 unavailable/);
    expect([...reboots.values()]).toEqual([]);
    expect(node('n1').spec?.unschedulable).toBeFalsy();
    expect(violations).toEqual([]);
  });

  it('at --concurrency 2 with one slot per zone: the zone with a NotReady node waits, the other goes', async () => {
    fleet(['a1', 'a2', 'b1', 'b2'], {
      a1: { [ZONE]: 'a' },
      a2: { [ZONE]: 'a' },
      b1: { [ZONE]: 'b' },
      b2: { [ZONE]: 'b' },
    });
    notReady('a2');
    // at most one node of each zone out, and two in all
    atMostDown(1, () => ['a1', 'a2']);
    steal(['a1', 'b1']);
    const flags = { concurrency: { count: 2 }, groupLabel: ZONE, groupConcurrency: { count: 1 } };
    const a1 = await agent('a1', flags).tick();
    expect(a1).toMatchObject({ kind: 'waiting-for-lock', gate: 'group-concurrency' });
    expect(a1.reason).toMatch(/a2/);
    const b1 = await agent('b1', flags).tick();
    expect(b1.kind).toBe('rebooting');
    expect(reboots.get('a1')).toBeUndefined();
    expect(violations).toEqual([]);
  });

  it('in a control plane of 3 with one member NotReady: the control-plane node holding the forged turn does not reboot', async () => {
    const cp = { [CONTROL_PLANE_LABEL]: '' };
    fleet(['cp1', 'cp2', 'cp3', 'w1'], { cp1: cp, cp2: cp, cp3: cp });
    notReady('cp2');
    atMostDown(1, () => ['cp1', 'cp2', 'cp3']);
    steal(['cp1']);
    const outcome = await agent('cp1', { concurrency: { count: 3 } }).tick();
    expect(['waiting-for-lock', 'blocked']).toContain(outcome.kind);
    expect(outcome.reason).toMatch(/cp2/);
    expect(reboots.get('cp1')).toBeUndefined();
    expect(violations).toEqual([]);
  });

  it('under --max-unhealthy-nodes 0, the advice saying nothing holds the queue does not let the turn holder go', async () => {
    fleet(['n1', 'n2', 'n3']);
    notReady('n3');
    steal(['n1']);
    const outcome = await agent('n1', { concurrency: { count: 3 }, maxUnhealthyNodes: { count: 0 } }).tick();
    expect(outcome).toMatchObject({ kind: 'waiting-for-lock', gate: 'max-unhealthy-nodes' });
    expect(outcome.reason).toBe('1 other node unhealthy (max 0): n3 not ready');
    expect(reboots.get('n1')).toBeUndefined();
  });

  it('copies no more than 128 characters of a holder of 100 KB into a waiter status, which stays within 1 KiB of reason', async () => {
    fleet(['n1', 'n2']);
    const holder = 'h'.repeat(100_000);
    steal([], holder);
    const outcome = await agent('n1').tick();
    expect(outcome.kind).toBe('waiting-for-lock');
    const written = status('n1');
    expect(written?.reason).toContain(`${'h'.repeat(127)}…`);
    expect(written?.reason).not.toContain('h'.repeat(129));
    expect(written?.reason.length).toBeLessThanOrEqual(1024);
  });

  it('a turn annotation of 200 KB gives a turn of no more than 1 KiB of reason to the status', async () => {
    fleet(['n1', 'n2']);
    steal([]);
    const n = node('n1');
    const lapsed = JSON.stringify({
      lapsed: { since: 's'.repeat(100_000), by: 'b'.repeat(100_000), at: 'x' },
    });
    n.metadata = { ...n.metadata, annotations: { ...n.metadata?.annotations, [TURN_ANNOTATION]: lapsed } };
    server.update('nodes', n);
    const outcome = await agent('n1').tick();
    expect(outcome.kind).toBe('waiting-for-lock');
    expect(status('n1')?.reason.length).toBeLessThanOrEqual(1024);
  });
});

describe('the coordinator advises only from a view it can trust', () => {
  let clock: FakeClock;
  const stops: AbortController[] = [];

  beforeEach(() => {
    clock = new FakeClock('2026-01-05T10:00:00Z');
  });

  afterEach(() => {
    for (const stop of stops.splice(0)) stop.abort();
  });

  function start(identity: string): Coordinator {
    // its read retries back off on the fake clock too
    const kube = new ClientNodeKube(server.kubeConfig(), { clock, random: () => 0.5 });
    kubes.push(kube);
    const c = new Coordinator({
      kube,
      namespace: NS,
      dsName: DS,
      leaseName: LEASE,
      annotation: 'weave.works/kured-node-lock',
      ttlMs: 0,
      concurrency: { count: 1 },
      identity,
      clock,
      log: new MemoryLogger(),
      random: () => 0.5,
    });
    const stop = new AbortController();
    stops.push(stop);
    void c.run(stop.signal);
    return c;
  }

  const annotations = (): Record<string, string> =>
    server.get<V1Lease>('leases', NS, LEASE)?.metadata?.annotations ?? {};

  /** Moves the fake clock in steps, with real time between for the HTTP each step sets off. */
  async function advance(ms: number, step = 1_000): Promise<void> {
    for (let t = 0; t < ms; t += step) {
      await clock.advance(step);
      await realDelay(3);
    }
  }

  /** Moves the fake clock until `check` holds; throws past `limitMs` of fake time. */
  async function advanceUntil(check: () => boolean, what: string, limitMs = 600_000): Promise<void> {
    for (let moved = 0; !check(); moved += 1_000) {
      if (moved > limitMs) throw new Error(`not within ${limitMs} ms of fake time: ${what}`);
      await advance(1_000);
    }
  }

  it("a new leader carries no old leader's advice or health, and advises nothing before it has seen the fleet", async () => {
    fleet(['n1', 'n2']);
    server.create<V1Lease>('leases', {
      metadata: {
        name: LEASE,
        namespace: NS,
        annotations: {
          [ADVICE_ANNOTATION]: JSON.stringify({
            by: 'old-0',
            seq: 40,
            nodes: 2,
            held: { reason: 'old news' },
          }),
          [LEGACY_HEALTH_ANNOTATION]: '{"total":2,"count":0,"unhealthy":[]}',
        },
      },
      spec: { holderIdentity: '', leaseDurationSeconds: 1 },
    });
    // it cannot list the nodes
    server.injectFailure({ method: 'GET', pathIncludes: '/api/v1/nodes?limit' }, 500, 1_000);
    const c = start('new-0');
    await advanceUntil(() => c.leading, 'the new replica leads');
    await advance(25_000);
    expect(server.get<V1Lease>('leases', NS, LEASE)?.spec?.holderIdentity).toBe('new-0');
    expect(annotations()).toEqual({});
    // it sees the fleet: it advises, under its own name
    server.clearFailures();
    await advanceUntil(() => annotations()[ADVICE_ANNOTATION] !== undefined, 'it advises');
    expect(JSON.parse(annotations()[ADVICE_ANNOTATION] ?? '{}')).toMatchObject({ by: 'new-0', nodes: 2 });
  });

  it('withdraws its advice while its watch of the nodes is silent (no event, no bookmark)', async () => {
    fleet(['n1', 'n2']);
    // every watch of the nodes is answered and then says nothing more, as a hung connection
    server.injectFailure({ method: 'GET', pathIncludes: '/api/v1/nodes?allowWatchBookmarks' }, 200, 1_000, {
      mode: 'silent',
    });
    const c = start('c-0');
    await advanceUntil(() => c.leading, 'it leads');
    await advanceUntil(
      () => annotations()[ADVICE_ANNOTATION] !== undefined,
      'it advises from its first list',
    );
    const advised = clock.now().getTime();
    await advanceUntil(() => annotations()[ADVICE_ANNOTATION] === undefined, 'its advice is withdrawn');
    // within the silence bound and a renewal
    expect(clock.now().getTime() - advised).toBeLessThanOrEqual(3 * BOOKMARK_MS + 20_000);
    // and not again while its watches stay silent, however often it watches again
    for (let minute = 0; minute < 10; minute++) {
      await advance(60_000, 5_000);
      expect(annotations()[ADVICE_ANNOTATION]).toBeUndefined();
    }
    // the API server speaks again: it advises again
    server.clearFailures();
    server.endWatches();
    await advanceUntil(() => annotations()[ADVICE_ANNOTATION] !== undefined, 'it advises again');
  });
});
