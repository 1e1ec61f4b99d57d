// The cluster-wide reboot lock: at most `concurrency` nodes hold a slot at once.

/** What we record in our slot's `metadata` (kured reads only `unschedulable`; Go ignores the rest). */
export interface LockMetadata {
  /** Was the node already unschedulable before we cordoned it? (kured's field) */
  unschedulable: boolean;
  /** The node's bootID when the lock was taken: a changed bootID proves the reboot. */
  bootID?: string;
  /** Reboots attempted while the bootID stayed unchanged. */
  attempts?: number;
  /**
   * RFC 3339 time the agent first saw the new boot (changed bootID): the start of the
   * --post-reboot-timeout, kept here so that an agent restart does not reset that clock.
   * Implementations must round-trip every field of LockMetadata (kured's Go parser ignores them).
   */
  verifyingSince?: string;
}

/** One slot of the lock as read from the annotation. */
export interface LockHolder {
  nodeID: string;
  /** When the slot was taken. */
  created: Date;
  /** Time to live in ms; 0 = never expires. */
  ttlMs: number;
  metadata: LockMetadata;
}

/** The answer of acquire(): ours, or who holds the slots and why we did not get one. */
export type AcquireResult =
  { acquired: true; holder: LockHolder } | { acquired: false; holders: string[]; reason: string };

export interface Lock {
  /** Takes a slot for this node. Idempotent: when we already hold one, returns it unchanged. */
  acquire(metadata: LockMetadata, signal?: AbortSignal): Promise<AcquireResult>;
  /** Our slot, when we hold one (expired slots are not held). */
  holding(signal?: AbortSignal): Promise<LockHolder | undefined>;
  /** Rewrites our slot's metadata; throws when we no longer hold a slot. */
  update(metadata: LockMetadata, signal?: AbortSignal): Promise<void>;
  /** Gives our slot back. Idempotent: not holding is fine. */
  release(signal?: AbortSignal): Promise<void>;
  /** Resolves when the lock annotation changes (watch), or after `timeoutMs`, whichever is first. */
  waitForChange(timeoutMs: number, signal?: AbortSignal): Promise<void>;
}
