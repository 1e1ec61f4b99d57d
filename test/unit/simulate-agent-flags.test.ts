// simulate's agent flags: the agent's own table parses them, and one mapping carries them to the agents.
import { describe, expect, it } from '@jest/globals';
import { FLAGS } from '../../src/config/flags.js';
import { parseGivenFlags } from '../../src/config/parse.js';
import { SIM_AGENT_FLAGS, simAgentOptions } from '../../src/cli/simulate-agent-flags.js';
import { DEFAULT_SIMULATE_OPTIONS, simulationOptions, type SimulateOptions } from '../../src/cli/simulate.js';
import { DS_NAME, ZONE_LABEL } from '../../src/sim/cluster-spec.js';

/** simulate's options for these command-line values (flag name → values), in a cluster of `nodes`. */
function options(values: Record<string, string[]>, nodes = 20): ReturnType<typeof simAgentOptions> {
  const { config, given } = parseGivenFlags(SIM_AGENT_FLAGS, values, {});
  return simAgentOptions(config, given, nodes);
}

describe("simulate's agent flags", () => {
  it('names only flags of the agent’s table (none silently dropped)', () => {
    const names = new Set(FLAGS.map((f) => f.name));
    expect(SIM_AGENT_FLAGS.filter((n) => !names.has(n))).toEqual([]);
  });

  it.each<[string, Record<string, string[]>, object]>([
    [
      'resolves --concurrency N% to the slots of this cluster, and the agents keep the percentage',
      { concurrency: ['20%'] },
      { concurrency: 4, concurrencyPercent: 20 },
    ],
    [
      'takes durations in the agent’s form',
      { period: ['10m'], 'reboot-delay': ['30s'] },
      { periodMs: 600_000, rebootDelayMs: 30_000 },
    ],
    [
      'keeps a drain timeout given as 0s (no timeout even with --undrainable)',
      { 'drain-timeout': ['0s'] },
      { drainTimeoutMs: 0 },
    ],
    ['changes nothing of the agents when no flag is given', {}, { agent: {} }],
    [
      'runs the agents with a flag only they read (--reboot-retries, --count-unavailable=false)',
      { 'reboot-retries': ['5'], 'count-unavailable': ['false'] },
      { agent: { rebootRetries: 5, countUnavailable: false } },
    ],
  ])('%s', (_name, values, expected) => {
    expect(options(values)).toMatchObject(expected);
  });

  it('leaves the drain timeout to the simulator unless given (--undrainable sets one)', () => {
    expect(options({})).not.toHaveProperty('drainTimeoutMs');
  });

  it('refuses a value the agent refuses, with the agent’s message naming the flag', () => {
    expect(() => options({ 'taint-timing': ['never'] })).toThrow(
      'invalid value "never" for --taint-timing: must be one of: required, unblocked',
    );
  });

  it.each<[string, Record<string, string[]>, Partial<SimulateOptions>, object]>([
    [
      "puts the flags' settings in every simulated agent's configuration",
      { 'quarantine-retry': ['2h'], 'taint-timing': ['unblocked'] },
      {},
      { quarantineRetryMs: 7_200_000, taintTiming: 'unblocked', dsName: DS_NAME, metricsPort: 0 },
    ],
    [
      'runs the agents with the percentage of --concurrency N%',
      { concurrency: ['20%'] },
      {},
      { concurrency: { percent: 20 } },
    ],
    [
      'groups the agents by zone under --group-order sequential',
      { 'group-order': ['sequential'] },
      { zones: 3 },
      { groupLabel: ZONE_LABEL },
    ],
    [
      "keeps the agents' --group-label without zone groups",
      {},
      { agent: { groupLabel: 'rack' } },
      { groupLabel: 'rack', groupConcurrency: undefined },
    ],
    [
      'turns approval on for the agents when the simulated operator approves',
      {},
      { approveEveryMs: 60_000 },
      { requireApproval: true },
    ],
  ])('%s', (_name, values, world, expected) => {
    const run = simulationOptions({ ...DEFAULT_SIMULATE_OPTIONS, ...options(values), ...world });
    expect(run.agent).toMatchObject(expected);
  });

  it('holds the run to the slots --concurrency N% resolves to for the cluster', () => {
    const run = simulationOptions({
      ...DEFAULT_SIMULATE_OPTIONS,
      nodes: 20,
      ...options({ concurrency: ['20%'] }),
    });
    expect(run.slots).toBe(4);
  });
});
