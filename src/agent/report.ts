// Reporting an outcome: the status annotation, Events, metrics and the log line, all derived from it.
//
// The status annotation is written only when it says something new (sameStatus: all but `since`)
// compared with what the last read of the node or our last write left there: the one place that
// decides to skip a write.
import { monotonicMs, type Clock } from '../clock/clock.js';
import type { Logger } from '../log/logger.js';
import type { AgentMetrics } from '../metrics/agent-metrics.js';
import type { EventRecorder } from '../events/events.js';
import type { NodeOps, NodeState } from '../node/node.js';
import {
  STATUS_ANNOTATION,
  WANTS_REBOOT,
  formatStatus,
  isOverdue,
  parseStatus,
  sameStatus,
  type NodeStatus,
  type Phase,
  type ReadStatus,
} from '../node/status.js';
import { shortDuration } from '../text/duration.js';
import { errorText } from '../text/error-text.js';
import type { ShutdownSettings } from '../host/shutdown.js';
import { effectsOf, type Effects, type Outcome, type OutcomeKind } from './outcome.js';
import type { FailureEvent, Notifier } from '../notify/notifier.js';
import { renderMessage } from '../notify/message.js';
import { waveOf } from '../node/wave.js';
import type { AgentViews } from './agent-config.js';

/** Kinds reported mid-pass: a reboot result is counted once the pass ends in a kind, not on these. */
const PROGRESS_KINDS: ReadonlySet<OutcomeKind> = new Set<OutcomeKind>([
  'pending',
  'draining',
  'held-after-drain',
  'waiting-for-volumes',
]);

/**
 * A status write of a node waiting for the coordinator's turn that changes only its reason comes at
 * most this often (issue 55): that reason is the coordinator's word (its advice, a lapsed turn), which
 * whoever holds its token can churn, and every write of a Node reaches every watcher of Nodes. A
 * change of phase or of any other field, and every other wait's reason (a FleetLock server failing,
 * the lock's holders), is written at once; a deferred reason is written when this has passed (flush).
 */
const WAITER_STATUS_EVERY_MS = 30_000;

/** The fields of an outcome's log line: the configuration error names its policy and flags apart. */
function logFields(node: string, outcome: Outcome): Record<string, unknown> {
  const fields = { node, outcome: outcome.kind, reason: outcome.reason };
  return outcome.kind === 'misconfigured'
    ? { ...fields, policy: outcome.policy, options: outcome.options }
    : fields;
}

export interface ReporterDeps {
  node: NodeOps;
  events: EventRecorder;
  metrics: AgentMetrics;
  logger: Logger;
  clock: Clock;
  /** Where failures are told (Effects.notify, overdue); none: not told. */
  notifier?: Notifier;
  /** The agent's views: a stale one is said in the status. */
  views?: Pick<AgentViews, 'stale'>;
}

/** What the Reporter judges by besides the outcome. */
export interface ReporterOptions {
  /** --reboot-deadline; 0 = none. */
  deadlineMs: number;
  /** --period: RebootOverdue is recorded at most once per period. */
  periodMs: number;
  /** Graceful node shutdown on this host as read at start: carried in every status. */
  shutdown?: ShutdownSettings;
  /** --message-template-<kind> of the failures told (Effects.notify, overdue); default none told. */
  templates?: Readonly<Record<FailureEvent, string>>;
}

/** A wait for the coordinator's turn: its reason is the coordinator's word (advice, a lapsed turn). */
function forTurn(outcome: Outcome): boolean {
  return outcome.kind === 'waiting-for-lock' && outcome.wait?.for === 'turn';
}

export class Reporter {
  /** The last kind counted, so that counters count transitions rather than ticks. */
  private lastKind: string | undefined;
  /** The last outcome reported (progress kinds included). */
  last: Outcome | undefined;
  /** The node's bootID as last read, for the status. */
  private bootID = '';
  /** The node's wave as last read (its label), for the status. */
  private wave: string | undefined;
  /** The last verified reboot, carried into every status we write. */
  private lastReboot: string | undefined;
  /** The status annotation as last read or written; undefined = unknown (write). */
  private written: ReadStatus | undefined;
  /** While waiting for the lock: its holders as last seen, and since when (monotonic ms) they hold it. */
  private stall: { holders: string; since: number } | undefined;
  /** When the reboot was first seen required (RFC 3339), from the status: it survives restarts. */
  private needSince: string | undefined;
  /** The last status write failed: the annotation does not say what the agent last decided. */
  private unsent = false;
  /** When RebootOverdue was last recorded (monotonic ms). */
  private overdueEventAt: number | undefined;
  /** The last status written and when (monotonic ms): a waiter's reason-only change waits for it. */
  private lastWrite: { status: NodeStatus; atMs: number } | undefined;
  /** A waiter's status whose write waits for WAITER_STATUS_EVERY_MS (flush writes it). */
  private deferred: NodeStatus | undefined;
  /** The status of an outcome handed out to ride in the caller's next node write (carry). */
  private carried: { kind: string; reason: string; status: NodeStatus } | undefined;
  /**
   * The last outcome reported once (Effects.once), as kind and reason, while no other end of a pass
   * followed it: its repeats are quiet.
   */
  private reportedOnce: string | undefined;

