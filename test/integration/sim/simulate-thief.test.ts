// simulate --coordinator-thief (issue 41): a thief with the coordinator's token hijacks its Lease
// (endless, "all healthy", advice that nothing holds the queue) and gives every waiter a turn every
// 10 s while some nodes are down, bypassing admission (as if the policy were off). The agents judge
// every capacity gate themselves: no invariant breaks, among them the observer's unavailable-exceeded
// (slots plus unavailable nodes within --concurrency and --group-concurrency at each reboot). And
// agents whose census is blind (told every node is Ready) are caught by it: the check is not vacuous.
import { describe, expect, it } from '@jest/globals';
import {
  DEFAULT_SIMULATE_OPTIONS,
  runSimulate,
  simulate,
  type SimulateOptions,
} from '../../../src/cli/simulate.js';
import { runCli } from '../../../src/cli/program.js';
import type { CliIo } from '../../../src/cli/shared.js';
import { registerSimulate } from '../../../src/cli/simulate-command.js';
import type { Kube, NodeRow } from '../../../src/kube/kube.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { simAgentFactory } from '../../../src/sim/sim-agent.js';
import type { AgentFactory, SimulationResult } from '../../../src/sim/simulation.js';

const MINUTE = 60_000;
const DOWN_MS = 40 * MINUTE;

/** Ten nodes at --concurrency 1, the last two NotReady for 40 minutes, a thief from +1m for 30m. */
const hijacked: SimulateOptions = {
  ...DEFAULT_SIMULATE_OPTIONS,
  nodes: 10,
  concurrency: 1,
  unhealthy: { nodes: 2, durationMs: DOWN_MS },
  coordinatorThief: { fromMs: MINUTE, forMs: 30 * MINUTE },
};

