// What DaemonSetLock is configured with and what one read of its DaemonSet tells.
import type { Clock } from '../clock/clock.js';
import type { Kube } from '../kube/kube.js';
import type { Logger } from '../log/logger.js';
import type { CapacitySettings } from '../capacity/settings.js';
import type { FleetCensus } from '../capacity/fleet-census.js';
import type { LockEntry, LockValue } from './kured-lock-format.js';
import type { TurnGate } from './lock.js';
import type { WaveResume } from '../node/wave.js';
import type { WaveGateOptions } from '../capacity/wave-census.js';

/** Where the lock lives and how it behaves; how many may be out and who (CapacitySettings). */
export interface DaemonSetLockOptions extends Omit<CapacitySettings, 'wave'> {
  kube: Kube;
  /** This node (--node-id). */
  nodeId: string;
  /** --ds-namespace. */
  namespace: string;
  /** --ds-name. */
  name: string;
  /** --lock-annotation. */
  annotation: string;
  /** --lock-ttl in ms; 0 = slots never expire. */
  ttlMs: number;
  clock: Clock;
  log: Logger;
  /** Jitter source for retries and the herd spread. Default Math.random. */
  random?: () => number;
  /**
   * The staleness bound of the wait's watch of the lock (WATCH_SILENCE_MS): a watch silent this long
   * is given up and the lock read again. Default none (the simulator's watches send no bookmarks).
   */
  silenceMs?: number;
  /** Write attempts per operation. Default 8. */
  attempts?: number;
  /**
   * What the lock needs of the fleet beyond its own entries (fleet-census.ts): the unavailable nodes
   * (with `countUnavailable`), the size of this node's group (--group-concurrency N%), the caps
   * (`maxUnhealthy`, `maxQuarantined`), the workers ahead of the control plane (`controlPlaneLast`).
   * Required when any of these is set: an acquisition that needs it fails without it.
   */
  census?: FleetCensus;
  /**
   * The coordinated queue (--lock-queue fair): a new acquisition takes a free slot only on its turn
   * from the coordinator, and a waiter follows its own Node for that turn instead of the lock. With
   * no live coordinator, first come. Default none: whoever asks first (kured).
   */
  turns?: TurnGate;
  /**
   * The wave's gates (wave-gate.ts), judged for the wave the acquisition names (LockMetadata.wave)
   * from the nodes' own labels (wave-census.ts). Default none.
   */
  wave?: WaveGateOptions;
}

/** The holder name reported for an annotation we cannot parse. */
export const UNPARSABLE_HOLDER = '<unparsable lock>';

/**
 * Longest random pause of a waiter woken by a freed slot before it looks at the watched lock again.
 * Spread over it, the first waiters take the slot and the rest see it retaken without a request.
 */
export const HERD_SPREAD_MS = 1000;

/**
 * How long the coordinator lets a node it named take its turn before passing it over: the node may
 * be slow (its blockers ask Prometheus, up to 10 s) or gone (its agent crashed with its status
 * still saying waiting-for-lock): a dead head of the queue costs each hand-off this much, no more.
 */
export const HANDOFF_GRACE_MS = 30_000;

/**
 * After a refusal that the fleet beyond the lock decided (unavailable nodes taking the slots, workers
 * ahead of the control plane), the next try comes within this (jittered ±50%) even if the lock does
 * not change: those nodes come back, or finish, without writing to the lock. A live coordinator's
 * turn wakes the node sooner.
 */
export const FLEET_RECHECK_MS = 5 * 60_000;

/**
 * After a refusal by the wave's slow start or group order, the next try comes within this (jittered
 * ±50%): the step opens when a node says it has soaked, a write to its own Node, not to the lock. A
 * live coordinator's turn wakes the node sooner (its view sees the label).
 */
export const WAVE_RECHECK_MS = 60_000;

/** What one read of the DaemonSet tells. */
export interface LockState {
  resourceVersion: string;
  /** The annotation text; undefined when absent. */
  text: string | undefined;
  /** Slots, expired ones included; [] when absent or unparsable. */
  entries: LockEntry[];
  /** Why the annotation cannot be read, when it cannot. */
  malformed?: string;
  /** The slots the annotation itself allows: its maxOwners (multi form), 1 (single form), else none. */
  declared: number;
  /** The nodes the DaemonSet runs on (status.desiredNumberScheduled); undefined when not known. */
  matching?: number;
  /** The failures an operator's `kured-ts resume` acknowledged (WAVE_RESUMED_ANNOTATION), if any. */
  resumed?: WaveResume;
}

/** What a holder's Node showed when last looked up (for reclaim, and for naming entries not in a cycle). */
export interface HolderSighting {
  /** Clock ms of the look. */
  at: number;
  /** The Node carries the cycle label (kured-ts.dev/rebooting): a cycle of kured-ts is under way there. */
  inCycle: boolean;
}

/**
 * An entry unchanged this long whose Node is in no kured-ts cycle is named in the reason of a full
 * lock: a holder of ours labels its node within a request of taking the slot, and renews it.
 */
export const STALE_ENTRY_MS = 120_000;

/** The slots a lock allows by its own word: its maxOwners, 1 in the single form; unbounded without. */
export function declaredSlots(value: LockValue): number {
  if (value.form === 'single') return 1;
  return value.maxOwners > 0 ? value.maxOwners : Number.POSITIVE_INFINITY;
}

export const MALFORMED_KEY = '\u0000malformed';
