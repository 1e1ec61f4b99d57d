// kured-ts simulate, the wave itself: every node rebooted the same way twice, concurrency and a
// pre-cordoned node, reboot-required arriving late, --reboot-now, the kernel history, control-plane
// nodes last, and the report of runSimulate (the one simulate run over loopback HTTP). The other
// scenario files: simulate-lock (the lock under stress, patch night), simulate-zones (the per-zone
// limit), simulate-gates (what holds a wave back), simulate-checks (the invariant checks catching
// broken agents), simulate-fleet (clusters sharing FleetLock). Every run but the report's hands the
// agents' requests to the fake API server in memory (test/fakes/simulate.ts).
import { describe, expect, it, jest } from '@jest/globals';
import { DEFAULT_SIMULATE_OPTIONS, runSimulate, type SimulateOptions } from '../../../src/cli/simulate.js';
import { costTotal } from '../../../src/sim/api-cost.js';
import { runSimulation, type SimulationResult } from '../../../src/sim/simulation.js';
import { SIMULATION_TIMEOUT_MS, memorySimulationOptions, simulate } from '../../fakes/simulate.js';

jest.setTimeout(SIMULATION_TIMEOUT_MS);

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

  it('waits for reboot-required arriving over an hour, then reboots only the nodes that need it', async () => {
    const options = memorySimulationOptions({ ...small, nodes: 4, needsReboot: 2 });
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

  it("costs a node alone in three at most 30 requests from its need, counted apart from its agent's start-up", async () => {
    const r = await simulate({
      ...small,
      nodes: 3,
      needsReboot: 1,
      concurrency: 10,
      podsPerNode: 2,
      requiredOverMs: 600_000,
    });
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(1);
    const whole = (name: string): number => costTotal(r.cost.byNode[name] ?? []).requests;
    expect(Object.keys(r.cost.cycles)).toEqual(['node-01']);
    const cycle = r.cost.cycles['node-01'] ?? Infinity;
    expect(cycle).toBeLessThanOrEqual(30);
    // what came before the need is what an idle agent spends in its whole run: its start-up
    expect(whole('node-01') - cycle).toBe(whole('node-02'));
    expect(whole('node-02')).toBeGreaterThan(0);
  });

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
