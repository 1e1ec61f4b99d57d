// The cluster-wide reboot lock: at most `concurrency` nodes hold a slot at once.
import type { FleetGate } from '../capacity/gates.js';

/** What we record in our slot's `metadata` (kured reads only `unschedulable`; Go ignores the rest). */
export interface LockMetadata {
  /** Was the node already unschedulable before we cordoned it? (kured's field) */
  unschedulable: boolean;
  /** The node's bootID when the slot was taken (for people reading the lock; the cycle record proves the reboot). */
  bootID?: string;
  /** The node's --group-label value ('' = the node has none); set when --group-concurrency is. */
  group?: string;
  /** The node is a control-plane node (recorded only then): one at a time, after the workers. */
  controlPlane?: boolean;
  /** The node's wave (src/node/wave.ts), when the wave's gates are configured: they judge that wave. */
  wave?: string;
}

/** One slot of the lock as read from the annotation. */
export interface LockHolder {
  nodeID: string;
  /** When the slot was taken or last renewed (the holder's clock). */
  created: Date;
  /** Time to live in ms; 0 = never expires. */
  ttlMs: number;
  metadata: LockMetadata;
}

/**
 * How a refused node waits before it asks again (waitForChange): for a slot the lock shows free
 * ('slot', the default), for its turn from the coordinator ('turn'), a short back-off after losing
 * every write to others ('contended'), or a retry after an error reading the fleet ('retry').
 * `recheck`: the refusal came from nodes beyond the lock (unavailable, unhealthy, quarantined,
 * workers ahead), which come back or finish without a write to it: ask again within FLEET_RECHECK_MS.
 */
export interface LockWait {
  for: 'slot' | 'turn' | 'contended' | 'retry';
  recheck?: true;
  /**
   * With `recheck`: within WAVE_RECHECK_MS, not FLEET_RECHECK_MS (a wave's next step opens when a
   * node says it soaked, which writes nothing to the lock).
   */
  soon?: true;
  /**
   * The unavailable nodes that fill the slots (the refusal's names): the wait also ends when one of
   * them is back in service (readiness-wait.ts), which the lock would not show.
   */
  readiness?: readonly string[];
}

/**
 * The answer of acquire(): ours, or who holds the slots and why we did not get one (`gate`: the
 * fleet gate that held it back, when one did; `wait`: how to wait for the next try, default a slot).
 */
export type AcquireResult = { acquired: true; holder: LockHolder } | Refusal;

/** No slot: who holds them, why, the gate that held the node back, and how to wait. */
export interface Refusal {
  acquired: false;
  holders: string[];
  reason: string;
  gate?: FleetGate;
  wait?: LockWait;
}

/**
 * What this node's own record proves (DESIGN §12): its agent began a reboot cycle here
 * (src/node/cycle.ts), which only that agent may write. A slot in the lock alone proves nothing: anyone
 * who can write the lock annotation (a stolen agent token, a hand edit) can name any node in it.
 */
export interface SlotProof {
  /** The node carries the cycle record and label its own agent wrote after taking a slot. */
  inCycle: boolean;
}

export interface Lock {
  /**
   * Takes a slot for this node. When the lock names this node already, that entry counts as ours
   * unchanged only with `proof.inCycle`; otherwise it is judged as a new acquisition would be (the
   * other slots and the nodes in a cycle counted against --concurrency, maxOwners and the groups):
   * renewed when there is room (an acquisition cut short before its cycle began, or kured's slot for
   * this node during a migration), removed when there is none (forged, or a race lost).
   */
  acquire(metadata: LockMetadata, signal?: AbortSignal, proof?: SlotProof): Promise<AcquireResult>;
  /** What acquire() would answer now for a node of this group and role, writing nothing (`kured-ts check`). */
  wouldAcquire(
    signal?: AbortSignal,
    as?: Pick<LockMetadata, 'group' | 'controlPlane' | 'wave'>,
  ): Promise<AcquireResult>;
  /** Our slot, when we hold one (expired slots are not held). */
  holding(signal?: AbortSignal): Promise<LockHolder | undefined>;
  /**
   * Renews our slot's lease (a sign of life: its `created` becomes now). Resolves to false, writing
   * nothing, when we hold no slot.
   */
  renew(signal?: AbortSignal): Promise<boolean>;
  /** Gives our slot back. Idempotent: not holding is fine. */
  release(signal?: AbortSignal): Promise<void>;
  /**
   * Resolves when a slot may have become free for us (or our own slot changed), or after
   * `timeoutMs`, whichever is first; `how` as the last refusal said (default: for a slot).
   */
  waitForChange(timeoutMs: number, signal?: AbortSignal, how?: LockWait): Promise<void>;
}

/**
 * May this node take a free slot? The coordinated queue's word (src/queue/turn-gate.ts): its turn,
 * first come (no live coordinator), or wait for its turn.
 */
export type TurnVerdict =
  | { kind: 'turn'; by: string }
  | { kind: 'first-come'; reason: string }
  /** Not its turn; `gate`: the one the coordinator says holds every waiter back now, if it says one. */
  | { kind: 'wait'; reason: string; gate?: FleetGate };

/** What the lock asks of the coordinated queue (src/queue/turn-gate.ts implements it). */
export interface TurnGate {
  /** Asks the coordinator's Lease and this node's turn annotation (two small reads). */
  verdict(signal?: AbortSignal): Promise<TurnVerdict>;
  /**
   * After a verdict with a live coordinator ('turn' or 'wait'): resolves true when this node's turn
   * annotation changes from what that verdict saw (or its Node goes), or after `timeoutMs`. Once per
   * verdict: resolves false at once when there is no such verdict (no coordinator, or already waited
   * on): the caller then waits on the lock itself.
   */
  waitForTurn(timeoutMs: number, signal: AbortSignal): Promise<boolean>;
}
