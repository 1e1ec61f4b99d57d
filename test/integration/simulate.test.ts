import { describe, expect, it } from '@jest/globals';
import {
  DEFAULT_SIMULATE_OPTIONS,
  runSimulate,
  simulate,
  type SimulateOptions,
  simulationOptions,
} from '../../src/cli/simulate.js';
import { runSimulation, type AgentFactory, type SimulationResult } from '../../src/sim/simulation.js';
import { simAgentFactory, unqueuedAgentFactory } from '../../src/sim/sim-agent.js';

const small: SimulateOptions = { ...DEFAULT_SIMULATE_OPTIONS, nodes: 5, seed: 42 };

/** The report without wall-clock measurements. */
function comparable(r: SimulationResult): SimulationResult {
  return { ...r, wallMs: 0 };
}

describe('kured-ts simulate with the real agents', () => {
  it('reboots every node of a small cluster with no invariant broken, the same way twice', async () => {
    const first = await simulate(small);
    expect(first.violations).toEqual([]);
    expect(first.stop).toBe('done');
    expect(first.rebooted).toBe(5);
    expect(first.maxDown).toBe(1);
    expect(first.maxHolders).toBe(1);
    expect(first.evictions.accepted).toBeGreaterThan(0);
    expect(first.lowerBoundMs).toBeGreaterThan(0);
    expect(first.makespanMs).toBeGreaterThanOrEqual(first.lowerBoundMs);
    const second = await simulate(small);
    expect(comparable(second)).toEqual(comparable(first));
  });

  it('keeps a pre-cordoned node cordoned and honours concurrency 2', async () => {
    const r = await simulate({ ...small, nodes: 6, concurrency: 2, preCordoned: 1, seed: 3 });
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(6);
    expect(r.maxHolders).toBeLessThanOrEqual(2);
    expect(r.maxDown).toBeLessThanOrEqual(2);
  });

  it.each([
    { name: 'the lock deleted every 3 minutes by a third party', over: { wipeLockEveryMs: 180_000 } },
    {
      name: 'a --lock-ttl that lapses while nodes are down',
      over: { lockTtlMs: 60_000, bootTimeMs: 240_000 },
    },
  ])('keeps every invariant with $name, never more than C nodes down', async ({ over }) => {
    for (const concurrency of [1, 2]) {
      const r = await simulate({ ...small, nodes: 6, concurrency, ...over });
      expect(r.violations).toEqual([]);
      expect(r.stop).toBe('done');
      expect(r.rebooted).toBe(6);
      expect(r.maxDown).toBeLessThanOrEqual(concurrency);
      if (over.wipeLockEveryMs !== undefined) expect(r.lockWipes).toBeGreaterThan(0);
    }
  });

  it('takes no lock while an alert fires, and reboots the node with a blocking pod only after it ends', async () => {
    const r = await simulate({ ...small, nodes: 3, alertFiringForMs: 1_800_000, blockingPodMs: 3_600_000 });
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(3);
    expect(r.firstLockMs).toBeGreaterThanOrEqual(1_800_000);
    expect(r.blockedMs['blocked: prometheus']).toBeGreaterThan(0);
    expect(r.blockedMs['blocked: pods']).toBeGreaterThan(0);
    const blocked = r.nodes.find((n) => n.name === 'node-01');
    expect(blocked?.lockedAtMs).toBeGreaterThanOrEqual(3_600_000);
  });

  it('waits for reboot-required arriving over an hour, then reboots only the nodes that need it', async () => {
    const options = simulationOptions({ ...small, nodes: 4, needsReboot: 2 });
    options.cluster.requiredOverMs = 3_600_000;
    const r = await runSimulation(options);
    expect(r.violations).toEqual([]);
    expect(r.stop).toBe('done');
    expect(r.nodes.map((n) => [n.name, n.neededReboot, n.reboots])).toEqual([
      ['node-01', true, 1],
      ['node-02', true, 1],
      ['node-03', false, 0],
      ['node-04', false, 0],
    ]);
    // Nobody needs a reboot at the start, so no lock is taken in the first agents' start-up pass.
    expect(r.firstLockMs).toBeGreaterThan(60_000);
  });

  it('never lets more nodes of a zone than --group-concurrency down, under the global cap, 0 violations', async () => {
    const r = await simulate({ ...small, nodes: 9, concurrency: 3, zones: 3, groupConcurrency: 1, seed: 7 });
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(9);
    expect(r.maxDownByZone).toEqual({ 'zone-a': 1, 'zone-b': 1, 'zone-c': 1 });
    expect(r.maxDown).toBeLessThanOrEqual(3);
    expect(r.maxHolders).toBeGreaterThan(1);
  });

  it.each([
    { name: 'the lock deleted every 3 minutes by a third party', over: { wipeLockEveryMs: 180_000 } },
    {
      name: 'a --lock-ttl that lapses while nodes are down',
      over: { lockTtlMs: 60_000, bootTimeMs: 240_000 },
    },
  ])('keeps the per-zone limit at every write with $name', async ({ over }) => {
    // The observer checks slots per zone (too-many-in-group) on every lock and node write.
    const r = await simulate({
      ...small,
      nodes: 9,
      concurrency: 3,
      zones: 3,
      groupConcurrency: 1,
      seed: 7,
      ...over,
    });
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(9);
    expect(Math.max(...Object.values(r.maxDownByZone))).toBe(1);
    if (over.wipeLockEveryMs !== undefined) expect(r.lockWipes).toBeGreaterThan(0);
  });

  it('takes no slot while more nodes than --max-unhealthy-nodes are NotReady, then reboots them all', async () => {
    const unhealthy = { nodes: 2, durationMs: 1_800_000 };
    const options = { ...small, nodes: 6, needsReboot: 4, unhealthy, periodMs: 600_000 };
    const gated = await simulate({ ...options, maxUnhealthyNodes: { count: 1 } });
    expect(gated.violations).toEqual([]);
    expect(gated.rebooted).toBe(4);
    expect(gated.firstLockMs).toBeGreaterThanOrEqual(1_800_000);
    expect(gated.blockedMs['waiting-for-lock: max-unhealthy-nodes']).toBeGreaterThan(0);
    // without the gate, and without --count-unavailable (whose NotReady nodes would take the slots)
    const ungated = await simulate({ ...options, agent: { countUnavailable: false } });
    expect(ungated.firstLockMs).toBeLessThan(1_800_000);
    expect(ungated.blockedMs['waiting-for-lock: max-unhealthy-nodes']).toBeUndefined();
  });

  it('with --approve-every, no node takes a slot before the operator approves it, each approval used once', async () => {
    const r = await simulate({ ...small, nodes: 4, approveEveryMs: 1_200_000, periodMs: 600_000 });
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(4);
    expect(r.firstLockMs).toBeGreaterThanOrEqual(1_200_000);
    expect(r.approvals).toBe(4);
    expect(r.blockedMs['awaiting-approval']).toBeGreaterThan(0);
    expect(r.timeline.spans.some((s) => s.kind === 'awaiting-approval')).toBe(true);
  });

  it('with --autoscaler, no node is removed in its reboot cycle or settle time, and the empty ones are after it', async () => {
    const SETTLE = 600_000;
    const r = await simulate({ ...small, nodes: 4, autoscaler: true });
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(4);
    const removals = r.autoscalerRemovals ?? [];
    expect(removals.filter((x) => x.when !== 'after')).toEqual([]);
    expect(removals.length).toBeGreaterThan(0);
    for (const removal of removals) {
      const released = r.nodes.find((n) => n.name === removal.node)?.releasedAtMs ?? Infinity;
      expect(removal.atMs).toBeGreaterThanOrEqual(released + SETTLE);
    }
    const unprotected = await simulate({
      ...small,
      nodes: 4,
      autoscaler: true,
      agent: { autoscalerProtection: false },
    });
    expect(unprotected.autoscalerRemovals?.filter((x) => x.when === 'cycle').length).toBeGreaterThan(0);
  }, 120_000);

  it('with --load-balancer, every slot grows by --lb-drain-wait, through the policy, 0 violations', async () => {
    const held = (r: SimulationResult): number[] =>
      r.nodes.map((n) => (n.releasedAtMs ?? 0) - (n.lockedAtMs ?? 0));
    const plain = await simulate({ ...small, nodes: 4, concurrency: 2 });
    const behind = await simulate({ ...small, nodes: 4, concurrency: 2, loadBalancer: true });
    expect(behind.violations).toEqual([]);
    expect(behind.rebooted).toBe(4);
    expect(behind.admission?.denied).toBe(0);
    expect(Math.min(...held(behind))).toBeGreaterThanOrEqual(Math.min(...held(plain)) + 110_000);
    // the label is the agents' own: without it (--exclude-from-lb=false) no wait
    const off = await simulate({
      ...small,
      nodes: 4,
      concurrency: 2,
      loadBalancer: true,
      agent: { excludeFromLb: false },
    });
    expect(Math.min(...held(off))).toBeLessThan(Math.min(...held(behind)) - 100_000);
  }, 120_000);

  it('with --reboot-now and no node needing a reboot, reboots exactly that node through the lock', async () => {
    const r = await simulate({ ...small, nodes: 4, needsReboot: 0, rebootNow: 'node-03' });
    expect(r.violations).toEqual([]);
    expect(r.stop).toBe('done');
    expect(r.nodes.filter((n) => n.reboots > 0).map((n) => [n.name, n.reboots])).toEqual([['node-03', 1]]);
    expect(r.nodes.find((n) => n.name === 'node-03')?.lockedAtMs).toBeDefined();
    expect(r.admission?.denied).toBe(0);
  });

  it("records in each node's reboot history the kernel its reboot brought", async () => {
    const r = await simulate({ ...small, nodes: 3 });
    expect(r.kernelsUpdated).toBe(3);
  });

  it.each([
    ['the early taint sends them to the nodes that need no reboot', 'required' as const, 0],
    ["kured's timing lets them land on blocked nodes that need one", 'unblocked' as const, 1],
  ])('with blocking jobs that keep arriving, %s', async (_name, taintTiming, minOnPending) => {
    const churn = { perHour: 60, durationMs: 20 * 60_000 };
    const r = await simulate({
      ...small,
      nodes: 20,
      needsReboot: 10,
      podsPerNode: 2,
      blockingChurn: churn,
      agent: { taintTiming },
      seed: 2,
    });
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(10);
    expect(r.churnJobs).toBeGreaterThan(10);
    if (minOnPending === 0) expect(r.blockingOnPendingNodes).toBe(0);
    else expect(r.blockingOnPendingNodes).toBeGreaterThanOrEqual(minOnPending);
  });

  it('prints plain progress lines and the report, and exits 0', async () => {
    let text = '';
    const code = await runSimulate(
      { ...small, nodes: 3 },
      { out: { write: (t) => (text += t), isTTY: false } },
    );
    expect(code).toBe(0);
    expect(text).toMatch(/node-01 draining/);
    expect(text).toMatch(/invariant violations\s+0/);
    expect(text).toMatch(/nodes rebooted\s+3\/3/);
  });
});

