// Bounded, jittered retry: the only way we repeat a failed API write.
import type { Clock } from '../clock/clock.js';

/** How to retry; every field but `clock` has a default. */
export interface RetryOptions {
  /** Total attempts including the first. Default 8. */
  attempts?: number;
  /** Backoff before the second attempt; doubles each time. Default 50 ms. */
  baseMs?: number;
  /** Cap of one backoff. Default 2000 ms. */
  maxMs?: number;
  /** Which errors are worth another attempt; others are thrown at once. Default: none. */
  retryOn?: (err: unknown) => boolean;
  clock: Clock;
  /** Source of jitter in [0, 1). Default Math.random. */
  random?: () => number;
  signal?: AbortSignal;
  /** The least wait after this error (e.g. the server's Retry-After); the backoff when longer. */
  minDelayMs?: (err: unknown) => number;
  /** Called before each backoff (for logs and tests). */
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
}

/**
 * The backoff before attempt `attempt + 1`: "full jitter" in [base*2^(attempt-1)/2, base*2^(attempt-1)],
 * capped at maxMs, so contenders that collided spread out instead of colliding again.
 */
export function backoffMs(attempt: number, baseMs: number, maxMs: number, random: () => number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}

function withDefaults(
  options: RetryOptions,
): Required<Pick<RetryOptions, 'attempts' | 'baseMs' | 'maxMs' | 'retryOn' | 'random'>> {
  return {
    attempts: Math.max(1, options.attempts ?? 8),
    baseMs: options.baseMs ?? 50,
    maxMs: options.maxMs ?? 2000,
    retryOn: options.retryOn ?? (() => false),
    random: options.random ?? Math.random,
  };
}

/** Runs `fn` (given the attempt number, from 1) until it succeeds, fails for good, or attempts run out. */
export async function retry<T>(fn: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const { attempts, baseMs, maxMs, retryOn, random } = withDefaults(options);
  for (let attempt = 1; ; attempt++) {
    options.signal?.throwIfAborted();
    try {
      return await fn(attempt);
    } catch (err) {
      if (attempt >= attempts || !retryOn(err)) throw err;
      const delay = Math.max(backoffMs(attempt, baseMs, maxMs, random), options.minDelayMs?.(err) ?? 0);
      options.onRetry?.(err, attempt, delay);
      // a deadline that ends the backoff: the last answer tells the caller more than "aborted"
      await options.clock.sleep(delay, options.signal).catch(() => {
        throw err;
      });
    }
  }
}
