// AgentMetrics on prom-client, in a registry of its own (the simulator runs many agents per process).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { PHASES, type Phase } from '../node/status.js';
import type { AgentMetrics, EvictionResult, RebootResult, ViewAge } from './agent-metrics.js';
import { WATCH_SILENCE_MS } from '../kube/reflector.js';
import { FLEET_GATES } from '../capacity/gates.js';

/**
 * The blockers of DESIGN §5 and the fleet gates a waiter is held back by (src/capacity/room.ts, the
 * outcome's gate); each gets a kured_ts_blocked series from the start.
 */
const DEFAULT_BLOCKER_NAMES: readonly string[] = [
  'pause',
  'quarantine',
  'prometheus',
  'pods',
  'pdb',
  ...FLEET_GATES,
  'health-check',
  'node-check',
  'volumes',
];

const EVICTION_RESULTS: readonly EvictionResult[] = ['evicted', 'refused', 'failed'];
const REBOOT_RESULTS: readonly RebootResult[] = ['success', 'failed', 'aborted', 'timeout', 'reboot-loop'];

const LINT_FAILING_DEFAULT_METRICS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/**
 * prom-client fills these from perf_hooks.monitorEventLoopDelay, a timer that wakes the process
 * every `eventLoopMonitoringPrecision` ms (default 10: 100 wake-ups a second on every node, about
 * 1% of a core for an agent that is otherwise idle). They are dropped and the monitor is given the
 * longest period a timer takes, so an idle agent stays asleep; nodejs_eventloop_lag_seconds, which
 * is measured when scraped, remains.
 */
const SAMPLED_EVENT_LOOP_METRICS = [
  'nodejs_eventloop_lag_min_seconds',
  'nodejs_eventloop_lag_max_seconds',
  'nodejs_eventloop_lag_mean_seconds',
  'nodejs_eventloop_lag_stddev_seconds',
  'nodejs_eventloop_lag_p50_seconds',
  'nodejs_eventloop_lag_p90_seconds',
  'nodejs_eventloop_lag_p99_seconds',
];
const LONGEST_TIMER_MS = 2_147_483_647;

/** Drains take seconds to an hour (kured's --drain-timeout is often 30m–1h). */
const DRAIN_BUCKETS = [5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200];
/** Cordon → uncordon: a drain, a host reboot (1–10 min) and the readiness gate (up to 30m default). */
const REBOOT_BUCKETS = [60, 120, 180, 300, 450, 600, 900, 1200, 1800, 2700, 3600, 5400, 7200, 14400];
/** Phases last from seconds (ready) to days (waiting for a window and the lock). */
const PHASE_BUCKETS = [5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 43200, 86400, 259200];

export interface PrometheusMetricsOptions {
  /** Blocker names that get a kured_ts_blocked series at 0 from the start. Default DEFAULT_BLOCKER_NAMES. */
  blockers?: readonly string[];
  /** Register prom-client's process and Node.js metrics in this registry. Default true. */
  processMetrics?: boolean;
  /** The agent's monotonic clock in ms, read at each scrape. Default performance.now. */
  monotonicMs?: () => number;
  /** The wall clock in epoch ms, read at each scrape. Default Date.now. */
  nowMs?: () => number;
}

/** The agent's metrics for one node, exposed through `registry` (GET /metrics). */
export class PrometheusMetrics implements AgentMetrics {
  readonly registry = new Registry();
  private readonly node: string;
  private readonly blockerNames = new Set<string>();
  private lastBeat: Date | undefined;

  private readonly rebootRequired: Gauge<'node'>;
  private readonly phase: Gauge<'node' | 'phase'>;
  private readonly lockHeld: Gauge<'node'>;
  private readonly blocked: Gauge<'node' | 'blocker'>;
  private readonly lockStalled: Gauge<'node'>;
  private stalledSince: number | undefined;
  /** The views' ages, read at each scrape (followViews). */
  private viewAges: (() => readonly ViewAge[]) | undefined;
  private need: { sinceMs: number; dueMs: number | undefined } | undefined;
  private readonly drainDuration: Histogram;
  private readonly rebootDuration: Histogram;
  private readonly phaseDuration: Histogram<'phase'>;
  private readonly evictions: Counter<'result'>;
  private readonly reboots: Counter<'result'>;
  private readonly sentinelErrors = new Counter({
    name: 'kured_ts_sentinel_errors_total',
    help: 'Reboot sentinel checks that failed (treated as no reboot required).',
    registers: [this.registry],
  });
  private readonly silenceErrors = new Counter({
    name: 'kured_ts_silence_errors_total',
    help: "Requests to Alertmanager that failed while holding or ending this node's silences (the cycle went on without them).",
    registers: [this.registry],
  });
  private readonly waveFailed = new Gauge({
    name: 'kured_ts_wave_failed',
    help: 'Whether this node failed in its reboot wave (1: quarantined, reboot failed, not back in time, or a health check failed after it), counting against --max-failures.',
    labelNames: ['node'] as const,
    registers: [this.registry],
  });

