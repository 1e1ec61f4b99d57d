// simulate --clusters N --fleetlock-slots S: clusters of real agents on one virtual time sharing a
// FleetLock server; the observer across them counts the clusters rebooting at once.
import { describe, expect, it, jest } from '@jest/globals';
import { DEFAULT_SIMULATE_OPTIONS, type SimulateOptions } from '../../../src/cli/simulate.js';
import { runFleetSimulate } from '../../../src/cli/simulate-fleet.js';
import { runFleetSimulation } from '../../../src/sim/fleet-simulation.js';
import { SIMULATION_TIMEOUT_MS, inMemory, memorySimulationOptions } from '../../fakes/simulate.js';

jest.setTimeout(SIMULATION_TIMEOUT_MS);

const small: SimulateOptions = { ...DEFAULT_SIMULATE_OPTIONS, nodes: 4, concurrency: 2, seed: 7 };

/**
 * Three clusters on one slot, run once for the two tests that read it: a run is a pure function of
 * its options and seed (src/sim/README.md), so a second run would only repeat the first.
 */
let oneSlot: ReturnType<typeof runFleetSimulation> | undefined;
const threeClustersOneSlot = (): ReturnType<typeof runFleetSimulation> =>
  (oneSlot ??= runFleetSimulation(memorySimulationOptions(small), { clusters: 3, slots: 1 }));

describe('simulate --clusters with a shared FleetLock server', () => {
  it('three clusters on one slot: every node reboots, never two clusters at once, every slot given back', async () => {
    const r = await threeClustersOneSlot();
    expect(r.stop).toBe('done');
    for (const { result } of r.clusters) {
      expect(result.violations).toEqual([]);
      expect(result.rebooted).toBe(4);
      expect(result.agentErrors).toEqual([]);
    }
    expect(r.fleetLock?.violations).toEqual([]);
    expect(r.fleetLock?.maxRebooting).toBe(1);
    const counts = r.fleetLock!.counts;
    expect(counts.granted).toBeGreaterThanOrEqual(12);
    expect(counts.refused).toBeGreaterThan(0);
  });

  it('keeps the turn with the node the FleetLock server refuses: no turn lapses, none goes round the waiters', async () => {
    const r = await threeClustersOneSlot();
    expect(r.stop).toBe('done');
    for (const { result } of r.clusters) {
      expect(result.violations).toEqual([]);
      expect(result.coordinator.lapsed).toBe(0);
      // a turn per node, and one again per PDB pre-flight that held a node back at its turn
      expect(result.coordinator.granted).toBeLessThanOrEqual(2 * small.nodes);
    }
  });

  it('with as many slots as clusters, clusters do reboot at once (the observer counts them)', async () => {
    const r = await runFleetSimulation(memorySimulationOptions(small), { clusters: 3, slots: 3 });
    expect(r.stop).toBe('done');
    expect(r.fleetLock?.violations).toEqual([]);
    expect(r.fleetLock?.maxRebooting).toBeGreaterThan(1);
  });

  it('reports each cluster and the fleet, and exits 0', async () => {
    const out: string[] = [];
    const code = await runFleetSimulate(
      { ...small, nodes: 3 },
      { clusters: 2, slots: 1 },
      inMemory({ out: { write: (t) => void out.push(t), isTTY: false }, progress: false }),
    );
    const text = out.join('');
    expect(code).toBe(0);
    expect(text).toContain('cluster c1:');
    expect(text).toContain('cluster c2:');
    expect(text).toMatch(/clusters rebooting at once\s+1 at most \(1 allowed\)/);
    expect(text).toMatch(/fleet invariant violations\s+0/);
  });
});
