// When a holder's slot expires, judged without trusting anyone's wall clock.
//
// kured compares a slot's `created` (the holder's wall clock) with its own wall clock: a node whose
// clock runs 31 minutes fast writes slots that a 30-minute TTL expires the moment they are taken,
// and a holder's clock running slow keeps its slot longer. Like client-go's leader election, a reader
// here counts the TTL on its own monotonic clock from the moment it last saw a sign of life of the
// holder: the slot (or the node's cycle record, for a holder whose slot was lost) appearing or
// changing. The holder renews its slot while its cycle goes on (new `created`, so kured's readers
// see a fresh slot too), so --lock-ttl means "no sign of life for that long". A reader that has just
// started knows of no earlier sign of life: it waits a whole TTL from its first look (never early).

/** What a reader last saw of one holder. */
interface Sighting {
  /** The holder's slot (or cycle record) as seen; a different value is a sign of life. */
  value: string;
  /** The reader's monotonic ms when `value` was first seen. */
  since: number;
}

/** One reader's sightings of the holders it has seen. */
export class LeaseObserver {
  private readonly seen = new Map<string, Sighting>();

  /** Records what `holder` shows now (at monotonic `nowMs`); returns when its last sign of life was. */
  observe(holder: string, value: string, nowMs: number): number {
    const last = this.seen.get(holder);
    if (last?.value === value) return last.since;
    this.seen.set(holder, { value, since: nowMs });
    return nowMs;
  }

  /** When (monotonic ms) this reader first saw `holder` as it is now; undefined: never seen. */
  since(holder: string): number | undefined {
    return this.seen.get(holder)?.since;
  }

  /** When (monotonic ms) `holder`'s lease ends for this reader; undefined with no TTL or never seen. */
  expiresAt(holder: string, ttlMs: number): number | undefined {
    const last = this.seen.get(holder);
    return last === undefined || ttlMs <= 0 ? undefined : last.since + ttlMs;
  }

  /** Has `holder` shown no sign of life for `ttlMs`? Never with ttlMs 0 or a holder never seen. */
  expired(holder: string, ttlMs: number, nowMs: number): boolean {
    const end = this.expiresAt(holder, ttlMs);
    return end !== undefined && nowMs >= end;
  }
}
