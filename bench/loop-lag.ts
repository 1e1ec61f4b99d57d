// How late the benchmark's own event loop ran, window by window (issue 59 item 2): the process that
// drives every agent is the bottleneck when its timers fire seconds late, even while its CPU share
// looks moderate (one long synchronous stretch: a big answer parsed, thousands of agents started).
// A timer every 100 ms notes how much later than due it fired. The agent workers run one each and
// send their samples here (`add`), so a window's figure is the latest loop of any thread.

import { quantile } from './quantile.js';

const EVERY_MS = 100;

export interface LagSample {
  atMs: number;
  lateMs: number;
}

export class LoopLag {
  private readonly samples: LagSample[] = [];
  private timer: NodeJS.Timeout | undefined;

  /** Samples this thread's loop; `onSample` (a worker's report) sees each as it is taken. */
  start(onSample?: (s: LagSample) => void): void {
    let due = Date.now() + EVERY_MS;
    this.timer = setInterval(() => {
      const now = Date.now();
      const sample = { atMs: now, lateMs: Math.max(0, now - due) };
      this.samples.push(sample);
      onSample?.(sample);
      due = now + EVERY_MS;
    }, EVERY_MS);
    this.timer.unref();
  }

  /** Another thread's samples (an agent worker's). */
  add(samples: readonly LagSample[]): void {
    this.samples.push(...samples);
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
  }

  /** The p99 and the worst lateness (ms) of the ticks in (fromMs, toMs]. */
  within(fromMs: number, toMs: number): { p99: number; max: number } {
    const late = this.samples.filter((s) => s.atMs > fromMs && s.atMs <= toMs).map((s) => s.lateMs);
    return { p99: quantile(late, 0.99, 0), max: late.reduce((m, x) => Math.max(m, x), 0) };
  }
}
