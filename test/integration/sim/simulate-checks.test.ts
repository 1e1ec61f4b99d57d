// kured-ts simulate's invariant checks: agents that break the rules are caught, a run cut by its
// wall-clock limit is judged fairly, and need order is measured (in memory: see
// test/fakes/simulate.ts; the other scenario files are named in simulate-wave.test.ts).
import { describe, expect, it, jest } from '@jest/globals';
import { DEFAULT_SIMULATE_OPTIONS, runSimulate, type SimulateOptions } from '../../../src/cli/simulate.js';
import { runSimulation, type AgentFactory } from '../../../src/sim/simulation.js';
import { simAgentFactory, unqueuedAgentFactory } from '../../../src/sim/sim-agent.js';
import { SIMULATION_TIMEOUT_MS, inMemory, memorySimulationOptions, simulate } from '../../fakes/simulate.js';

jest.setTimeout(SIMULATION_TIMEOUT_MS);

const small: SimulateOptions = { ...DEFAULT_SIMULATE_OPTIONS, nodes: 5, seed: 42 };

/** An agent that ignores every rule: cordons and reboots at once, without the lock or a drain. */
const reckless: AgentFactory = (config, io) => ({
  run: async (signal) => {
    await io.clock.sleep(1_000, signal);
    if (!(await io.sentinel.rebootRequired()).required) return;
    await io.kube.mergePatchNode(config.nodeId, { spec: { unschedulable: true } });
    await io.rebooter.reboot();
  },
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
      simAgentFactory({ ...config, groupLabel: '', groupConcurrency: undefined }, io);
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
    const options = memorySimulationOptions({ ...small, nodes: 6, concurrency: 2 });
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
      inMemory({ out: { write: (t) => (text += t), isTTY: false }, progress: false }),
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
      inMemory({ out: { write: (t) => (text += t), isTTY: false }, createAgent: reckless, progress: false }),
    );
    expect(code).toBe(1);
    expect(text).toMatch(/VIOLATION at/);
  });
});