/** An agent that ignores every rule: cordons and reboots at once, without the lock or a drain. */
const reckless: AgentFactory = (config, io) => ({
  run: async (signal) => {
    await io.clock.sleep(1_000, signal);
    if (!(await io.sentinel.rebootRequired()).required) return;
    await io.kube.mergePatchNode(config.nodeId, { spec: { unschedulable: true } });
    await io.rebooter.reboot();
  },
});

describe('patch night: every node needs a reboot at once', () => {
  it('hands each slot to the oldest need and leaves the PDB pre-flight to the node whose turn it is', async () => {
    const r = await simulate({ ...small, nodes: 20, concurrency: 2, seed: 1 });
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(20);
    expect(r.outOfOrder).toEqual([]);
    expect(r.coordinator.leaderships).toBe(1);
    // waiters do not list the PDBs at each pass: about one list per node (the head's, at its turn)
    expect(r.kubeCalls.listPodDisruptionBudgets ?? 0).toBeLessThanOrEqual(2 * 20);
    expect(r.rollingMs / r.lowerBoundMs).toBeLessThanOrEqual(1.05);
  });

  it('goes on when the leading coordinator dies without a word: its standby takes over', async () => {
    const r = await simulate({
      ...small,
      nodes: 8,
      concurrency: 2,
      seed: 2,
      killCoordinatorAtMs: [10 * 60_000],
    });
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(8);
    expect(r.coordinator.leaderships).toBe(2);
    expect(r.maxHolders).toBeLessThanOrEqual(2);
  });

  it('goes on first come, first served with no coordinator at all', async () => {
    const r = await simulate({ ...small, nodes: 6, concurrency: 2, seed: 3, coordinators: 0 });
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(6);
    expect(r.coordinator.leaderships).toBe(0);
  });
});

