// simulate --stuck-sentinel (issue 44): nodes whose need survives every reboot end quarantined
// reboot-loop after --max-reboots-per-need reboots each, and the rest of the wave completes.
import { describe, expect, it } from '@jest/globals';
import { createAgent } from '../../../src/agent/create-agent.js';
import { DEFAULT_SIMULATE_OPTIONS, simulate, type SimulateOptions } from '../../../src/cli/simulate.js';
import { formatReport, passed } from '../../../src/sim/report.js';

const stuck: SimulateOptions = { ...DEFAULT_SIMULATE_OPTIONS, nodes: 5, stuckSentinel: 2, seed: 42 };

function reboots(r: Awaited<ReturnType<typeof simulate>>, node: string): number | undefined {
  return r.nodes.find((n) => n.name === node)?.reboots;
}

describe('simulate --stuck-sentinel', () => {
  it('quarantines the two stuck nodes reboot-loop after 2 reboots each and completes the rest of the wave, no invariant broken', async () => {
    const r = await simulate(stuck, { createAgent });
    expect(r.violations).toEqual([]);
    expect(r.stop).toBe('done');
    expect(r.rebootLoops).toEqual(['node-01', 'node-02']);
    expect(r.quarantined).toEqual(['node-01', 'node-02']);
    expect(reboots(r, 'node-01')).toBe(2);
    expect(reboots(r, 'node-02')).toBe(2);
    for (const node of ['node-03', 'node-04', 'node-05']) expect(reboots(r, node)).toBe(1);
    expect(passed(r)).toBe(true);
    const report = formatReport(r, { nodes: 5, needed: 5, concurrency: 1, periodMs: 3_600_000, seed: 42 });
    expect(report.join('\n')).toMatch(
      /nodes quarantined \(reboot loop\) +2 \(node-01: 2 reboots, node-02: 2 reboots\)/,
    );
  }, 60_000);

  it('with --max-reboots-per-need 1 stops each stuck node after its first reboot', async () => {
    const r = await simulate({ ...stuck, agent: { maxRebootsPerNeed: 1 } }, { createAgent });
    expect(r.violations).toEqual([]);
    expect(r.stop).toBe('done');
    expect(r.rebootLoops).toEqual(['node-01', 'node-02']);
    expect(reboots(r, 'node-01')).toBe(1);
    expect(reboots(r, 'node-02')).toBe(1);
  }, 60_000);
});