/** The production agent whose census reads every Node as Ready and schedulable: it ignores the gates. */
const blind: AgentFactory = (config, io) => {
  const kube = new Proxy(io.kube, {
    get(target, key): unknown {
      if (key === 'listNodeRows')
        return async (...args: Parameters<Kube['listNodeRows']>): Promise<NodeRow[]> =>
          (await target.listNodeRows(...args)).map((r) => ({
            ...r,
            ready: true,
            readiness: 'Ready',
            unschedulable: false,
          }));
      const value: unknown = Reflect.get(target, key);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return simAgentFactory(config, { ...io, kube });
};

const rules = (r: SimulationResult): Set<string> => new Set(r.violations.map((v) => v.rule));

/** When the first node of `names` took a slot (virtual ms), Infinity when none did. */
const firstLock = (r: SimulationResult, names: readonly string[]): number =>
  Math.min(...r.nodes.filter((n) => names.includes(n.name)).map((n) => n.lockedAtMs ?? Infinity));

describe('simulate --coordinator-thief: a hijacked Lease and forged turns while nodes are down', () => {
  it('at --concurrency 1 with two nodes NotReady: no slot until they are back, every node rebooted, 0 violations, the writes counted', async () => {
    const r = await simulate(hijacked);
    expect(r.violations).toEqual([]);
    expect(r.stop).toBe('done');
    expect(r.rebooted).toBe(10);
    expect(r.maxDown).toBe(1);
    // every 10 s for 30 minutes, and a turn on every waiting node each time
    expect(r.coordinatorThief).toMatchObject({
      fromMs: MINUTE,
      forMs: 30 * MINUTE,
      leaseWrites: 180,
      stopped: true,
    });
    expect(r.coordinatorThief?.turnsWritten).toBeGreaterThanOrEqual(180);
    // two unavailable nodes fill the one slot: nobody goes while they are NotReady
    expect(r.firstLockMs).toBeGreaterThanOrEqual(DOWN_MS);
    // the wave goes on once the thief has stopped and the nodes are back
    expect(r.makespanMs).toBeGreaterThan(DOWN_MS);
  }, 180_000);

  it('catches agents whose census says every node is Ready: the forged turns let them reboot past the unavailable nodes', async () => {
    const r = await simulate(hijacked, { createAgent: blind });
    expect(rules(r)).toEqual(new Set(['unavailable-exceeded']));
    expect(r.violations[0]?.detail).toMatch(
      /^3 nodes out of service in all, limit 1: slots node-\d+; unavailable node-09 not ready, node-10 not ready$/,
    );
    expect(r.firstLockMs).toBeLessThan(DOWN_MS);
  }, 180_000);

  it('without the thief the same blind agents wait: the coordinator gives no turn while the nodes are down', async () => {
    const r = await simulate({ ...hijacked, coordinatorThief: undefined }, { createAgent: blind });
    expect(r.violations).toEqual([]);
    expect(r.coordinatorThief).toBeUndefined();
    expect(r.firstLockMs).toBeGreaterThanOrEqual(DOWN_MS);
  }, 180_000);

  it('prints its writes in the report, and exits 0', async () => {
    let text = '';
    const code = await runSimulate(
      { ...DEFAULT_SIMULATE_OPTIONS, nodes: 3, coordinatorThief: { fromMs: 0, forMs: 2 * MINUTE } },
      { out: { write: (t) => (text += t), isTTY: false }, progress: false },
    );
    expect(code).toBe(0);
    expect(text).toMatch(
      /coordinator thief +\d+ Lease writes, \d+ turns written \(from \+0s for 2m, every 10s\)\n/,
    );
    expect(text).toMatch(/invariant violations +0/);
  }, 60_000);
});

describe('simulate --coordinator-thief with zones and one slot per zone', () => {
  // node-08 (zone-b, needing no reboot: its own would heal it) is NotReady for 20 minutes: zone-b is
  // full, zone-a has its slot, and the fleet's second slot is node-08's
  const zoned: SimulateOptions = {
    ...DEFAULT_SIMULATE_OPTIONS,
    nodes: 8,
    needsReboot: 7,
    concurrency: 2,
    zones: 2,
    groupConcurrency: 1,
    unhealthy: { nodes: 1, durationMs: 20 * MINUTE },
    coordinatorThief: { fromMs: MINUTE, forMs: 15 * MINUTE },
  };
  const zoneB = ['node-02', 'node-04', 'node-06'];

  it('lets zone-a go and holds zone-b back while its node is down, 0 violations', async () => {
    const r = await simulate(zoned);
    expect(r.violations).toEqual([]);
    expect(r.rebooted).toBe(7);
    expect(r.maxDownByZone).toEqual({ 'zone-a': 1, 'zone-b': 1 });
    expect(r.firstLockMs).toBeLessThan(20 * MINUTE);
    expect(firstLock(r, zoneB)).toBeGreaterThanOrEqual(20 * MINUTE);
    expect(r.coordinatorThief?.turnsWritten).toBeGreaterThan(0);
  }, 180_000);

  it('catches blind agents in zone-b (its NotReady node and a slot: two in a zone of one)', async () => {
    const r = await simulate(zoned, { createAgent: blind });
    expect(rules(r)).toEqual(new Set(['unavailable-exceeded']));
    expect(r.violations.map((v) => v.detail)).toContainEqual(
      expect.stringMatching(
        /^2 nodes out of service in zone-b, limit 1: slots node-0[246]; unavailable node-08 not ready$/,
      ),
    );
  }, 180_000);
});

describe('simulate --coordinator-thief with a control plane of 3', () => {
  // node-06, a worker needing no reboot, is NotReady for 20 minutes: one of the two slots is its
  const controlPlane: SimulateOptions = {
    ...DEFAULT_SIMULATE_OPTIONS,
    nodes: 6,
    needsReboot: 5,
    controlPlane: 3,
    concurrency: 2,
    unhealthy: { nodes: 1, durationMs: 20 * MINUTE },
    coordinatorThief: { fromMs: MINUTE, forMs: 30 * MINUTE },
  };

  it('keeps the control plane one at a time with its quorum, and the unavailable worker counted', async () => {
    const r = await simulate(controlPlane);
    expect(r.rebooted).toBe(5);
    expect(r.maxDown).toBe(1);
    expect(r.violations.filter((v) => v.rule !== 'control-plane-before-workers')).toEqual([]);
  }, 180_000);

  // A control-plane node judges --control-plane-last itself, turn or not (it once took a turn as the
  // coordinator's word that no worker was left): the thief's turns do not send it first.
  it('and keeps it last, after every worker: 0 violations', async () => {
    const r = await simulate(controlPlane);
    expect(r.violations).toEqual([]);
  }, 180_000);
});

describe('simulate --coordinator-thief on the command line', () => {
  /** `kured-ts simulate ARGS` in this process: its exit status and what it wrote to stderr. */
  async function usage(args: string[]): Promise<{ code: number; stderr: string }> {
    let stderr = '';
    const io: CliIo = {
      env: {},
      stdout: () => undefined,
      stderr: (text) => (stderr += text),
      // eslint-disable-next-line no-restricted-syntax -- real time: the simulate command reads the system clock for its report
      now: () => new Date(),
      version: '0.0.0',
      createLogger: () => new MemoryLogger(),
    };
    const simulateCommand = (p: Parameters<typeof registerSimulate>[0]): void =>
      void registerSimulate(p, { ...io, isTTY: false, exit: () => undefined });
    const code = await runCli(['simulate', ...args], io, {
      runAgent: () => Promise.resolve(0),
      commands: { simulate: simulateCommand },
    });
    return { code, stderr };
  }

  it.each([
    ['5m', /expected FROM,FOR/],
    ['5m,30m,1s,2s', /expected FROM,FOR\[,EVERY\]/],
    ['5m,30m,0s', /EVERY must be longer than 0s/],
    ['5m,0s', /FOR must be longer than 0s/],
    ['x,30m', /expected a duration/],
    ['5m,-1m', /must not be negative/],
  ])('refuses %s with exit 2 and one line naming the flag', async (value, message) => {
    const run = await usage(['--coordinator-thief', value]);
    expect(run.code).toBe(2);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^error: option '--coordinator-thief \[from,for\[,every\]\]' argument/);
    expect(run.stderr).toMatch(message);
  });
});