  constructor(
    private readonly nodeId: string,
    private readonly deps: ReporterDeps,
    private readonly options: ReporterOptions = { deadlineMs: 0, periodMs: 3_600_000 },
  ) {}

  /**
   * Since when the current reboot has been required (RFC 3339), as the status carries it across
   * agent restarts; undefined while none is. The cycle record takes it for the reboot history.
   */
  get requiredSince(): string | undefined {
    return this.needSince;
  }

  /** The last status write failed (it is written again with the next outcome). */
  get statusUnsent(): boolean {
    return this.unsent;
  }

  /** Takes in a fresh read of the node: its bootID and the status it carries. */
  noteNode(node: NodeState): void {
    this.bootID = node.bootID;
    const wave = waveOf(node.labels);
    this.wave = wave?.wave;
    this.deps.metrics.setWaveFailed?.(wave?.state === 'failed');
    const status = parseStatus(node.annotations[STATUS_ANNOTATION]);
    this.lastReboot = status?.lastReboot;
    this.needSince = status?.requiredSince ?? this.needSince;
    this.written = status;
  }

  /**
   * The status annotation `outcome` writes, for the caller's next node write to carry; report(outcome)
   * then writes it only when that write did not (noteNode of its answer says what the node carries).
   */
  carry(outcome: Outcome): Record<string, string> {
    const status = this.statusOf(outcome, effectsOf(outcome), this.deps.clock.now());
    if (status === undefined) return {};
    this.carried = { kind: outcome.kind, reason: outcome.reason, status };
    return { [STATUS_ANNOTATION]: formatStatus(status) };
  }

  /** Status, Events, metrics and the log line of one outcome. Status write failures are logged. */
  async report(outcome: Outcome, signal: AbortSignal | undefined): Promise<void> {
    this.last = outcome;
    const fx = effectsOf(outcome);
    const { logger, events } = this.deps;
    const repeated = this.repeated(outcome, fx);
    logger[repeated ? 'debug' : fx.level](fx.message, logFields(this.nodeId, outcome));
    this.reportMetrics(outcome, fx);
    if (!repeated) for (const e of fx.events) await events.record(e.reason, outcome.reason, e.type);
    if (!repeated && fx.notify !== undefined) await this.tell(fx.notify, outcome.reason);
    const now = this.deps.clock.now();
    const status = this.takeCarried(outcome) ?? this.statusOf(outcome, fx, now);
    if (status === undefined) return;
    // RebootOverdue before the status write, so that nothing is awaited between that write and what
    // the decision does next (the reboot request): the window in which a second agent of this node
    // (a rollout overlap) could read the record and request the same boot's reboot again stays as
    // small as it was (agent-crash.test.ts, "a second agent of the same node starts")
    if (isOverdue(status, now)) await this.reportOverdue(status, now);
    else this.overdueEventAt = undefined;
    await this.writeStatus(status, signal, forTurn(outcome));
  }

  /**
   * Writes `status` unless the node carries it already, or defers it when it is a waiter's for its
   * turn (`turn`) that changes only the reason within WAITER_STATUS_EVERY_MS of the last write; a
   * failure is logged (written again next time).
   */
  private async writeStatus(
    status: NodeStatus,
    signal: AbortSignal | undefined,
    turn = false,
  ): Promise<void> {
    this.deferred = undefined;
    if (sameStatus(status, this.written)) return;
    if (turn && this.deferrable(status)) {
      this.deferred = status;
      return;
    }
    try {
      this.written = undefined;
      this.unsent = true;
      await this.deps.node.setStatus(status, signal);
      this.written = status;
      this.lastWrite = { status, atMs: monotonicMs(this.deps.clock) };
      this.unsent = false;
    } catch (err) {
      if (signal?.aborted) throw err;
      this.deps.logger.warn('cannot write status', { node: this.nodeId, error: errorText(err) });
    }
  }

