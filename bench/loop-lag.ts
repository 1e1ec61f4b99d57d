// How late the benchmark's own event loop ran, window by window (issue 59 item 2): the process that
// drives every agent is the bottleneck when its timers fire seconds late, even while its CPU share
// looks moderate (one long synchronous stretch: a big answer parsed, thousands of agents started).
// A timer every 100 ms notes how much later than due it fired.

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
    const late = this.samples
      .filter((s) => s.atMs > fromMs && s.atMs <= toMs)
      .map((s) => s.lateMs)
      .sort((a, b) => a - b);
    if (late.length === 0) return { p99: 0, max: 0 };
    return {
      p99: late[Math.min(late.length - 1, Math.floor(0.99 * late.length))] ?? 0,
      max: late.at(-1) ?? 0,
    };
  }
}
