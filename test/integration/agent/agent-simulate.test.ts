// The production agent (createAgent) in the simulator: simulated kubelets, scheduler and workloads,
// virtual time, and the simulator's invariant observer (the client in memory: test/fakes/simulate.ts).
import { describe, expect, it, jest } from '@jest/globals';
import { createAgent } from '../../../src/agent/create-agent.js';
import {
  DEFAULT_SIMULATE_OPTIONS,
  SIM_HOLD_ANNOTATION,
  type SimulateOptions,
} from '../../../src/cli/simulate.js';
import { DRAIN_ORDER_LABEL } from '../../../src/drain/drain-plan.js';
import type { Kube, PodPage, V1Pod, WatchEvent, WatchOptions } from '../../../src/kube/kube.js';
import { SIMULATION_TIMEOUT_MS, simulate } from '../../fakes/simulate.js';

jest.setTimeout(SIMULATION_TIMEOUT_MS);

const small: SimulateOptions = { ...DEFAULT_SIMULATE_OPTIONS, nodes: 5, seed: 42 };

describe('the production agent in the simulator', () => {
  it.each([
    ['concurrency 1', { ...small }, 1],
    [
      'concurrency 2 with a pre-cordoned node',
      { ...small, nodes: 6, concurrency: 2, preCordoned: 1, seed: 3 },
      2,
    ],
  ])('%s: every node rebooted, no invariant broken', async (_name, options, c) => {
    const r = await simulate(options, { createAgent });
    expect(r.violations).toEqual([]);
    expect(r.stop).toBe('done');
    expect(r.rebooted).toBe(options.nodes);
    expect(r.maxHolders).toBeLessThanOrEqual(c);
  });
});

describe('undrainable nodes in the simulator (issue 33)', () => {
  const undrainable: SimulateOptions = { ...small, nodes: 8, concurrency: 2, undrainable: 2, seed: 1 };

  it('quarantines the undrainable nodes and finishes the others, no invariant broken', async () => {
    const r = await simulate(undrainable, { createAgent });
    expect(r.violations).toEqual([]);
    expect(r.stop).toBe('done');
    expect(r.quarantined).toEqual(['node-01', 'node-02']);
    expect(r.rebooted).toBe(6);
    expect(r.halted).toBeUndefined();
  });

  it('with --max-quarantined 1 halts new cycles at the second quarantine, with the reason', async () => {
    const r = await simulate({ ...undrainable, agent: { maxQuarantined: { count: 1 } } }, { createAgent });
    expect(r.violations).toEqual([]);
    expect(r.stop).toBe('done');
    expect(r.quarantined).toEqual(['node-01', 'node-02']);
    expect(r.halted).toMatch(/^halted: 2 other nodes quarantined \(--max-quarantined 1\): node-01, node-02/);
    expect(r.rebooted).toBeLessThan(6);
  });
});

describe('storage pods of drain order 10 in the simulator (issue 30)', () => {
  const storage: SimulateOptions = { ...small, nodes: 6, concurrency: 2, storagePods: true, seed: 7 };

  it('evicts each only after the other pods of its node are gone, no invariant broken', async () => {
    const r = await simulate(storage, { createAgent });
    expect(r.violations).toEqual([]);
    expect(r.stop).toBe('done');
    expect(r.rebooted).toBe(6);
    expect(r.drainOrder).toEqual({ evicted: 6, early: 0 });
  });

  it('catches a drain that does not see the order (the label stripped from what it lists)', async () => {
    const blind: typeof createAgent = (config, io) => {
      const strip = (p: V1Pod): V1Pod => ({
        ...p,
        metadata: { ...p.metadata, labels: { ...p.metadata?.labels, [DRAIN_ORDER_LABEL]: '0' } },
      });
      // whatever the agent lists of its pods, or follows of them (issue 42: a watch), has no order
      const kube = new Proxy(io.kube, {
        get(target, key): unknown {
          if (key === 'listPods')
            return async (...args: Parameters<Kube['listPods']>): Promise<V1Pod[]> =>
              (await target.listPods(...args)).map(strip);
          if (key === 'listPodsPage')
            return async (...args: Parameters<Kube['listPodsPage']>): Promise<PodPage> => {
              const page = await target.listPodsPage(...args);
              return { ...page, items: page.items.map(strip) };
            };
          if (key === 'watchPods')
            return (onEvent: (e: WatchEvent<V1Pod>) => void, options: WatchOptions): Promise<void> =>
              target.watchPods((e) => {
                onEvent(e.type === 'BOOKMARK' || e.type === 'ERROR' ? e : { ...e, object: strip(e.object) });
              }, options);
          const value: unknown = Reflect.get(target, key);
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
      return createAgent(config, { ...io, kube });
    };
    const r = await simulate(storage, { createAgent: blind });
    expect(r.drainOrder?.early).toBeGreaterThan(0);
    expect(new Set(r.violations.map((v) => v.rule))).toEqual(new Set(['drain-order']));
  });
});

describe('a worker holding each node after its drain in the simulator (simulate --hold-worker, issue 30)', () => {
  const HOLD_MS = 3 * 60_000;
  const holding: SimulateOptions = { ...small, nodes: 4, concurrency: 2, holdWorkerMs: HOLD_MS, seed: 5 };

  it('keeps every held node cordoned with its slot until the work is done, then reboots it', async () => {
    const r = await simulate(holding, { createAgent });
    expect(r.violations).toEqual([]);
    expect(r.stop).toBe('done');
    expect(r.rebooted).toBe(4);
    expect(r.holdWorker).toEqual({
      key: SIM_HOLD_ANNOTATION,
      holdMs: HOLD_MS,
      worked: 4,
      finished: 4,
      rebootedWhileHeld: 0,
    });
    // two waves of two nodes, each held 3 minutes with its slot
    expect(r.makespanMs).toBeGreaterThan(2 * HOLD_MS);
  });

  it('catches agents that do not hold (their --hold-after-drain-annotation dropped)', async () => {
    const deaf: typeof createAgent = (config, io) =>
      createAgent({ ...config, holdAfterDrainAnnotations: [] }, io);
    const r = await simulate(holding, { createAgent: deaf });
    expect(r.holdWorker?.rebootedWhileHeld).toBe(4);
    expect(r.violations.filter((v) => v.rule === 'rebooted-while-held')).toHaveLength(4);
  });
});
