// The lock as this reader judges it now: which slots are live (not expired on our own monotonic
// clock since we first saw them unchanged), when the next one expires, and whether a node of a group
// has room. Shared by acquisitions and the wait for a slot, so both count the same slots.
import { monotonicMs } from '../clock/clock.js';
import { isManualEntry, type LockEntry } from './kured-lock-format.js';
import type { LeaseObserver } from './lease.js';
import { MALFORMED_KEY, type DaemonSetLockOptions, type LockState } from './lock-state.js';

export class LockView {
  constructor(
    private readonly o: Pick<DaemonSetLockOptions, 'nodeId' | 'concurrency' | 'ttlMs' | 'groups' | 'clock'>,
    private readonly leases: LeaseObserver,
  ) {}

  nowMs(): number {
    return monotonicMs(this.o.clock);
  }

  /** The slots that count: not expired for this reader (a manual lock never expires). */
  live(entries: readonly LockEntry[]): LockEntry[] {
    const now = this.nowMs();
    return entries.filter((e) => isManualEntry(e) || !this.leases.expired(e.nodeID, this.ttlOf(e), now));
  }

  /** An unparsable annotation that has gone unchanged for --lock-ttl. */
  malformedExpired(state: LockState): boolean {
    return state.malformed !== undefined && this.leases.expired(MALFORMED_KEY, this.o.ttlMs, this.nowMs());
  }

  /** The slots that count against `group`: its own, and those that record no group. */
  inGroup(live: readonly LockEntry[], group: string): LockEntry[] {
    return live.filter((e) => {
      const recorded = e.metadata.group;
      return typeof recorded !== 'string' || recorded === group;
    });
  }

  /** Could a node of `group` take a slot in this state (undefined group: no group limit)? */
  hasRoom(state: LockState, group: string | undefined): boolean {
    if (state.malformed !== undefined) return this.malformedExpired(state);
    const live = this.live(state.entries);
    if (live.some(isManualEntry) || live.length >= this.o.concurrency) return false;
    const groups = this.o.groups;
    return (
      groups === undefined || group === undefined || this.inGroup(live, group).length < groups.concurrency
    );
  }

  /** Our slot as stored, for comparison; undefined when we have none. */
  ownSlot(state: LockState): string | undefined {
    const ours = state.entries.find((e) => e.nodeID === this.o.nodeId);
    return ours === undefined ? undefined : JSON.stringify(ours);
  }

  /** When (monotonic ms) the next live slot or the unparsable annotation expires; undefined: never. */
  nextExpiry(state: LockState): number | undefined {
    if (state.malformed !== undefined) return this.leases.expiresAt(MALFORMED_KEY, this.o.ttlMs);
    const times = this.live(state.entries).flatMap((e) => {
      const at = this.leases.expiresAt(e.nodeID, this.ttlOf(e));
      return at === undefined ? [] : [at];
    });
    return times.length === 0 ? undefined : Math.max(this.nowMs(), Math.min(...times));
  }

  /** A slot's own TTL, else --lock-ttl. */
  private ttlOf(entry: LockEntry): number {
    return entry.ttlNs > 0 ? entry.ttlNs / 1_000_000 : this.o.ttlMs;
  }
}
