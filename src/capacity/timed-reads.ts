// Reads reused for a while by key: each census (fleet-census.ts, wave-census.ts) answers the
// questions of one pass from one read, and an acquisition forgets what is older than it may judge from.
import { monotonicMs, type Clock } from '../clock/clock.js';

export class TimedReads {
  private readonly cache = new Map<string, { at: number; value: unknown }>();

  constructor(
    private readonly clock: Clock,
    /** How long a read is reused. */
    private readonly reuseMs: number,
  ) {}

  /** The read of `key` made within reuseMs, else `read()`'s answer, kept from now. */
  async get<T>(key: string, read: () => Promise<T>): Promise<T> {
    const now = monotonicMs(this.clock);
    const hit = this.cache.get(key);
    if (hit !== undefined && now - hit.at < this.reuseMs) return hit.value as T;
    const value = await read();
    this.cache.set(key, { at: now, value });
    return value;
  }

  /** Forgets the reads older than `olderThanMs` (every read by default). */
  forget(olderThanMs = 0): void {
    const now = monotonicMs(this.clock);
    for (const [key, hit] of this.cache)
      if (olderThanMs <= 0 || now - hit.at >= olderThanMs) this.cache.delete(key);
  }
}
