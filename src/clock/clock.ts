// A clock: the one source of time for everything that is not a pure function of a Date.

/** Time as an input: tests and the simulator inject a virtual clock, production the system one. */
export interface Clock {
  /** The current time. */
  now(): Date;
  /**
   * Milliseconds on a clock that only moves forward at a steady rate (NTP steps and a clock set by
   * hand do not move it): for measuring how long something lasted in this process. Default: now().
   */
  monotonicMs?(): number;
  /** Resolves after `ms` of this clock's time; rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Wall-clock time and real timers. */
export class SystemClock implements Clock {
  now(): Date {
    return new Date();
  }

  monotonicMs(): number {
    return performance.now();
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortReason(signal));
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(abortReason(signal));
      };
      const timer = setTimeout(
        () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        Math.max(0, ms),
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** The error a sleep rejects with when its signal aborts. */
export function abortReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new Error('aborted', { cause: reason });
}

/** `clock`'s monotonic milliseconds (its wall time when it has no monotonic clock). */
export function monotonicMs(clock: Clock): number {
  return clock.monotonicMs?.() ?? clock.now().getTime();
}
