// Draining: evicting this node's pods through the Eviction API, PDB-aware, bounded in time.
import type { PolicyDenial } from '../kube/errors.js';
import type { PodFailure } from '../node/quarantine.js';

/** A pod the drain did not evict, and why. */
export interface PodNote {
  /** namespace/name */
  pod: string;
  /** Its UID, when known (a pod recreated under the same name is another pod). */
  uid?: string;
  reason: string;
  /** For a pod still there when the drain ended: which kind of failure kept it (none: never tried). */
  failure?: PodFailure;
  /** The PDB that refused the eviction, when one did. */
  pdb?: string;
  /** Left by a drain rule (label or --drain-rules: `skip`), not by its kind (DaemonSet, mirror…). */
  rule?: true;
}

/** The result of a drain, as data. */
export interface DrainResult {
  /** True when every pod to evict is gone (or skipped). */
  ok: boolean;
  /** Why the drain stopped before its end (DrainHooks.keepGoing said so), when it did. */
  stopped?: string;
  /**
   * An admission policy denied an eviction: the drain stopped at once, since every retry would be
   * denied alike (the caller judges whether the agent's own policy did: a configuration error).
   */
  denied?: PolicyDenial;
  /**
   * The drain did not complete, and only for answers about the API server (every pending pod that
   * failed failed with `api-server`): `the API server is failing: …`. Not the node's fault: the
   * caller gives its slot back and waits, it does not quarantine it.
   */
  serverFailure?: string;
  /** namespace/name of pods evicted (or, with --drain-fallback delete, deleted) and gone, in order. */
  evicted: string[];
  /** Pods not evicted on purpose: DaemonSet-owned, mirror, terminal, not matching --drain-pod-selector, rule `skip`. */
  skipped: PodNote[];
  /** namespace/name of pods of drain rule `wait-completed` the drain waited for until they completed. */
  waited: string[];
  /** namespace/name of pods deleted by --drain-fallback delete (their eviction refused until the timeout). */
  deleted: string[];
  /** Pods still there when the drain ended (timeout or refusal). */
  pending: PodNote[];
  /** Eviction requests sent and their outcome, for kured_ts_evictions_total{result}. */
  requests: { evicted: number; refused: number; failed: number };
  durationMs: number;
}

/** What one eviction request came to, as it happens (kured_ts_evictions_total{result}). */
export type EvictionOutcome = 'evicted' | 'refused' | 'failed';

/** The caller's say during a drain. */
export interface DrainHooks {
  /** Called after each eviction request with its outcome. */
  onEviction?: (outcome: EvictionOutcome) => void;
  /**
   * Asked between eviction rounds (at most every KEEP_GOING_EVERY_MS): undefined to go on, or why to
   * stop now (e.g. the lock slot is gone). A drain stopped this way is not ok and says why.
   */
  keepGoing?: () => Promise<string | undefined>;
}

export interface Drainer {
  /**
   * Evicts pods of this node until all are gone, an eviction fails for good, --drain-timeout passes,
   * `hooks.keepGoing` says stop, or the signal aborts.
   */
  drain(signal?: AbortSignal, hooks?: DrainHooks): Promise<DrainResult>;
}
