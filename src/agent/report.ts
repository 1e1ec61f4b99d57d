// Reporting an outcome: the status annotation, Events, metrics and the log line, all derived from it.
//
// The status annotation is written only when it says something new (sameStatus: all but `since`)
// compared with what the last read of the node or our last write left there: the one place that
// decides to skip a write.
import { monotonicMs, type Clock } from '../clock/clock.js';
import type { Logger } from '../log/logger.js';
import type { AgentMetrics } from '../metrics/agent-metrics.js';
import type { EventRecorder } from '../node/events.js';
import type { NodeOps, NodeState } from '../node/node.js';
import {
  STATUS_ANNOTATION,
  parseStatus,
  sameStatus,
  type NodeStatus,
  type ReadStatus,
} from '../node/status.js';
import { errorText } from '../text/error-text.js';
import { effectsOf, type Effects, type Outcome } from './outcome.js';

export interface ReporterDeps {
  node: NodeOps;
  events: EventRecorder;
  metrics: AgentMetrics;
  logger: Logger;
  clock: Clock;
}

export class Reporter {
  /** The last kind counted, so that counters count transitions rather than ticks. */
  private lastKind: string | undefined;
  /** The last outcome reported (progress kinds included). */
  last: Outcome | undefined;
  /** The node's bootID as last read, for the status. */
  private bootID = '';
  /** The last verified reboot, carried into every status we write. */
  private lastReboot: string | undefined;
  /** The status annotation as last read or written; undefined = unknown (write). */
  private written: ReadStatus | undefined;
  /** While waiting for the lock: its holders as last seen, and since when (monotonic ms) they hold it. */
  private stall: { holders: string; since: number } | undefined;

  constructor(
    private readonly nodeId: string,
    private readonly deps: ReporterDeps,
  ) {}

  /** Takes in a fresh read of the node: its bootID and the status it carries. */
  noteNode(node: NodeState): void {
    this.bootID = node.bootID;
    const status = parseStatus(node.annotations[STATUS_ANNOTATION]);
    this.lastReboot = status?.lastReboot;
    this.written = status;
  }

  /** Status, Events, metrics and the log line of one outcome. Status write failures are logged. */
  async report(outcome: Outcome, signal: AbortSignal | undefined): Promise<void> {
    this.last = outcome;
    const fx = effectsOf(outcome);
    const { metrics, logger, events } = this.deps;
    logger[fx.level](fx.message, { node: this.nodeId, outcome: outcome.kind, reason: outcome.reason });
    this.reportMetrics(outcome, fx);
    for (const e of fx.events) await events.record(e.reason, outcome.reason, e.type);
    if (fx.phase === undefined) return;
    metrics.setPhase(fx.phase);
    const now = this.deps.clock.now().toISOString();
    if (outcome.kind === 'completed') this.lastReboot = now;
    const status: NodeStatus = { phase: fx.phase, reason: outcome.reason, since: now, bootID: this.bootID };
    if (this.lastReboot !== undefined) status.lastReboot = this.lastReboot;
    if (sameStatus(status, this.written)) return;
    try {
      this.written = undefined;
      await this.deps.node.setStatus(status, signal);
      this.written = status;
    } catch (err) {
      if (signal?.aborted) throw err;
      logger.warn('cannot write status', { node: this.nodeId, error: errorText(err) });
    }
  }

  private reportMetrics(outcome: Outcome, fx: Effects): void {
    const { metrics } = this.deps;
    const first = outcome.kind !== this.lastKind;
    if (outcome.kind !== 'pending' && outcome.kind !== 'draining') this.lastKind = outcome.kind;
    if (fx.lockHeld !== undefined) metrics.setLockHeld(fx.lockHeld);
    if (fx.rebootResult !== undefined && first) metrics.countReboot(fx.rebootResult);
    if (outcome.kind !== 'error')
      metrics.setBlocked(outcome.kind === 'blocked' ? outcome.blocker : undefined);
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
