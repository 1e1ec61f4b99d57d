// Whether this agent holds a proven slot: the one answer to "do I hold the lock?" for the decision,
// which takes and gives back slots, and for the lease keeper, which renews them.
//
// A slot counts as held only once proven (DESIGN §12): acquire() gave it, or the lock names this node
// and the node's own cycle record proves the entry (holding() with proof). An entry naming this node
// that nothing proves is never renewed: a forged or leftover entry with a TTL runs out.
import type { AcquireResult, Lock, LockHolder, LockMetadata, SlotProof } from './lock.js';

export class HeldSlot {
  private proven = false;

  constructor(private readonly lock: Lock) {}

  /** Do we hold a proven slot, as our last answer from the lock left it? */
  get held(): boolean {
    return this.proven;
  }

  /** acquire(), remembering the answer. */
  async acquire(metadata: LockMetadata, signal?: AbortSignal, proof?: SlotProof): Promise<AcquireResult> {
    const result = await this.lock.acquire(metadata, signal, proof);
    this.proven = result.acquired;
    return result;
  }

  /**
   * The lock's entry for this node, if any. It counts as our slot only with `proof.inCycle`; without
   * proof, an entry leaves our belief as it was, and no entry means no slot.
   */
  async holding(signal?: AbortSignal, proof?: SlotProof): Promise<LockHolder | undefined> {
    const holder = await this.lock.holding(signal);
    if (holder === undefined) this.proven = false;
    else if (proof !== undefined) this.proven = proof.inCycle;
    return holder;
  }

  /** Renews the lease of a held slot (nothing otherwise); the slot is no longer held when it is gone. */
  async renew(signal?: AbortSignal): Promise<void> {
    if (!this.proven) return;
    this.proven = await this.lock.renew(signal);
  }

  /** Gives the slot back (idempotent). */
  async release(signal?: AbortSignal): Promise<void> {
    await this.lock.release(signal);
    this.proven = false;
  }
}
