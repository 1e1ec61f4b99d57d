// Issue 54 in the simulator: nodes carry CSI volumes (simulate --volumes-per-node), attached where
// their pods run and detached some time after the pods go; one never detaches (--stuck-volume). The
// report counts the volumes still attached when a host went down from the simulated attach state,
// not from any agent's word: 0 with the wait after the drain, and more than 0 without it, so that the
// figure is seen to measure something.
import { describe, expect, it, jest } from '@jest/globals';
import { DEFAULT_SIMULATE_OPTIONS, type SimulateOptions } from '../../../src/cli/simulate.js';
import { SIMULATION_TIMEOUT_MS, simulate } from '../../fakes/simulate.js';

jest.setTimeout(SIMULATION_TIMEOUT_MS);

const options: SimulateOptions = {
  ...DEFAULT_SIMULATE_OPTIONS,
  nodes: 100,
  concurrency: 5,
  volumes: { perNode: 3, detachMs: 20_000, stuck: 1 },
  seed: 1,
};

describe('simulate --volumes-per-node 3 --stuck-volume 1 on 100 nodes at concurrency 5', () => {
  it('reboots 99 nodes with no volume attached at reboot and quarantines the one whose volume never detaches, naming it', async () => {
    const r = await simulate(options);
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(99);
    expect(r.volumes).toMatchObject({ volumes: 300, attachedAtReboot: 0, rebootsWithVolumes: 99 });
    const stuck = r.volumes?.stuck ?? [];
    expect(stuck).toHaveLength(1);
    expect(r.quarantined).toEqual(['node-001']);
    expect(r.blockedNodes['node-001']).toContain(stuck[0]);
  });

  it('counts the volumes attached at reboot without the wait (--volume-detach-timeout 0), and quarantines none', async () => {
    const r = await simulate({ ...options, agent: { volumeDetachTimeoutMs: 0 } });
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(100);
    expect(r.quarantined).toEqual([]);
    expect(r.volumes?.attachedAtReboot).toBeGreaterThanOrEqual(300);
  });
});
