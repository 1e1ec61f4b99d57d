import { describe, expect, it } from '@jest/globals';
import { Agent } from '../../src/agent/agent.js';
import { HeartbeatClock } from '../../src/agent/heartbeat-clock.js';
import type { Clock } from '../../src/clock/clock.js';
import { heartbeatHealth } from '../../src/server/http-server.js';
import { AGENT_DEFAULTS, FakeCluster } from '../fakes/fake-cluster.js';
import { FakeClock } from '../fakes/fake-clock.js';

const PERIOD = 3_600_000;

describe('HeartbeatClock', () => {
  it('beats when a sleep starts, every slice while it lasts, and when it ends, on time', async () => {
    const inner = new FakeClock();
    const t0 = inner.now().getTime();
    const beats: number[] = [];
    const clock = new HeartbeatClock(inner, (at) => beats.push(at.getTime() - t0), 1000);
    let woke: number | undefined;
    void clock.sleep(3500).then(() => (woke = inner.now().getTime() - t0));
    await inner.advanceUntilIdle();
    expect(woke).toBe(3500);
    expect(beats).toEqual([0, 1000, 2000, 3000, 3500]);
  });

  it('stops at once when its signal aborts, without beating again', async () => {
    const inner = new FakeClock();
    const beats: Date[] = [];
    const clock = new HeartbeatClock(inner, (at) => beats.push(at), 1000);
    const controller = new AbortController();
    const sleeping = clock.sleep(10_000, controller.signal);
    await inner.advance(2500);
    controller.abort(new Error('SIGTERM'));
    await expect(sleeping).rejects.toThrow('SIGTERM');
    expect(beats).toHaveLength(3);
    expect(inner.pending).toBe(0);
  });

  it('refuses an interval that would never beat', () => {
    expect(() => new HeartbeatClock(new FakeClock(), () => undefined, 0)).toThrow('must be positive');
  });
});

describe('agent liveness during a long step', () => {
  // The agent's own waits inside one tick (here a 3-period --reboot-delay) must keep /healthz
  // healthy; the plain clock shows why the heartbeat at the start of a tick alone is not enough.
  it.each([
    ['a heartbeat clock stays healthy', true, true],
    ['the plain clock looks stuck', false, false],
  ])('through a --reboot-delay of 3 periods, %s', async (_name, beating, healthyThroughout) => {
    const cluster = new FakeCluster();
    cluster.sentinel = true;
    const beat = (at: Date): void => {
      cluster.metrics.heartbeat(at);
    };
    const clock: Clock = beating ? new HeartbeatClock(cluster.clock, beat, PERIOD / 2) : cluster.clock;
    const agent = new Agent(
      { ...AGENT_DEFAULTS, periodMs: PERIOD, rebootDelayMs: 3 * PERIOD },
      { ...cluster.deps(), clock, random: () => 0 },
    );
    const health = heartbeatHealth({
      clock: cluster.clock,
      periodMs: PERIOD,
      lastHeartbeat: () => cluster.metrics.lastHeartbeat,
    });
    const controller = new AbortController();
    const running = agent.run(controller.signal);
    const probes: boolean[] = [];
    for (let t = 0; t < 4 * PERIOD && cluster.reboots.length === 0; t += PERIOD / 4) {
      await cluster.clock.advance(PERIOD / 4);
      probes.push(health().ok);
    }
    controller.abort(new Error('SIGTERM'));
    await running;
    expect(cluster.reboots).toHaveLength(1);
    expect(probes.length).toBeGreaterThanOrEqual(12);
    expect(probes.every((ok) => ok)).toBe(healthyThroughout);
  });
});
