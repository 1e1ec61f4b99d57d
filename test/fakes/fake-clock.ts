// A virtual clock for tests: time moves only when the test (or advanceUntilIdle) moves it.
import { abortReason, SystemClock, type Clock } from '../../src/clock/clock.js';

interface Sleeper {
  at: number;
  seq: number;
  resolve: () => void;
}

export class FakeClock implements Clock {
  private t: number;
  private seq = 0;
  private sleepers: Sleeper[] = [];

  constructor(start: Date | string = '2026-01-05T10:00:00Z') {
    this.t = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.t);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortReason(signal));
        return;
      }
      const sleeper: Sleeper = { at: this.t + Math.max(0, ms), seq: this.seq++, resolve };
      this.sleepers.push(sleeper);
      signal?.addEventListener(
        'abort',
        () => {
          this.sleepers = this.sleepers.filter((s) => s !== sleeper);
          reject(abortReason(signal));
        },
        { once: true },
      );
    });
  }

  /** Number of pending sleeps. */
  get pending(): number {
    return this.sleepers.length;
  }

  /** Moves time forward by `ms`, waking sleepers in order and letting their continuations run. */
  async advance(ms: number): Promise<void> {
    const target = this.t + ms;
    for (;;) {
      await flushMicrotasks();
      const next = this.earliest();
      if (!next || next.at > target) break;
      this.wake(next);
    }
    this.t = target;
    await flushMicrotasks();
  }

  /** Jumps to each next sleeper until none is left or `limitMs` of virtual time has passed. */
  async advanceUntilIdle(limitMs = 7 * 24 * 3600_000): Promise<void> {
    const stop = this.t + limitMs;
    for (;;) {
      await flushMicrotasks();
      const next = this.earliest();
      if (!next || next.at > stop) return;
      this.wake(next);
    }
  }

  private earliest(): Sleeper | undefined {
    let best: Sleeper | undefined;
    for (const s of this.sleepers)
      if (!best || s.at < best.at || (s.at === best.at && s.seq < best.seq)) best = s;
    return best;
  }

  private wake(s: Sleeper): void {
    this.sleepers = this.sleepers.filter((x) => x !== s);
    this.t = Math.max(this.t, s.at);
    s.resolve();
  }
}

/** Lets pending promise continuations (several hops deep) run. */
export async function flushMicrotasks(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
  await new Promise<void>((r) => setImmediate(r));
}

/** A node whose wall clock is off by `offsetMs` (its monotonic time runs as the base clock's). */
export function skewed(base: FakeClock, offsetMs: number): Clock {
  return {
    now: () => new Date(base.now().getTime() + offsetMs),
    monotonicMs: () => base.now().getTime(),
    sleep: (ms, signal) => base.sleep(ms, signal),
  };
}

/**
 * A clock that runs in real time (its sleeps are real timers) but starts at `start`: for tests that
 * drive real agents or commands and must not depend on today's date (the day of the week a window
 * names, say).
 */
export function realTimeFrom(start: Date | string): Clock {
  const base = new SystemClock();
  const offsetMs = new Date(start).getTime() - base.now().getTime();
  return {
    now: () => new Date(base.now().getTime() + offsetMs),
    monotonicMs: () => base.monotonicMs(),
    sleep: (ms, signal) => base.sleep(ms, signal),
  };
}

/**
 * A clock whose every sleep passes at once, moving its time on by the sleep (after a turn of the event
 * loop, so that I/O in flight goes on): a back-off schedule runs the same on any machine, fast or
 * loaded, under any Node version. For tests that count what a loop does within a time limit.
 */
export function instantClock(start: Date | string = '2026-01-05T10:00:00Z'): Clock {
  let t = new Date(start).getTime();
  return {
    now: () => new Date(t),
    monotonicMs: () => t,
    sleep: (ms, signal) => {
      if (signal?.aborted) return Promise.reject(abortReason(signal));
      t += Math.max(0, ms);
      return new Promise<void>((r) => setImmediate(r));
    },
  };
}

/**
 * Real timers, but a wall clock and monotonic time the test moves forward by hand (`offsetMs`): for
 * real agents on the fake API server whose long waits (--settle-time, --quarantine-retry, a wave's
 * soak) the test skips over without waiting them out.
 */
export class SteeredClock extends SystemClock {
  offsetMs = 0;

  override now(): Date {
    return new Date(super.now().getTime() + this.offsetMs);
  }

  override monotonicMs(): number {
    return super.monotonicMs() + this.offsetMs;
  }
}
