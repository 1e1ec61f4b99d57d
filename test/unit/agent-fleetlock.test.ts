// The agent with --fleetlock-url over the one-node fake cluster: the FleetLock slot is taken before
// the in-cluster slot and given back after it, the node waits (and says why) while the server refuses
// or does not answer, and a release the server did not confirm is retried on the next pass.
import { describe, expect, it } from '@jest/globals';
import { Agent, type AgentConfig, type Outcome } from '../../src/agent/agent.js';
import { FLEETLOCK_RETRY_MS } from '../../src/fleetlock/fleetlock.js';
import { HttpFleetLock, type HttpExchange } from '../../src/fleetlock/http-fleetlock.js';
import { CYCLE_ANNOTATION } from '../../src/node/cycle.js';
import { STATUS_ANNOTATION, parseStatus } from '../../src/node/status.js';
import { FakeFleetLock } from '../../src/sim/fake-fleetlock.js';
import { AGENT_DEFAULTS, FakeCluster, settle } from '../fakes/fake-cluster.js';

const GROUP = 'workers';

/** The FleetLock server in memory, which can be switched to answer 500 or refuse connections. */
class World {
  readonly server = new FakeFleetLock(1);
  mode: 'ok' | '500' | 'down' = 'ok';
  /** What the in-cluster lock and node looked like at each request the server answered. */
  readonly seen: { path: string; inClusterHolders: string[]; cordoned: boolean; inCycle: boolean }[] = [];

  constructor(readonly cluster: FakeCluster) {}

  exchange(): HttpExchange {
    const inner = this.server.exchange();
    return (url, request) => {
      if (this.mode === 'down') return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:1'));
      if (this.mode === '500')
        return Promise.resolve({ status: 500, text: '{"kind":"internal_error","value":"etcd down"}' });
      const { node, table } = this.cluster;
      this.seen.push({
        path: new URL(url).pathname,
        inClusterHolders: table.holders(),
        cordoned: node.unschedulable,
        inCycle: node.annotations[CYCLE_ANNOTATION] !== undefined,
      });
      return inner(url, request);
    };
  }

  /** A new agent on the node (a pod start) with the FleetLock client. */
  agent(overrides: Partial<AgentConfig> = {}): Agent {
    const deps = this.cluster.deps();
    const fleetLock = new HttpFleetLock({
      url: 'http://fleetlock.test',
      group: GROUP,
      id: 'n1',
      clock: deps.clock,
      random: () => 0.5,
      exchange: this.exchange(),
    });
    return new Agent({ ...AGENT_DEFAULTS, ...overrides }, { ...deps, fleetLock });
  }
}

/** A node of another cluster asks the server at `path` (pre-reboot: takes the group's one slot; steady-state: gives it back). */
function otherCluster(world: World, path: string): void {
  world.server.answer({
    method: 'POST',
    path,
    headers: { 'fleet-lock-protocol': 'true' },
    body: JSON.stringify({ client_params: { id: 'other-cluster-node', group: GROUP } }),
  });
}

function tick(world: World, agent = world.agent()): Promise<Outcome> {
  return settle(world.cluster.clock, agent.tick());
}

function statusOf(cluster: FakeCluster): ReturnType<typeof parseStatus> {
  return parseStatus(cluster.node.annotations[STATUS_ANNOTATION]);
}

