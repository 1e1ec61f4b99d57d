// A one-slot change signal for the lock's waiter (daemonset-lock.ts, waitForChange).
import type { Clock } from '../clock/clock.js';

/** Wakes the one pending next() at each change of the watched lock annotation. */
export class ChangeFeed {
  private waiting: (() => void) | undefined;

  notify(): void {
    const wake = this.waiting;
    this.waiting = undefined;
    wake?.();
  }

  /** Resolves at the next notify() or when `signal` aborts. */
  next(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        signal.removeEventListener('abort', done);
        if (this.waiting === done) this.waiting = undefined;
        resolve();
      };
      this.waiting = done;
      if (signal.aborted) done();
      else signal.addEventListener('abort', done, { once: true });
    });
  }

  /** Resolves at the next notify(), after `ms` (undefined: no bound), or when `signal` aborts. */
  async nextWithin(ms: number | undefined, clock: Clock, signal: AbortSignal): Promise<void> {
    const stop = new AbortController();
    const both = AbortSignal.any([signal, stop.signal]);
    const waits = [this.next(both)];
    if (ms !== undefined) waits.push(clock.sleep(ms, both).catch(() => undefined));
    try {
      await Promise.race(waits);
    } finally {
      stop.abort();
    }
  }
}