  /** A waiter's status that differs from the last one written (and still carried) only by its reason, soon after it. */
  private deferrable(status: NodeStatus): boolean {
    const last = this.lastWrite;
    if (status.phase !== 'waiting-for-lock' || last === undefined) return false;
    // the node still carries what was last written (as read since, or as written)
    if (!sameStatus(this.written, last.status)) return false;
    if (monotonicMs(this.deps.clock) - last.atMs >= WAITER_STATUS_EVERY_MS) return false;
    return sameStatus({ ...status, reason: last.status.reason }, last.status);
  }

  /** When the deferred status may be written (ms from now), or undefined when none waits. */
  deferredInMs(): number | undefined {
    if (this.deferred === undefined || this.lastWrite === undefined) return undefined;
    return Math.max(0, this.lastWrite.atMs + WAITER_STATUS_EVERY_MS - monotonicMs(this.deps.clock));
  }

  /** Writes the deferred status, if one waits (while the agent waits, between its passes). */
  async flush(signal: AbortSignal | undefined): Promise<void> {
    const status = this.deferred;
    if (status === undefined) return;
    this.lastWrite = undefined;
    await this.writeStatus(status, signal);
  }

  /**
   * Runs `wait` (the agent's wait for the lock, between passes), writing a waiter's deferred status
   * when it is due meanwhile; the write is given up when the wait ends first (the next pass reports anew).
   */
  async flushingWhile(signal: AbortSignal, wait: () => Promise<void>): Promise<void> {
    const stop = new AbortController();
    const both = AbortSignal.any([signal, stop.signal]);
    const flushing = (async (): Promise<void> => {
      const dueMs = this.deferredInMs();
      if (dueMs === undefined) return;
      await this.deps.clock.sleep(dueMs, both);
      await this.flush(both);
    })().catch(() => undefined);
    try {
      await wait();
    } finally {
      stop.abort();
      await flushing;
    }
  }

  /** The status handed out with carry() for this outcome (the same `since`), once; else undefined. */
  private takeCarried(outcome: Outcome): NodeStatus | undefined {
    const carried = this.carried;
    this.carried = undefined;
    return carried?.kind === outcome.kind && carried.reason === outcome.reason ? carried.status : undefined;
  }

  /** Is this the repeat of an outcome reported once (Effects.once)? Notes what it reports. */
  private repeated(outcome: Outcome, fx: Effects): boolean {
    if (PROGRESS_KINDS.has(outcome.kind)) return false;
    const key = `${outcome.kind}\n${outcome.reason}`;
    const repeated = fx.once === true && this.reportedOnce === key;
    this.reportedOnce = fx.once === true ? key : undefined;
    return repeated;
  }

  /** The status annotation this outcome writes; undefined for progress without a phase. */
  private statusOf(outcome: Outcome, fx: Effects, now: Date): NodeStatus | undefined {
    // 'pending' (the sentinel says so, nothing decided yet) has no phase of its own, but starts the need
    if (outcome.kind === 'pending') this.needSince ??= now.toISOString();
    if (fx.phase === undefined) return undefined;
    this.deps.metrics.setPhase(fx.phase);
    if (outcome.kind === 'completed') this.lastReboot = now.toISOString();
    return {
      phase: fx.phase,
      reason: outcome.reason,
      since: now.toISOString(),
      bootID: this.bootID,
      ...this.need(fx.phase, now),
      ...(this.lastReboot === undefined ? {} : { lastReboot: this.lastReboot }),
      // each question the FleetLock server answered "group full": the coordinator keeps the turn
      ...(outcome.kind === 'waiting-for-lock' && outcome.fleetLockFull === true
        ? { fleetLockAsked: now.toISOString() }
        : {}),
      ...(outcome.kind === 'misconfigured' ? { deniedBy: outcome.policy } : {}),
      ...this.aboutTheNode(),
    };
  }

  /** What every status says of the node beside its phase: its graceful shutdown, its wave, a stale view. */
  private aboutTheNode(): Pick<NodeStatus, 'shutdown' | 'wave' | 'staleView'> {
    const stale = this.deps.views?.stale();
    return {
      ...(this.options.shutdown === undefined ? {} : { shutdown: this.options.shutdown }),
      ...(this.wave === undefined ? {} : { wave: this.wave }),
      ...(stale === undefined ? {} : { staleView: stale }),
    };
  }