describe('the invariant checks', () => {
  it('catch an agent that cordons and reboots without the lock and without draining', async () => {
    // no coordinator: reckless agents ignore its turns, and it would only keep the clock ticking
    const r = await simulate({ ...small, nodes: 3, coordinators: 0 }, { createAgent: reckless });
    const rules = new Set(r.violations.map((v) => v.rule));
    expect(rules).toEqual(
      new Set([
        'cordoned-without-lock',
        'reboot-without-lock',
        'reboot-undrained',
        'too-many-down',
        'left-cordoned',
      ]),
    );
  });

  it('catch agents that ignore the group limit: two nodes of a zone down at once', async () => {
    const ungrouped: AgentFactory = (config, io) =>
      simAgentFactory({ ...config, groupLabel: '', groupConcurrency: 0 }, io);
    const r = await simulate(
      // no coordinator: it would keep the group limit for them (its turns respect the groups)
      { ...small, nodes: 6, concurrency: 3, zones: 2, groupConcurrency: 1, podsPerNode: 0, coordinators: 0 },
      { createAgent: ungrouped },
    );
    expect(new Set(r.violations.map((v) => v.rule))).toEqual(new Set(['too-many-in-group']));
    expect(Math.max(...Object.values(r.maxDownByZone))).toBeGreaterThan(1);
  });

  it('do not count a cordon or lock held mid-cycle when the run is cut short by its wall-clock limit', async () => {
    // The wall clock jumps past the limit the moment a node starts draining, so the run is cut
    // with that node cordoned and holding the lock, however fast or loaded the machine is.
    const options = simulationOptions({ ...small, nodes: 6, concurrency: 2 });
    let wall = 0;
    options.wallLimitMs = 1_000;
    options.wallNow = () => wall;
    options.onPhase = (change) => {
      if (change.phase === 'draining') wall = 10_000;
    };
    const r = await runSimulation(options);
    expect(r.stop).toBe('wall-limit');
    expect(r.maxHolders).toBeGreaterThan(0);
    expect(r.rebooted).toBeLessThan(6);
    expect(r.violations).toEqual([]);
  });

  it('say how far a run cut by --wall-limit got, and print no ratio to a lower bound', async () => {
    let text = '';
    const code = await runSimulate(
      { ...small, nodes: 200, concurrency: 1, wallLimitMs: 1 },
      { out: { write: (t) => (text += t), isTTY: false }, progress: false },
    );
    expect(code).toBe(1);
    expect(text).toMatch(
      /stopped at the wall limit +after \d+ of 200 nodes, .* simulated \(raise --wall-limit\)/,
    );
    expect(text).not.toMatch(/lower bound/);
    expect(text).toMatch(/nodes rebooted +\d+\/200 \(stopped: wall-limit\)/);
  });

  it.each([
    ['with the fair lock queue, hand a freed slot to the node that has needed a reboot longest', true],
    ['without it (kured: whoever wakes first), count the hand-offs out of need order', false],
  ])('%s', async (_name, fair) => {
    const r = await simulate(
      { ...small, nodes: 12, concurrency: 1, podsPerNode: 2, requiredOverMs: 10 * 60_000, seed: 1 },
      fair ? {} : { createAgent: unqueuedAgentFactory },
    );
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(12);
    if (fair) expect(r.outOfOrder).toEqual([]);
    else expect(r.outOfOrder.length).toBeGreaterThan(0);
  });

  it('make runSimulate exit 1', async () => {
    let text = '';
    const code = await runSimulate(
      { ...small, nodes: 2, coordinators: 0 },
      { out: { write: (t) => (text += t), isTTY: false }, createAgent: reckless, progress: false },
    );
    expect(code).toBe(1);
    expect(text).toMatch(/VIOLATION at/);
  });
});

