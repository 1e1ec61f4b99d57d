// The minute sentinel refresh beside the agent loop (src/agent/agent.ts refreshRebootRequired).
import { describe, expect, it } from '@jest/globals';
import { refreshRebootRequired } from '../../src/agent/agent.js';
import { MemoryLogger } from '../../src/log/logger.js';
import { PrometheusMetrics } from '../../src/metrics/prometheus-metrics.js';
import type { Sentinel, SentinelVerdict } from '../../src/sentinel/sentinel.js';
import { FakeClock, flushMicrotasks } from '../fakes/fake-clock.js';
import { samples } from '../fakes/metric-samples.js';

function fresh(): PrometheusMetrics {
  return new PrometheusMetrics('n1', { processMetrics: false });
}

class ScriptedSentinel implements Sentinel {
  calls = 0;
  constructor(private readonly verdicts: SentinelVerdict[]) {}
  rebootRequired(): Promise<SentinelVerdict> {
    const v = this.verdicts[Math.min(this.calls++, this.verdicts.length - 1)];
    return v ? Promise.resolve(v) : Promise.reject(new Error('no verdict'));
  }
}

describe('refreshRebootRequired', () => {
  it('refreshes kured_reboot_required every minute and counts sentinel errors', async () => {
    const clock = new FakeClock();
    const metrics = fresh();
    const sentinel = new ScriptedSentinel([
      { required: false },
      { required: true },
      { required: false, error: 'exit code 2' },
      { required: false },
    ]);
    const controller = new AbortController();
    const done = refreshRebootRequired({
      sentinel,
      metrics,
      clock,
      logger: new MemoryLogger(),
      signal: controller.signal,
    });
    await flushMicrotasks();
    expect((await samples(metrics)).get('kured_reboot_required{node="n1"}')).toBe(0);
    await clock.advance(60_000);
    expect((await samples(metrics)).get('kured_reboot_required{node="n1"}')).toBe(1);
    await clock.advance(60_000);
    const s = await samples(metrics);
    expect(s.get('kured_reboot_required{node="n1"}')).toBe(1);
    expect(s.get('kured_ts_sentinel_errors_total')).toBe(1);
    await clock.advance(59_000);
    expect(sentinel.calls).toBe(3);
    await clock.advance(1_000);
    expect((await samples(metrics)).get('kured_reboot_required{node="n1"}')).toBe(0);
    controller.abort();
    await done;
    expect(clock.pending).toBe(0);
  });

  it('calls onRequired on every check that says a reboot is required, and only then', async () => {
    const clock = new FakeClock();
    const sentinel = new ScriptedSentinel([
      { required: false },
      { required: true },
      { required: false, error: 'exit code 2' },
      { required: true },
    ]);
    const controller = new AbortController();
    const woken: number[] = [];
    const done = refreshRebootRequired({
      sentinel,
      metrics: fresh(),
      clock,
      logger: new MemoryLogger(),
      signal: controller.signal,
      onRequired: () => woken.push(clock.now().getTime()),
    });
    const start = clock.now().getTime();
    await clock.advance(3 * 60_000);
    controller.abort();
    await done;
    expect(woken.map((t) => t - start)).toEqual([60_000, 180_000]);
  });

  it('survives a sentinel that throws and stops when aborted', async () => {
    const clock = new FakeClock();
    const sentinel = new ScriptedSentinel([]);
    const controller = new AbortController();
    const logger = new MemoryLogger();
    const done = refreshRebootRequired({
      sentinel,
      metrics: fresh(),
      clock,
      logger,
      signal: controller.signal,
    });
    await clock.advance(120_000);
    expect(sentinel.calls).toBe(3);
    controller.abort();
    await expect(done).resolves.toBeUndefined();
  });
});