  /**
   * How long the reboot has been required, and when it is due: from the first phase that wants it
   * until it is done (idle or completed). Kept in the status, so an agent restart does not reset it.
   */
  private need(phase: Phase, now: Date): Pick<NodeStatus, 'requiredSince' | 'due'> {
    if (!WANTS_REBOOT.has(phase)) this.needSince = undefined;
    else this.needSince ??= now.toISOString();
    const since = this.needSince;
    const { deadlineMs } = this.options;
    const sinceMs = since === undefined ? undefined : Date.parse(since);
    const dueMs = sinceMs === undefined || deadlineMs === 0 ? undefined : sinceMs + deadlineMs;
    this.deps.metrics.setRebootNeed(sinceMs === undefined ? undefined : { sinceMs, dueMs });
    if (since === undefined) return {};
    return { requiredSince: since, ...(dueMs === undefined ? {} : { due: new Date(dueMs).toISOString() }) };
  }

  /** A failure notification: the kind's text with this node, the reason after it. Never throws. */
  private async tell(kind: FailureEvent, reason: string): Promise<void> {
    const { notifier, logger } = this.deps;
    const template = this.options.templates?.[kind];
    if (notifier === undefined || template === undefined) return;
    try {
      await notifier.notify(kind, this.nodeId, `${renderMessage(template, this.nodeId)}: ${reason}`);
    } catch (err) {
      logger.warn('notification failed', { node: this.nodeId, event: kind, error: errorText(err) });
    }
  }

  /** Event RebootOverdue (Warning) past the deadline, at most once per period. */
  private async reportOverdue(status: NodeStatus, now: Date): Promise<void> {
    const at = monotonicMs(this.deps.clock);
    if (this.overdueEventAt !== undefined && at - this.overdueEventAt < this.options.periodMs) return;
    this.overdueEventAt = at;
    const age = shortDuration(now.getTime() - Date.parse(status.requiredSince ?? status.since));
    const deadline = shortDuration(this.options.deadlineMs);
    const text = `reboot required for ${age}, past the deadline of ${deadline}: ${status.phase}: ${status.reason}`;
    await this.deps.events.record('RebootOverdue', text, 'Warning');
    await this.tell('overdue', text);
  }

  private reportMetrics(outcome: Outcome, fx: Effects): void {
    const { metrics } = this.deps;
    const first = outcome.kind !== this.lastKind;
    if (!PROGRESS_KINDS.has(outcome.kind)) this.lastKind = outcome.kind;
    if (fx.lockHeld !== undefined) metrics.setLockHeld(fx.lockHeld);
    if (fx.rebootResult !== undefined && first) metrics.countReboot(fx.rebootResult);
    if (outcome.kind !== 'error') metrics.setBlocked(heldBy(outcome));
    this.reportStall(outcome);
    this.reportKind(outcome);
  }

  /**
   * kured_ts_lock_stalled_seconds: a waiting node times how long the same nodes hold the lock; a new
   * holder restarts it, and anything but waiting (progress and errors aside) ends it.
   */
  private reportStall(outcome: Outcome): void {
    if (outcome.kind === 'pending' || outcome.kind === 'draining' || outcome.kind === 'error') return;
    if (outcome.kind !== 'waiting-for-lock') {
      this.stall = undefined;
    } else {
      const holders = [...outcome.holders].sort().join(',');
      if (this.stall?.holders !== holders) this.stall = { holders, since: monotonicMs(this.deps.clock) };
    }
    this.deps.metrics.setLockStalledSince(this.stall?.since);
  }

  /** The metrics only some kinds move. */
  private reportKind(outcome: Outcome): void {
    const { metrics } = this.deps;
    switch (outcome.kind) {
      case 'pending':
      case 'idle':
        metrics.setRebootRequired(outcome.kind === 'pending');
        break;
      case 'sentinel-error':
        metrics.countSentinelError();
        break;
      case 'completed':
      case 'timed-out':
        metrics.observeReboot(outcome.durationMs / 1000);
        break;
      default:
    }
  }
}

/** What kured_ts_blocked names for an outcome: the blocker that blocks, or the fleet gate a waiter waits on. */
function heldBy(outcome: Outcome): string | undefined {
  if (outcome.kind === 'blocked') return outcome.blocker;
  if (outcome.kind === 'waiting-for-volumes') return 'volumes';
  return outcome.kind === 'waiting-for-lock' ? outcome.gate : undefined;
}
