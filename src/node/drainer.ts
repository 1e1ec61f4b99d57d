// Draining: evicting this node's pods through the Eviction API, PDB-aware, bounded in time.

/** A pod the drain did not evict, and why. */
export interface PodNote {
  /** namespace/name */
  pod: string;
  reason: string;
  /** The PDB that refused the eviction, when one did. */
  pdb?: string;
}

/** The result of a drain, as data. */
export interface DrainResult {
  /** True when every pod to evict is gone (or skipped). */
  ok: boolean;
  /** namespace/name of pods evicted and gone. */
  evicted: string[];
  /** Pods not evicted on purpose: DaemonSet-owned, mirror, terminal, not matching --drain-pod-selector. */
  skipped: PodNote[];
  /** Pods still there when the drain ended (timeout or refusal). */
  pending: PodNote[];
  /** Eviction requests sent and their outcome, for kured_ts_evictions_total{result}. */
  requests: { evicted: number; refused: number; failed: number };
  durationMs: number;
}

export interface Drainer {
  /** Evicts pods of this node until all are gone, --drain-timeout passes, or the signal aborts. */
  drain(signal?: AbortSignal): Promise<DrainResult>;
}
