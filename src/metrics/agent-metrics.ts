// What the agent reports as metrics; src/metrics/prometheus-metrics.ts implements it with prom-client.
import type { Phase } from '../node/status.js';

export type RebootResult = 'success' | 'failed' | 'aborted' | 'timeout' | 'reboot-loop';
export type EvictionResult = 'evicted' | 'refused' | 'failed';

export interface AgentMetrics {
  /** kured_reboot_required{node} */
  setRebootRequired(required: boolean): void;
  /** kured_ts_phase{node,phase}: 1 for the current phase, 0 for the others. */
  setPhase(phase: Phase): void;
  /** kured_ts_lock_held{node} */
  setLockHeld(held: boolean): void;
  /** kured_ts_blocked{node,blocker}: 1 for the blocking blocker, 0 for the rest; undefined = none. */
  setBlocked(blocker: string | undefined): void;
  /**
   * kured_ts_lock_stalled_seconds{node}: while this node waits for the lock, since when (monotonic
   * ms of the agent's clock) the lock has been held by the same nodes; undefined = not waiting (0).
   */
  setLockStalledSince(monotonicMs: number | undefined): void;
  /**
   * kured_ts_reboot_required_seconds{node} (the age of the need) and kured_ts_reboot_overdue{node}
   * (past --reboot-deadline), both read at scrape time from the wall clock: since when (epoch ms) the
   * reboot is required and when it is due; undefined = not required (0, 0).
   */
  setRebootNeed(need: { sinceMs: number; dueMs: number | undefined } | undefined): void;
  /** kured_ts_drain_duration_seconds */
  observeDrain(seconds: number): void;
  /** kured_ts_reboot_duration_seconds (cordon → uncordon) */
  observeReboot(seconds: number): void;
  /**
   * kured_ts_phase_duration_seconds{phase}: one finished cycle's phases (wait: reboot required to
   * lock; drain; reboot: request to the new boot; ready: new boot to uncordon).
   */
  observePhase(phase: string, seconds: number): void;
  /** kured_ts_evictions_total{result} */
  countEvictions(result: EvictionResult, n: number): void;
  /** kured_ts_reboots_total{result} */
  countReboot(result: RebootResult): void;
  /** kured_ts_sentinel_errors_total */
  countSentinelError(): void;
  /** kured_ts_silence_errors_total: a request to Alertmanager (--alertmanager-url) failed. */
  countSilenceError?(): void;
  /** Marks the loop alive (for /healthz). */
  heartbeat(at: Date): void;
  /** kured_ts_wave_failed{node}: this node's own label says it failed in its wave. */
  setWaveFailed?(failed: boolean): void;
  /**
   * kured_ts_view_age_seconds{node,view}: `ages` is read at each scrape and says, per view the agent
   * decides from (its Node; its pods and the lock while followed), how long since it last heard from
   * the API server.
   */
  followViews?(ages: () => readonly ViewAge[]): void;
}

/** One view's age: seconds since it last heard from the API server (undefined: not listed yet). */
export interface ViewAge {
  view: 'node' | 'pods' | 'lock';
  seconds: number | undefined;
}

/** Metrics that go nowhere (for check, simulate without a listener, tests). */
export const noMetrics: AgentMetrics = {
  setRebootRequired: () => undefined,
  setPhase: () => undefined,
  setLockHeld: () => undefined,
  setBlocked: () => undefined,
  setLockStalledSince: () => undefined,
  setRebootNeed: () => undefined,
  observeDrain: () => undefined,
  observeReboot: () => undefined,
  observePhase: () => undefined,
  countEvictions: () => undefined,
  countReboot: () => undefined,
  countSentinelError: () => undefined,
  heartbeat: () => undefined,
  setWaveFailed: () => undefined,
};