  constructor(node: string, options: PrometheusMetricsOptions = {}) {
    this.node = node;
    const registers = [this.registry];
    this.rebootRequired = new Gauge({
      name: 'kured_reboot_required',
      help: 'OS requires reboot due to software updates (1 = the reboot sentinel says so).',
      labelNames: ['node'],
      registers,
    });
    this.phase = new Gauge({
      name: 'kured_ts_phase',
      help: 'Current phase of the reboot cycle on this node: 1 for the current phase, 0 for the others.',
      labelNames: ['node', 'phase'],
      registers,
    });
    this.lockHeld = new Gauge({
      name: 'kured_ts_lock_held',
      help: 'Whether this node holds a slot of the cluster-wide reboot lock (1) or not (0).',
      labelNames: ['node'],
      registers,
    });
    this.blocked = new Gauge({
      name: 'kured_ts_blocked',
      help: 'Whether this blocker currently vetoes the reboot of this node (1) or not (0).',
      labelNames: ['node', 'blocker'],
      registers,
    });
    const monotonic = options.monotonicMs ?? ((): number => performance.now());
    const metrics = this; // eslint-disable-line @typescript-eslint/no-this-alias -- prom-client's collect() has its own this
    this.lockStalled = new Gauge({
      name: 'kured_ts_lock_stalled_seconds',
      help: 'While this node waits for the lock: how long the lock has been held by the same nodes (0 when not waiting). A lock nobody releases grows it without bound.',
      labelNames: ['node'],
      registers,
      collect() {
        const since = metrics.stalledSince;
        this.set({ node: metrics.node }, since === undefined ? 0 : Math.max(0, (monotonic() - since) / 1000));
      },
    });
    this.viewAgeGauge();
    const now = options.nowMs ?? Date.now;
    new Gauge({
      name: 'kured_ts_reboot_required_seconds',
      help: 'How long a reboot of this node has been required (0 when none is): counted from when the agent first saw it, across agent restarts.',
      labelNames: ['node'],
      registers,
      collect() {
        const need = metrics.need;
        this.set({ node: metrics.node }, need === undefined ? 0 : Math.max(0, (now() - need.sinceMs) / 1000));
      },
    });
    new Gauge({
      name: 'kured_ts_reboot_overdue',
      help: 'Whether the reboot of this node has been required for longer than --reboot-deadline (1) or not (0).',
      labelNames: ['node'],
      registers,
      collect() {
        const due = metrics.need?.dueMs;
        this.set({ node: metrics.node }, due !== undefined && now() > due ? 1 : 0);
      },
    });
    this.drainDuration = new Histogram({
      name: 'kured_ts_drain_duration_seconds',
      help: 'Time taken to cordon and drain the node before a reboot.',
      buckets: DRAIN_BUCKETS,
      registers,
    });
    this.rebootDuration = new Histogram({
      name: 'kured_ts_reboot_duration_seconds',
      help: 'Time from cordon to uncordon of a completed reboot (drain, reboot and readiness gate).',
      buckets: REBOOT_BUCKETS,
      registers,
    });
    this.phaseDuration = new Histogram({
      name: 'kured_ts_phase_duration_seconds',
      help: 'Time a finished reboot cycle spent in each phase: wait (required to lock), drain, reboot (request to new boot), ready (new boot to uncordon).',
      labelNames: ['phase'],
      buckets: PHASE_BUCKETS,
      registers,
    });
    this.evictions = new Counter({
      name: 'kured_ts_evictions_total',
      help: 'Pod evictions requested while draining, by result (evicted, refused by a PDB, failed).',
      labelNames: ['result'],
      registers,
    });
    this.reboots = new Counter({
      name: 'kured_ts_reboots_total',
      help: 'Reboot cycles finished on this node, by result (success, failed, aborted, timeout, reboot-loop).',
      labelNames: ['result'],
      registers,
    });
    this.initialise(options.blockers ?? DEFAULT_BLOCKER_NAMES);
    if (options.processMetrics ?? true) this.addProcessMetrics();
  }

