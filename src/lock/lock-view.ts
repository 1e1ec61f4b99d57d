// The lock as this reader judges it now: which slots are live (not expired on our own monotonic
// clock since we first saw them unchanged), when the next one expires, and whether this node has room
// (room.ts, the acquisition's own rule). Shared by acquisitions and the wait for a slot, so both count
// the same slots.
import { monotonicMs } from '../clock/clock.js';
import { budgetsOf, groupSlotsUncounted } from '../capacity/budget.js';
import type { LockEntry } from './kured-lock-format.js';
import { isManualSlot } from '../capacity/room.js';
import type { LeaseObserver } from './lease.js';
import { MALFORMED_KEY, type DaemonSetLockOptions, type LockState } from './lock-state.js';
import { roomFor } from '../capacity/room.js';

export class LockView {
  constructor(
    private readonly o: Pick<DaemonSetLockOptions, 'nodeId' | 'concurrency' | 'ttlMs' | 'groups' | 'clock'>,
    private readonly leases: LeaseObserver,
  ) {}

  nowMs(): number {
    return monotonicMs(this.o.clock);
  }

  /** --concurrency for the fleet that `state` shows (a percentage of the nodes its DaemonSet runs on). */
  slots(state: Pick<LockState, 'matching'>): number {
    return budgetsOf(this.o, state.matching).slots;
  }

  /** The slots that count: not expired for this reader (a manual lock never expires). */
  live(entries: readonly LockEntry[]): LockEntry[] {
    const now = this.nowMs();
    return entries.filter((e) => isManualSlot(e) || !this.leases.expired(e.nodeID, this.ttlOf(e), now));
  }

  /** An unparsable annotation that has gone unchanged for --lock-ttl. */
  malformedExpired(state: LockState): boolean {
    return state.malformed !== undefined && this.leases.expired(MALFORMED_KEY, this.o.ttlMs, this.nowMs());
  }

  /**
   * Could this node, of `group` (undefined: no group limit), take a slot in this state, by the rule
   * of the acquisition (roomFor) over the entries alone: the nodes in a cycle without an entry are
   * not looked up here, nor the holders' Nodes (a deleted holder's slot is reclaimed only by an
   * acquisition, or once it expires), nor a group's size: a group budget given as a percentage is
   * left to the acquisition (the waiter wakes, and asks).
   */
  hasRoom(state: LockState, group: string | undefined): boolean {
    if (state.malformed !== undefined) return this.malformedExpired(state);
    const { nodeId } = this.o;
    const groupSlots = groupSlotsUncounted(this.o);
    const groups =
      this.o.groups === undefined || groupSlots === undefined
        ? undefined
        : { label: this.o.groups.label, concurrency: groupSlots };
    const live = this.live(state.entries);
    const concurrency = this.slots(state);
    return roomFor({ live, nodeId, declared: state.declared, group, concurrency, groups }).room;
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
