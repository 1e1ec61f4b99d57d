// Crash at every step: a fresh agent on the same cluster state must finish the cycle safely.
import { describe, expect, it } from '@jest/globals';
import { Agent, type AgentConfig, type Outcome } from '../../src/agent/agent.js';
import { CYCLE_ANNOTATION, CYCLE_LABEL, parseCycle } from '../../src/node/cycle.js';
import { AGENT_DEFAULTS, FakeCluster, settle } from '../fakes/fake-cluster.js';

interface Scenario {
  name: string;
  config: Partial<AgentConfig>;
  preCordoned?: boolean;
  drainFails?: boolean;
  /** Someone uncordons the node during the first reboot delay. */
  uncordonDuringDelay?: boolean;
}

const SCENARIOS: Scenario[] = [
  { name: 'a plain cycle', config: {} },
  {
    name: 'a cycle with every delay, labels and annotations',
    config: {
      drainDelayMs: 30_000,
      rebootDelayMs: 60_000,
      lockReleaseDelayMs: 90_000,
      preRebootNodeLabels: { a: '1' },
      postRebootNodeLabels: { a: '2' },
      annotateNodes: true,
    },
  },
  { name: 'a pre-cordoned node', config: {}, preCordoned: true },
  {
    name: 'an uncordon by someone else during the delay (abort)',
    config: { rebootDelayMs: 1000 },
    uncordonDuringDelay: true,
  },
  {
    name: 'an uncordon by someone else during the delay (redrain)',
    config: { onUncordonedDuringDelay: 'redrain', rebootDelayMs: 1000 },
    uncordonDuringDelay: true,
  },
  { name: 'a failing drain', config: {}, drainFails: true },
];

function setup(s: Scenario): FakeCluster {
  const cluster = new FakeCluster();
  cluster.sentinel = true;
  cluster.node.unschedulable = s.preCordoned === true;
  cluster.drainFails = s.drainFails === true;
  if (s.uncordonDuringDelay === true) {
    cluster.duringSleep = () => {
      cluster.uncordonByOther();
    };
  }
  return cluster;
}

/** Ticks fresh agents (one per tick: every tick is a restarted pod) until the cycle is over. */
async function runToEnd(cluster: FakeCluster, s: Scenario, signal?: AbortSignal): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  for (let i = 0; i < 12; i++) {
    const agent = new Agent({ ...AGENT_DEFAULTS, ...s.config }, cluster.deps());
    const outcome = await settle(cluster.clock, agent.tick(i === 0 ? signal : undefined)).catch(
      (err: unknown): Outcome => ({ kind: 'error', reason: String(err) }),
    );
    outcomes.push(outcome);
    if (outcome.kind !== 'error') checkAfterTick(cluster, s);
    const done = s.drainFails ? outcome.kind === 'quarantined' : outcome.kind === 'idle';
    if (done) break;
    await cluster.clock.advance(agent.nextDelay(outcome)); // the next tick comes as the loop would
  }
  return outcomes;
}

/** After every tick that was not cut short: our cordon only while we hold the lock. */
function checkAfterTick(cluster: FakeCluster, s: Scenario): void {
  const holding = cluster.table.holders().includes('n1');
  if (!holding && s.preCordoned !== true && cluster.node.unschedulable) {
    cluster.violations.push(`cordoned without the lock after ${cluster.calls.at(-1) ?? ''}`);
  }
}

/** Operations in a run without crashes: every one of them is a crash point. */
async function countCalls(s: Scenario): Promise<number> {
  const cluster = setup(s);
  await runToEnd(cluster, s);
  expect(cluster.violations).toEqual([]);
  return cluster.calls.length;
}

function expectSafeEnd(cluster: FakeCluster, s: Scenario, outcomes: Outcome[]): void {
  const kinds = outcomes.map((o) => o.kind).join(' ');
  expect({ violations: cluster.violations, kinds }).toEqual({ violations: [], kinds });
  expect(cluster.table.holders()).toEqual([]);
  expect(cluster.node.unschedulable).toBe(s.preCordoned === true);
  expect(cluster.node.annotations[CYCLE_ANNOTATION]).toBeUndefined();
  expect(cluster.node.labels[CYCLE_LABEL]).toBeUndefined();
  if (s.drainFails) {
    expect(cluster.reboots).toEqual([]);
    return;
  }
  expect(cluster.reboots).toHaveLength(1);
  expect(cluster.node.bootID).toBe('boot-2');
  expect(cluster.node.taints).toEqual([]);
  expect(outcomes.at(-1)?.kind).toBe('idle');
}

describe.each(SCENARIOS)('crash at every step of $name', (s) => {
  it('runs to a safe end without crashes', async () => {
    const cluster = setup(s);
    const outcomes = await runToEnd(cluster, s);
    expectSafeEnd(cluster, s, outcomes);
    if (s.uncordonDuringDelay === true) {
      const redrain = s.config.onUncordonedDuringDelay === 'redrain';
      expect(outcomes.some((o) => o.kind === 'aborted')).toBe(!redrain);
      expect(cluster.calls.filter((c) => c === 'drain')).toHaveLength(2);
    }
  });

  it('a fresh agent finishes safely after a crash (throw) at any step', async () => {
    const steps = await countCalls(s);
    expect(steps).toBeGreaterThan(10);
    for (let k = 1; k <= steps; k++) {
      const cluster = setup(s);
      cluster.crashAt = k;
      const outcomes = await runToEnd(cluster, s);
      expect({ k, op: cluster.calls[k - 1] }).toEqual({ k, op: expect.any(String) as unknown });
      expectSafeEnd(cluster, s, outcomes);
    }
  });

  it('a fresh agent finishes safely after the tick is abandoned (abort) at any step', async () => {
    const steps = await countCalls(s);
    for (let k = 1; k <= steps; k++) {
      const cluster = setup(s);
      cluster.crashAt = k;
      cluster.crashController = new AbortController();
      const outcomes = await runToEnd(cluster, s, cluster.crashController.signal);
      expectSafeEnd(cluster, s, outcomes);
    }
  });
});