  private addProcessMetrics(): void {
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: LONGEST_TIMER_MS });
    // prom-client names these gauges *_total, which promtool rejects (that suffix means a counter);
    // the same numbers remain, per type, in nodejs_active_handles / _requests / _resources.
    for (const name of LINT_FAILING_DEFAULT_METRICS) this.registry.removeSingleMetric(name);
    for (const name of SAMPLED_EVENT_LOOP_METRICS) this.registry.removeSingleMetric(name);
  }

  /** Every series exists from the start, so that rate() and absent() work before the first event. */
  /** kured_ts_view_age_seconds, read from followViews' ages at each scrape. */
  private viewAgeGauge(): void {
    const metrics = this; // eslint-disable-line @typescript-eslint/no-this-alias -- prom-client's collect() has its own this
    new Gauge({
      name: 'kured_ts_view_age_seconds',
      help: `Seconds since the agent's view (its Node; its pods and the lock while followed) last heard from the API server: an event, a bookmark or a list. Past ${WATCH_SILENCE_MS / 1000} s the view answers no read and the agent asks the API server itself; a view not run has no series.`,
      labelNames: ['node', 'view'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const { view, seconds } of metrics.viewAges?.() ?? [])
          if (seconds !== undefined) this.set({ node: metrics.node, view }, seconds);
      },
    });
  }

  followViews(ages: () => readonly ViewAge[]): void {
    this.viewAges = ages;
  }

  setWaveFailed(failed: boolean): void {
    this.waveFailed.set({ node: this.node }, failed ? 1 : 0);
  }

  private initialise(blockers: readonly string[]): void {
    this.rebootRequired.set({ node: this.node }, 0);
    this.setPhase('idle');
    this.lockHeld.set({ node: this.node }, 0);
    this.waveFailed.set({ node: this.node }, 0);
    for (const name of blockers) this.addBlocker(name);
    for (const result of EVICTION_RESULTS) this.evictions.inc({ result }, 0);
    for (const result of REBOOT_RESULTS) this.reboots.inc({ result }, 0);
  }

  private addBlocker(name: string): void {
    if (this.blockerNames.has(name)) return;
    this.blockerNames.add(name);
    this.blocked.set({ node: this.node, blocker: name }, 0);
  }

  setRebootRequired(required: boolean): void {
    this.rebootRequired.set({ node: this.node }, required ? 1 : 0);
  }

  setPhase(phase: Phase): void {
    for (const p of PHASES) this.phase.set({ node: this.node, phase: p }, p === phase ? 1 : 0);
  }

  setLockHeld(held: boolean): void {
    this.lockHeld.set({ node: this.node }, held ? 1 : 0);
  }

  setBlocked(blocker: string | undefined): void {
    if (blocker !== undefined) this.addBlocker(blocker);
    for (const name of this.blockerNames)
      this.blocked.set({ node: this.node, blocker: name }, name === blocker ? 1 : 0);
  }

  setLockStalledSince(monotonicMs: number | undefined): void {
    this.stalledSince = monotonicMs;
  }

  setRebootNeed(need: { sinceMs: number; dueMs: number | undefined } | undefined): void {
    this.need = need;
  }

  observeDrain(seconds: number): void {
    this.drainDuration.observe(Math.max(0, seconds));
  }

  observeReboot(seconds: number): void {
    this.rebootDuration.observe(Math.max(0, seconds));
  }

  observePhase(phase: string, seconds: number): void {
    this.phaseDuration.observe({ phase }, Math.max(0, seconds));
  }

  countEvictions(result: EvictionResult, n: number): void {
    if (n > 0) this.evictions.inc({ result }, n);
  }

  countReboot(result: RebootResult): void {
    this.reboots.inc({ result });
  }

  countSentinelError(): void {
    this.sentinelErrors.inc();
  }

  countSilenceError(): void {
    this.silenceErrors.inc();
  }

  heartbeat(at: Date): void {
    this.lastBeat = at;
  }

  /** When the loop last reported alive (undefined before its first tick); read by /healthz. */
  lastHeartbeat(): Date | undefined {
    return this.lastBeat;
  }

  /** The exposition's content type, for GET /metrics. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** The Prometheus text exposition of this registry. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }
}
