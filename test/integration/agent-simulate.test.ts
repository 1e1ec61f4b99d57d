// The production agent (createAgent) in the simulator: simulated kubelets, scheduler and workloads,
// virtual time, and the simulator's invariant observer.
import { describe, expect, it } from '@jest/globals';
import { createAgent } from '../../src/agent/create-agent.js';
import { DEFAULT_SIMULATE_OPTIONS, simulate, type SimulateOptions } from '../../src/cli/simulate.js';

const small: SimulateOptions = { ...DEFAULT_SIMULATE_OPTIONS, nodes: 5, seed: 42 };

describe('the production agent in the simulator', () => {
  it.each([
    ['concurrency 1', { ...small }, 1],
    [
      'concurrency 2 with a pre-cordoned node',
      { ...small, nodes: 6, concurrency: 2, preCordoned: 1, seed: 3 },
      2,
    ],
  ])(
    '%s: every node rebooted, no invariant broken',
    async (_name, options, c) => {
      const r = await simulate(options, { createAgent });
      expect(r.violations).toEqual([]);
      expect(r.stop).toBe('done');
      expect(r.rebooted).toBe(options.nodes);
      expect(r.maxHolders).toBeLessThanOrEqual(c);
    },
    60_000,
  );
});