describe('a second agent of the node between the counted attempt and the reboot request', () => {
  it("does not request the same boot's reboot again while the first may still bring it", async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.rebootWorks = false; // the host takes its time: the bootID stays as it was
    const second: Outcome[] = [];
    cluster.onNotify = async (event) => {
      // a rollout overlap: the new pod starts while the old one notifies of the reboot
      if (event === 'reboot' && second.length === 0) {
        second.push(await new Agent(AGENT_DEFAULTS, cluster.deps()).startUp());
      }
    };
    const first = await settle(cluster.clock, new Agent(AGENT_DEFAULTS, cluster.deps()).tick());
    expect(first).toMatchObject({
      kind: 'rebooting',
      reason: expect.stringMatching(/^reboot attempt 1 of 3/),
    });
    expect(second).toMatchObject([{ kind: 'rebooting', reason: expect.stringContaining('waiting for it') }]);
    expect(cluster.reboots).toHaveLength(1);
    expect(parseCycle(cluster.node.annotations[CYCLE_ANNOTATION])?.attempts).toBe(1);
    expect(cluster.calls.filter((c) => c === 'drain')).toHaveLength(1);
  });
});

describe('crash during the reboot delay', () => {
  it('a fresh agent re-drains, re-verifies and reboots once', async () => {
    const s: Scenario = { name: 'delay', config: { rebootDelayMs: 60_000 } };
    const cluster = setup(s);
    const controller = new AbortController();
    cluster.duringSleep = () => {
      controller.abort(new Error('SIGTERM'));
    };
    const outcomes = await runToEnd(cluster, s, controller.signal);
    expect(outcomes[0]?.kind).toBe('error');
    expect(cluster.calls.filter((c) => c === 'drain')).toHaveLength(2);
    expectSafeEnd(cluster, s, outcomes);
  });
});

/**
 * Someone else acts at every step of a cycle whose node comes back NotReady: the readiness gate must
 * hold and no more than --concurrency nodes may be out of service at any step.
 */
describe.each([
  {
    name: 'a third party deletes the lock, and another node tries for a slot at the next tick',
    act: (cluster: FakeCluster): void => {
      cluster.table.set('n1', undefined);
      cluster.afterTick = () => {
        cluster.table.tryTake('n2', cluster.inCycle() ? ['n1'] : []);
        cluster.afterTick = () => {
          cluster.table.set('n2', undefined); // n2 is done by n1's next tick
        };
      };
    },
  },
  {
    name: 'a second agent of the same node starts (a rollout with maxSurge)',
    act: (cluster: FakeCluster): void => {
      cluster.concurrent = new Agent(AGENT_DEFAULTS, cluster.deps()).startUp();
    },
  },
])('at every step of a cycle, $name', ({ act }) => {
  function hostile(): FakeCluster {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.checkOutOfService = true;
    cluster.conditionsAfterReboot = [{ type: 'Ready', status: 'False' }];
    return cluster;
  }

  /** Fresh agents tick until idle; the node becomes Ready one tick after it is seen verifying. */
  async function hostileRun(cluster: FakeCluster): Promise<Outcome[]> {
    const outcomes: Outcome[] = [];
    for (let i = 0; i < 16; i++) {
      const agent = new Agent(AGENT_DEFAULTS, cluster.deps());
      const outcome = await settle(cluster.clock, agent.tick()).catch((err: unknown): Outcome => ({
        kind: 'error',
        reason: String(err),
      }));
      const second = cluster.concurrent;
      cluster.concurrent = undefined;
      if (second) outcomes.push((await settle(cluster.clock, second)) as Outcome);
      outcomes.push(outcome);
      cluster.afterTick?.();
      if (outcome.kind === 'verifying' || outcome.kind === 'lock-lost') {
        cluster.node.conditions = [{ type: 'Ready', status: 'True' }];
      }
      if (outcome.kind === 'idle' && !cluster.inCycle()) break;
    }
    return outcomes;
  }

  it('keeps the invariants at every step and ends with one reboot, nothing cordoned or held', async () => {
    const steps = hostile();
    await hostileRun(steps);
    const total = steps.calls.length;
    expect(total).toBeGreaterThan(10);
    for (let k = 1; k <= total; k++) {
      const cluster = hostile();
      cluster.disturbAt = {
        step: k,
        act: () => {
          act(cluster);
        },
      };
      const outcomes = await hostileRun(cluster);
      const kinds = outcomes.map((o) => o.kind).join(' ');
      expect({ k, violations: cluster.violations, kinds }).toEqual({ k, violations: [], kinds });
      expect({ k, reboots: cluster.reboots.length }).toEqual({ k, reboots: 1 });
      expect({ k, unschedulable: cluster.node.unschedulable, inCycle: cluster.inCycle() }).toEqual({
        k,
        unschedulable: false,
        inCycle: false,
      });
      expect(cluster.table.holders().filter((h) => h === 'n1')).toEqual([]);
      expect(outcomes.filter((o) => o.kind === 'aborted')).toEqual([]);
    }
  });
});
