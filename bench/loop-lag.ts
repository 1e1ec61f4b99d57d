// How late the benchmark's own event loop ran, window by window (issue 59 item 2): the process that
// drives every agent is the bottleneck when its timers fire seconds late, even while its CPU share
// looks moderate (one long synchronous stretch: a big answer parsed, thousands of agents started).
// A timer every 100 ms notes how much later than due it fired.

import { quantile } from './quantile.js';

const EVERY_MS = 100;

export class LoopLag {
  private readonly samples: { atMs: number; lateMs: number }[] = [];
  private timer: NodeJS.Timeout | undefined;

  start(): void {
    let due = Date.now() + EVERY_MS;
    this.timer = setInterval(() => {
      const now = Date.now();
      this.samples.push({ atMs: now, lateMs: Math.max(0, now - due) });
      due = now + EVERY_MS;
    }, EVERY_MS);
    this.timer.unref();
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