describe('kured-ts simulate --control-plane', () => {
  it('reboots three control-plane nodes one at a time, with their quorum, after every worker', async () => {
    const r = await simulate({ ...small, nodes: 6, controlPlane: 3, concurrency: 2, seed: 5 });
    expect(r.violations).toEqual([]);
    expect(r.stop).toBe('done');
    expect(r.rebooted).toBe(6);
    const cp = r.controlPlane;
    expect(cp?.nodes).toBe(3);
    // the control-plane nodes are the first by name, and have needed a reboot as long as the workers:
    // by need order alone they would go first
    expect(cp?.firstLockMs).toBeGreaterThan(cp?.lastWorkerLockMs ?? Number.POSITIVE_INFINITY);
    const controlPlane = r.nodes.slice(0, 3);
    const intervals = controlPlane.map((n) => [n.lockedAtMs ?? 0, n.releasedAtMs ?? 0] as const);
    for (const [i, [from, to]] of intervals.entries())
      for (const [j, [otherFrom]] of intervals.entries())
        if (i !== j) expect(otherFrom >= to || otherFrom < from).toBe(true);
  });

  it('gives --concurrency 50% of six nodes three slots', async () => {
    const r = await simulate({ ...small, nodes: 6, concurrency: 3, concurrencyPercent: 50, seed: 5 });
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(6);
    expect(r.maxHolders).toBe(3);
  });
});
