import { describe, expect, it } from '@jest/globals';
import { Agent, type AgentConfig } from '../../src/agent/agent.js';
import type { AgentDeps } from '../../src/agent/agent.js';
import { AGENT_DEFAULTS, FakeBlocker, FakeCluster } from '../fakes/fake-cluster.js';

const PERIOD = 3_600_000;

/** An agent whose sentinel records the virtual time of every tick. */
function recordingAgent(
  cluster: FakeCluster,
  randoms: number[],
  config: Partial<AgentConfig> = {},
  extra: Partial<AgentDeps> = {},
): { agent: Agent; ticks: number[] } {
  const ticks: number[] = [];
  const start = cluster.clock.now().getTime();
  const deps = cluster.deps(extra);
  const inner = deps.sentinel;
  let i = 0;
  const agent = new Agent(
    { ...AGENT_DEFAULTS, periodMs: PERIOD, ...config },
    {
      ...deps,
      random: () => randoms[i++ % randoms.length] ?? 0.5,
      sentinel: {
        rebootRequired: (signal) => {
          ticks.push(cluster.clock.now().getTime() - start);
          return inner.rebootRequired(signal);
        },
      },
    },
  );
  return { agent, ticks };
}

describe('agent.run', () => {
  it('jitters the first tick within a minute and later ticks within ±50% of the period', async () => {
    const cluster = new FakeCluster();
    const { agent, ticks } = recordingAgent(cluster, [0.5, 0, 0.99, 0.25]);
    const controller = new AbortController();
    const running = agent.run(controller.signal);
    await cluster.clock.advance(4 * PERIOD);
    controller.abort();
    await running;
    // first: 0.5 * 60 s; then (0.5 + r) * period for r = 0, 0.99, 0.25, 0.5, 0
    expect(ticks).toEqual([
      30_000,
      30_000 + 1_800_000,
      30_000 + 1_800_000 + 5_364_000,
      30_000 + 1_800_000 + 5_364_000 + 2_700_000,
      30_000 + 1_800_000 + 5_364_000 + 2_700_000 + 3_600_000,
    ]);
  });

  it('never overlaps ticks, even when a tick takes longer than the period', async () => {
    const cluster = new FakeCluster();
    let running = 0;
    let maxRunning = 0;
    const slowSentinel = {
      rebootRequired: async (signal?: AbortSignal) => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        await cluster.clock.sleep(2 * PERIOD, signal);
        running--;
        return { required: false };
      },
    };
    const agent = new Agent(
      { ...AGENT_DEFAULTS, periodMs: PERIOD },
      { ...cluster.deps(), sentinel: slowSentinel, random: () => 0 },
    );
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(10 * PERIOD);
    controller.abort();
    await done;
    expect(maxRunning).toBe(1);
    expect(cluster.metrics.heartbeats).toBeGreaterThan(3);
  });

  it('wakes at once when the lock changes while waiting for a slot', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.table.takeFor('n2');
    const { agent, ticks } = recordingAgent(cluster, [0]);
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(60_000);
    expect(ticks).toEqual([0]);
    expect(cluster.node.statuses.at(-1)?.phase).toBe('waiting-for-lock');
    cluster.table.set('n2', undefined);
    await cluster.clock.advance(1000);
    expect(ticks).toEqual([0, 60_000]);
    expect(cluster.reboots).toHaveLength(1);
    controller.abort();
    await done;
  });

  it('polls every few seconds, not every period, while verifying a reboot', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    cluster.conditionsAfterReboot = [{ type: 'Ready', status: 'False' }];
    const agent = new Agent(
      { ...AGENT_DEFAULTS, periodMs: PERIOD },
      { ...cluster.deps(), random: () => 0.5 },
    );
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(30_000 + PERIOD + 1); // first tick reboots, second one verifies
    expect(cluster.node.statuses.at(-1)?.phase).toBe('verifying');
    cluster.node.conditions = [{ type: 'Ready', status: 'True' }];
    await cluster.clock.advance(10_000);
    expect(cluster.table.holders()).toEqual([]);
    expect(cluster.node.unschedulable).toBe(false);
    controller.abort();
    await done;
  });

  it('exits cleanly when aborted in the middle of a tick, leaving no timers behind', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    const agent = new Agent(
      { ...AGENT_DEFAULTS, rebootDelayMs: 600_000 },
      { ...cluster.deps(), random: () => 0 },
    );
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(1000);
    expect(cluster.node.statuses.at(-1)?.phase).toBe('draining');
    controller.abort(new Error('SIGTERM'));
    await expect(done).resolves.toBeUndefined();
    expect(cluster.clock.pending).toBe(0);
    expect(cluster.reboots).toEqual([]);
  });

  it('retries soon after a failed tick', async () => {
    const cluster = new FakeCluster();
    let fail = true;
    const deps = cluster.deps();
    const node = deps.node;
    const flaky = Object.create(node) as typeof node;
    flaky.get = (signal) => (fail ? Promise.reject(new Error('connect ECONNREFUSED')) : node.get(signal));
    const { agent, ticks } = recordingAgent(cluster, [0.5], {}, { node: flaky });
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(30_000);
    expect(cluster.logger.entries.map((e) => e.message)).toContain('tick failed');
    fail = false;
    await cluster.clock.advance(30_000);
    expect(ticks).toEqual([60_000]);
    controller.abort();
    await done;
  });

  it('re-checks a blocked node within five minutes, not a whole period', async () => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    const blocker = new FakeBlocker('pdb');
    blocker.verdict = { blocked: true, reason: 'PodDisruptionBudget default/web allows no disruption' };
    cluster.blockers.push(blocker);
    const { agent, ticks } = recordingAgent(cluster, [0.5]);
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(30_000 + 2 * 300_000);
    expect(ticks).toEqual([30_000, 330_000, 630_000]);
    controller.abort();
    await done;
  });

  it('ticks right after the maintenance window opens instead of up to a period later', async () => {
    const cluster = new FakeCluster(); // window opens 2026-01-06T02:00Z, 16 h after the start
    cluster.sentinel = true;
    cluster.windowOpen = false;
    const { agent, ticks } = recordingAgent(cluster, [0.5], { periodMs: 24 * PERIOD });
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    await cluster.clock.advance(60_000);
    expect(ticks).toEqual([30_000]);
    cluster.windowOpen = true;
    await cluster.clock.advance(16 * PERIOD);
    // 30 s + (16 h - 30 s) + 0.5 * 60 s of spread
    expect(ticks).toEqual([30_000, 16 * PERIOD + 30_000]);
    expect(cluster.reboots).toHaveLength(1);
    controller.abort();
    await done;
  });
});
