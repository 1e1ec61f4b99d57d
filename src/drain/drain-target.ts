// The bookkeeping of one drain: each pod being drained (Target) and the run's shared state (Run),
// shared by the drain's steps (kube-drainer.ts, drain-wait.ts, drain-fallback.ts).
import type { PolicyDenial } from '../kube/errors.js';
import type { V1Pod } from '../kube/kube.js';
import type { PodFailure } from '../node/quarantine.js';
import type { DrainHooks, DrainResult } from './drainer.js';

/**
 * Where a pod is in the drain: `held` (a lower order is not done yet), `evicting` (eviction not yet
 * sent), `refused`/`failed` (its eviction was; retried until the deadline), `evicted` (eviction or
 * deletion accepted: waited for until gone), `gone`; for rule `wait-completed`: `waiting`, `completed`.
 */
type TargetState = 'held' | 'evicting' | 'evicted' | 'gone' | 'refused' | 'failed' | 'waiting' | 'completed';

/** One pod being drained. */
export interface Target {
  pod: V1Pod;
  key: string;
  uid: string | undefined;
  /** `wait-completed`: never evicted, waited for until it completes. */
  mode: 'evict' | 'wait-completed';
  order: number;
  state: TargetState;
  reason: string;
  pdb?: string;
  /** Answers about the pod or the request so far (MAX_EVICTION_ERRORS); never the server's. */
  errors: number;
  /** The kind of failure its last answer was, while it is refused or failed. */
  failure?: PodFailure;
  /** Answers about the API server in a row (the back-off grows with them). */
  serverErrors?: number;
  /** When (our monotonic ms) the current run of answers about the API server began. */
  serverSince?: number;
  /** Deleted by --drain-fallback delete. */
  deleted?: true;
  /**
   * When (our monotonic ms) we first saw the pod deleting. --skip-wait-for-delete-timeout counts from
   * here, never from its deletionTimestamp: that is the API server's clock, not ours.
   */
  deletingSince?: number;
}

/** Mutable bookkeeping of one drain. */
export interface Run {
  signal: AbortSignal | undefined;
  /** Clock ms after which nothing more is tried (Infinity without --drain-timeout). */
  deadline: number;
  requests: DrainResult['requests'];
  hooks: DrainHooks;
  /** Set when the drain must end now: an eviction failed for good, or keepGoing said stop. */
  stop?: string;
  /** The admission policy's denial that stopped it, when one did. */
  denied?: PolicyDenial;
  /** `stop` is for answers about the API server that outlasted their limit (no pod's fault). */
  serverStop?: true;
  /** When (clock ms) keepGoing was last asked. */
  lastAsked: number;
}

/** Is the target done with (nothing more to wait for)? */
export function settled(t: Target): boolean {
  return t.state === 'gone' || t.state === 'completed';
}