describe('agent with a FleetLock server', () => {
  it('takes the FleetLock slot before the in-cluster slot, and gives it back after the release and the uncordon', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    const world = new World(cluster);
    expect((await tick(world)).kind).toBe('rebooting');
    expect(world.server.holding(GROUP)).toEqual(['n1']);
    // the fresh agent after the reboot: in its cycle, so no steady-state before it completes
    const done = await tick(world);
    expect(done).toMatchObject({ kind: 'completed', uncordoned: true });
    expect(world.server.holding(GROUP)).toEqual([]);
    expect(world.seen.map((s) => s.path)).toEqual(['/v1/pre-reboot', '/v1/steady-state']);
    // the grant came before any in-cluster slot or cordon; the release after both were gone
    expect(world.seen[0]).toMatchObject({ inClusterHolders: [], cordoned: false, inCycle: false });
    expect(world.seen[1]).toMatchObject({ inClusterHolders: [], cordoned: false, inCycle: false });
    expect(cluster.violations).toEqual([]);
  });

  it('waits without the in-cluster slot while another id holds the group’s slot, saying failed_lock, and goes once it is free', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    const world = new World(cluster);
    otherCluster(world, '/v1/pre-reboot');
    const agent = world.agent();
    const waiting = await tick(world, agent);
    expect(waiting).toMatchObject({ kind: 'waiting-for-lock', fleetLock: true, holders: [] });
    expect(waiting.reason).toMatch(/^fleetlock: failed_lock: /);
    expect(statusOf(cluster)).toMatchObject({ phase: 'waiting-for-lock', reason: waiting.reason });
    expect(cluster.table.holders()).toEqual([]);
    expect(cluster.node.unschedulable).toBe(false);
    expect(cluster.reboots).toEqual([]);
    // asked again soon (no in-cluster lock change will say the other cluster is done)
    expect(agent.nextDelay(waiting)).toBeLessThanOrEqual(FLEETLOCK_RETRY_MS * 1.5);
    otherCluster(world, '/v1/steady-state');
    expect((await tick(world, agent)).kind).toBe('rebooting');
    expect(world.server.holding(GROUP)).toEqual(['n1']);
  });

  it('asks the FleetLock server nothing while this cluster’s lock would give it no slot, and says the status’ question time when refused', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.table.takeFor('n2');
    const world = new World(cluster);
    const agent = world.agent();
    const waiting = await tick(world, agent);
    expect(waiting).toMatchObject({ kind: 'waiting-for-lock', holders: ['n2'] });
    expect(waiting).not.toHaveProperty('fleetLock');
    expect(world.seen.filter((s) => s.path === '/v1/pre-reboot')).toEqual([]);
    expect(world.server.holding(GROUP)).toEqual([]);
    expect(statusOf(cluster)?.fleetLockAsked).toBeUndefined();
    // the slot frees while another cluster holds the group's: asked, refused, and the status says when
    cluster.table.set('n2', undefined);
    otherCluster(world, '/v1/pre-reboot');
    const refused = await tick(world, agent);
    expect(refused).toMatchObject({ kind: 'waiting-for-lock', fleetLock: true, fleetLockFull: true });
    expect(statusOf(cluster)?.fleetLockAsked).toBe(cluster.clock.now().toISOString());
  });

  it('records no question in the status under --lock-queue none (no coordinator keeps turns: a write per refusal would buy nothing)', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    const world = new World(cluster);
    otherCluster(world, '/v1/pre-reboot');
    const refused = await tick(world, world.agent({ lockQueue: 'none' }));
    expect(refused).toMatchObject({ kind: 'waiting-for-lock', fleetLock: true });
    expect(refused).not.toHaveProperty('fleetLockFull');
    expect(statusOf(cluster)).toMatchObject({ phase: 'waiting-for-lock' });
    expect(statusOf(cluster)?.fleetLockAsked).toBeUndefined();
  });

  it.each([
    ['answers 500', '500' as const, /^fleetlock: internal_error: etcd down \(HTTP 500\) \(3 attempts\); /],
    [
      'does not answer',
      'down' as const,
      /^fleetlock: no answer from http:\/\/fleetlock\.test: .*ECONNREFUSED.*\(3 attempts\); /,
    ],
  ])(
    'holds the reboot while the server %s (fail safe), and the status says why',
    async (_name, mode, reason) => {
      const cluster = new FakeCluster();
      cluster.sentinel = true;
      const world = new World(cluster);
      world.mode = mode;
      const waiting = await tick(world);
      expect(waiting).toMatchObject({ kind: 'waiting-for-lock', fleetLock: true });
      expect(waiting.reason).toMatch(reason);
      expect(statusOf(cluster)?.reason).toMatch(reason);
      // no answer is not a full group: the coordinator is not told to keep this node's turn for it
      expect(waiting).not.toHaveProperty('fleetLockFull');
      expect(statusOf(cluster)?.fleetLockAsked).toBeUndefined();
      expect(cluster.table.holders()).toEqual([]);
      expect(cluster.node.unschedulable).toBe(false);
      expect(cluster.reboots).toEqual([]);
      world.mode = 'ok';
      expect((await tick(world)).kind).toBe('rebooting');
    },
  );

  it('sends steady-state on start when the node is in no cycle (Zincati’s rule), retrying until the server confirms', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = false;
    const world = new World(cluster);
    // a slot left from before this start (the agent died between the grant and the cycle)
    world.server.answer({
      method: 'POST',
      path: '/v1/pre-reboot',
      headers: { 'fleet-lock-protocol': 'true' },
      body: JSON.stringify({ client_params: { id: 'n1', group: GROUP } }),
    });
    world.mode = 'down';
    const agent = world.agent();
    expect((await tick(world, agent)).kind).toBe('idle');
    expect(world.server.holding(GROUP)).toEqual(['n1']);
    world.mode = 'ok';
    expect((await tick(world, agent)).kind).toBe('idle');
    expect(world.server.holding(GROUP)).toEqual([]);
    // released: the idle agent asks nobody again
    const requests = world.server.counts.steadyState;
    await tick(world, agent);
    expect(world.server.counts.steadyState).toBe(requests);
  });

  it('asks the FleetLock server before adopting kured’s slot (a migration) for a reboot still to come', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.kuredTookSlot();
    const world = new World(cluster);
    otherCluster(world, '/v1/pre-reboot');
    const agent = world.agent();
    const waiting = await tick(world, agent);
    expect(waiting).toMatchObject({ kind: 'waiting-for-lock', fleetLock: true });
    expect(cluster.reboots).toEqual([]);
    expect(cluster.node.annotations[CYCLE_ANNOTATION]).toBeUndefined();
    otherCluster(world, '/v1/steady-state');
    expect((await tick(world, agent)).kind).toBe('rebooting');
    expect(world.server.holding(GROUP)).toEqual(['n1']);
    expect(cluster.violations).toEqual([]);
  });

  it('keeps the FleetLock slot through a restart in the middle of the cycle', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.rebootWorks = false; // the host does not come back on a new boot: still in the cycle
    const world = new World(cluster);
    expect((await tick(world)).kind).toBe('rebooting');
    await tick(world); // a fresh agent, node in its cycle
    expect(world.server.holding(GROUP)).toEqual(['n1']);
    expect(world.seen.map((s) => s.path)).toEqual(['/v1/pre-reboot']);
  });
});
