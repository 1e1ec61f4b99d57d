// kured-ts simulate, the lock under stress: deleted by a third party, lapsing under --lock-ttl, and
// patch night with and without the coordinator (in memory: see
// test/fakes/simulate.ts; the other scenario files are named in simulate-wave.test.ts).
import { describe, expect, it, jest } from '@jest/globals';
import { DEFAULT_SIMULATE_OPTIONS, type SimulateOptions } from '../../../src/cli/simulate.js';
import { SIMULATION_TIMEOUT_MS, simulate } from '../../fakes/simulate.js';

jest.setTimeout(SIMULATION_TIMEOUT_MS);

const small: SimulateOptions = { ...DEFAULT_SIMULATE_OPTIONS, nodes: 5, seed: 42 };

describe('kured-ts simulate with the real agents', () => {
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
