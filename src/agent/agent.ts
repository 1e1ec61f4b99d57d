// The agent: DESIGN §1's reboot cycle for one node, as a state machine over injected interfaces.
//
// The cluster is the state: the lock slot (with {unschedulable, bootID, attempts, verifyingSince})
// and the node (cordon, taint, our `kured-ts.dev/cordoned-by` marker, bootID, conditions). Every
// tick that may act starts from a fresh read of both, so a fresh agent after a crash at any step
// continues from what the cluster records. The one thing kept in memory is `clean`: the last full
// read, and our own writes since, left no slot, no taint and no cordon marker of ours. Only this
// agent writes those for its node (a previous incarnation's leftovers are found by the start-up
// read), so while no reboot is required a clean agent asks only the sentinel: no API request.
// Likewise the status annotation is written only when it differs from what we last read or wrote.
//
// Orderings that make that safe (each a hazard if changed):
// - the marker is written BEFORE the cordon, so no cordon of ours is ever unmarked;
// - uncordon (and marker removal) happens BEFORE the lock is released, on every path;
// - the attempt is counted in the lock BEFORE the reboot request, so a reboot that never comes is
//   noticed after a restart (bootID unchanged) and bounded by --reboot-retries;
// - a held slot on an unchanged boot resumes at the drain (a no-op on a drained node), never
//   straight at the reboot, so a crash mid-drain cannot lead to rebooting an undrained node;
// - the post-reboot timeout starts at `verifyingSince`, written to the lock on the first look at
//   the new boot, so a restart does not reset it.
import { firstBlock, type Blocker } from '../blockers/blocker.js';
import type { Clock } from '../clock/clock.js';
import type { Config } from '../config.js';
import type { Lock, LockHolder, LockMetadata } from '../lock/lock.js';
import type { Logger } from '../log/logger.js';
import type { AgentMetrics } from '../metrics/agent-metrics.js';
import type { Drainer, DrainResult } from '../node/drainer.js';
import type { EventRecorder } from '../node/events.js';
import {
  KURED_IN_PROGRESS_ANNOTATION,
  KURED_REBOOT_NEEDED_ANNOTATION,
  STATUS_ANNOTATION,
  type NodeOps,
  type NodeState,
  type NodeStatus,
} from '../node/node.js';
import { renderMessage } from '../notify/message.js';
import type { Notifier, NotifyEvent } from '../notify/notifier.js';
import type { Rebooter } from '../reboot/rebooter.js';
import type { Sentinel, SentinelVerdict } from '../sentinel/sentinel.js';
import type { Window } from '../window/window.js';
import { effectsOf, formatDuration, type Outcome } from './outcome.js';

export type { Outcome, OutcomeKind } from './outcome.js';

/** Our marker on a node we cordoned: how a fresh agent knows whose cordon it is. */
export const CORDONED_BY_ANNOTATION = 'kured-ts.dev/cordoned-by';

/**
 * How often the agent looks again while it waits for readiness after a reboot (capped by --period):
 * the next node of the wave waits on it. A poll is two GETs (node and lock); the Kube seam has no
 * node watch to wake on instead.
 */
export const VERIFY_POLL_MS = 2_000;
/** How often the agent looks again while it holds the lock after the readiness timeout. */
export const HOLDING_POLL_MS = 10_000;
/** Retry after a failed tick (API outage), capped by --period. */
export const ERROR_RETRY_MS = 30_000;
/**
 * The first lock attempt comes within this (capped by --period) after start-up: a DaemonSet rollout
 * starts every agent at once, and the spread keeps them from racing for the lock together. The
 * start-up tick itself (crash repair, the taint, a held slot's cycle) does not wait.
 */
export const FIRST_TICK_MAX_MS = 60_000;
/**
 * Re-check a blocked node this often (capped by --period): blocks are mostly transient (a PDB at 0
 * while the previous node's pods reschedule), and waiting a whole period stalls the wave.
 */
export const BLOCKED_RETRY_MS = 5 * 60_000;
/** Agents start within this much after the maintenance window opens (spread, not all at once). */
export const WINDOW_OPEN_SPREAD_MS = 60_000;
/** `redrain` gives up after this many uncordons by someone else in one cycle, then aborts. */
export const MAX_REDRAINS = 3;

/** The flags the cycle reads (DESIGN §3). */
export type AgentConfig = Pick<
  Config,
  | 'nodeId'
  | 'periodMs'
  | 'drainDelayMs'
  | 'rebootDelayMs'
  | 'forceReboot'
  | 'lockReleaseDelayMs'
  | 'preferNoScheduleTaint'
  | 'annotateNodes'
  | 'preRebootNodeLabels'
  | 'postRebootNodeLabels'
  | 'messageTemplateDrain'
  | 'messageTemplateReboot'
  | 'messageTemplateUncordon'
  | 'readinessGates'
  | 'postRebootTimeoutMs'
  | 'onPostRebootTimeout'
  | 'waitForDaemonSetPods'
  | 'rebootRetries'
  | 'onUncordonedDuringDelay'
>;

/** Everything the agent talks to. */
export interface AgentDeps {
  sentinel: Sentinel;
  /** Evaluated in order; the first block wins (firstBlock). */
  blockers: readonly Blocker[];
  lock: Lock;
  node: NodeOps;
  drainer: Drainer;
  events: EventRecorder;
  rebooter: Rebooter;
  notifier: Notifier;
  metrics: AgentMetrics;
  window: Window;
  clock: Clock;
  logger: Logger;
  /** [0, 1), for jitter. */
  random: () => number;
}

/** What one tick works on: its signal, the latest read of the node, and the sentinel's answer once asked. */
interface Ctx {
  signal: AbortSignal | undefined;
  node: NodeState;
  /** false at start-up: stop after the taint, before the window, blockers and the lock attempt. */
  acquire: boolean;
  verdict?: SentinelVerdict;
}

/** Read through a call so that the compiler does not narrow it across awaits. */
function aborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

/** The status annotation's fields, when it is there and an object. */
function statusOf(node: NodeState): Record<string, unknown> | undefined {
  const text = node.annotations[STATUS_ANNOTATION];
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** What makes two statuses the same write (NodeOps.setStatus's comparison): all but `since`. */
function statusKey(status: Partial<Record<keyof NodeStatus, unknown>> | undefined): string | undefined {
  if (status === undefined) return undefined;
  return JSON.stringify([status.phase, status.reason, status.bootID, status.lastReboot]);
}

function notRequired(verdict: SentinelVerdict): Outcome {
  return verdict.error === undefined
    ? { kind: 'idle', reason: 'reboot not required' }
    : { kind: 'sentinel-error', reason: verdict.error };
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class Agent {
  /** The last reported kind, so counters count transitions rather than ticks. */
  private lastKind: string | undefined;
  private lastReported: Outcome | undefined;
  private bootID = '';
  /** Carried from the status annotation into every status we write. */
  private lastReboot: string | undefined;
  /**
   * No slot, taint or cordon marker of ours on the cluster, as the last full read and our writes
   * since left it (see the file comment). Only a tick ending idle or cancelled sets it.
   */
  private clean = false;
  /** Ends an idle wait early (wake); set only while run() waits after an 'idle' outcome. */
  private idleWait: AbortController | undefined;
  /** wake() interrupted the idle wait: the next pass is a start-up pass (taint now, lock later). */
  private woken = false;
  /** statusKey of the status annotation as last read or written; undefined = unknown. */
  private statusWritten: string | undefined;

  constructor(
    private readonly config: AgentConfig,
    private readonly deps: AgentDeps,
  ) {}

  /** One pass of the cycle; never throws except when `signal` aborts (the tick is abandoned). */
  async tick(signal?: AbortSignal): Promise<Outcome> {
    return this.step(signal, true);
  }

  /**
   * The first pass of `run`, at once: crash repair, a held slot's cycle (a reboot in progress goes
   * on without delay), and when a reboot is required the taint, so that pods evicted from the first
   * node to take the lock do not land here. Stops before the lock attempt ('pending').
   */
  async startUp(signal?: AbortSignal): Promise<Outcome> {
    return this.step(signal, false);
  }

  private async step(signal: AbortSignal | undefined, acquire: boolean): Promise<Outcome> {
    this.deps.metrics.heartbeat(this.deps.clock.now());
    let outcome: Outcome;
    try {
      outcome = await this.decide(signal, acquire);
    } catch (err) {
      if (signal?.aborted) throw err;
      outcome = { kind: 'error', reason: errorText(err) };
    }
    if (outcome !== this.lastReported) await this.report(outcome, signal);
    return outcome;
  }

  /**
   * Ticks until `signal` aborts: at once (startUp), then every --period jittered ±50%, the first
   * lock attempt within a minute, sooner while verifying a reboot, and at once when the lock
   * changes while we wait for a slot or a PodDisruptionBudget.
   */
  async run(signal: AbortSignal): Promise<void> {
    let last: Outcome | undefined;
    while (!signal.aborted) {
      try {
        if (last === undefined || this.woken) {
          this.woken = false;
          last = await this.startUp(signal);
        } else last = await this.tick(signal);
        await this.wait(this.nextDelay(last), last, signal);
      } catch (err) {
        if (aborted(signal)) return;
        throw err;
      }
    }
  }

  /**
   * Someone (the minute sentinel refresher in run.ts) saw that a reboot became required: end an
   * idle wait now, so the taint goes on at once instead of up to 1.5 periods later. The lock attempt
   * still follows the start-up jitter. Does nothing unless the agent is idle.
   */
  wake(): void {
    if (this.idleWait === undefined) return;
    this.woken = true;
    this.idleWait.abort(new Error('woken: reboot required'));
  }

  /** The pause after an outcome before the next tick. */
  nextDelay(outcome: Outcome): number {
    const period = this.config.periodMs;
    switch (outcome.kind) {
      case 'pending': // only startUp ends here: the first lock attempt
        return this.deps.random() * Math.min(period, FIRST_TICK_MAX_MS);
      case 'verifying':
        return this.jitter(Math.min(period, VERIFY_POLL_MS));
      case 'holding':
        return this.jitter(Math.min(period, HOLDING_POLL_MS));
      case 'error':
        return this.jitter(Math.min(period, ERROR_RETRY_MS));
      case 'blocked':
        return this.jitter(Math.min(period, BLOCKED_RETRY_MS));
      case 'outside-window':
        return Math.min(this.jitter(period), this.untilWindowOpens());
      default:
        return this.jitter(period);
    }
  }

  /** Time until the window next opens, plus a random spread; Infinity when it never does. */
  private untilWindowOpens(): number {
    const now = this.deps.clock.now();
    const opens = this.deps.window.next(now).change;
    if (opens === undefined) return Number.POSITIVE_INFINITY;
    return Math.max(0, opens.getTime() - now.getTime()) + this.deps.random() * WINDOW_OPEN_SPREAD_MS;
  }

  private jitter(ms: number): number {
    return ms * (0.5 + this.deps.random());
  }

  /**
   * Waits that end early when the lock changes: for a slot, and a PDB block, which the wave itself
   * causes (the last node's pods rescheduling) and which a lock release usually means has cleared.
   */
  private wakesOnLockChange(last: Outcome | undefined): boolean {
    return last?.kind === 'waiting-for-lock' || (last?.kind === 'blocked' && last.blocker === 'pdb');
  }

  private async wait(delay: number, last: Outcome | undefined, signal: AbortSignal): Promise<void> {
    if (last?.kind === 'idle') {
      await this.idleSleep(delay, signal);
      return;
    }
    if (!this.wakesOnLockChange(last)) {
      await this.deps.clock.sleep(delay, signal);
      return;
    }
    // The lock spreads the waiters woken by a freed slot itself (DaemonSetLock, HERD_SPREAD_MS) and
    // returns only to those that may still find it free: no extra pause here.
    try {
      await this.deps.lock.waitForChange(delay, signal);
    } catch (err) {
      if (signal.aborted) throw err;
      await this.deps.clock.sleep(delay, signal);
    }
  }

  /** Sleeps like any wait, but wake() ends it early (without error). */
  private async idleSleep(delay: number, signal: AbortSignal): Promise<void> {
    const controller = new AbortController();
    const stop = (): void => {
      controller.abort(signal.reason);
    };
    signal.addEventListener('abort', stop, { once: true });
    this.idleWait = controller;
    try {
      await this.deps.clock.sleep(delay, controller.signal);
    } catch (err) {
      if (signal.aborted || !this.woken) throw err;
    } finally {
      this.idleWait = undefined;
      signal.removeEventListener('abort', stop);
    }
  }

  // ---- the decision -------------------------------------------------------------------------

  private async decide(signal: AbortSignal | undefined, acquire: boolean): Promise<Outcome> {
    // Clean and no reboot required: nothing of ours to undo, so nothing to read.
    const verdict = this.clean ? await this.deps.sentinel.rebootRequired(signal) : undefined;
    if (verdict !== undefined && !verdict.required) return notRequired(verdict);
    this.clean = false;
    const ctx: Ctx = { signal, node: await this.readNode(signal), acquire };
    if (verdict !== undefined) ctx.verdict = verdict;
    const held = await this.deps.lock.holding(signal);
    if (held) return this.continueHeld(ctx, held);
    await this.repairCordon(ctx);
    return this.fresh(ctx);
  }

  private async readNode(signal: AbortSignal | undefined): Promise<NodeState> {
    const node = await this.deps.node.get(signal);
    this.bootID = node.bootID;
    const status = statusOf(node);
    this.lastReboot = typeof status?.lastReboot === 'string' ? status.lastReboot : undefined;
    this.statusWritten = statusKey(status);
    return node;
  }

  private ours(node: NodeState): boolean {
    return node.annotations[CORDONED_BY_ANNOTATION] !== undefined;
  }

  /** Nothing is in progress (no slot): a cordon of ours left behind by a crash is undone. */
  private async repairCordon(ctx: Ctx): Promise<void> {
    if (!this.ours(ctx.node)) return;
    const wasCordoned = ctx.node.unschedulable;
    await this.undoCordon(ctx);
    if (wasCordoned) {
      await this.report(
        { kind: 'repaired', reason: 'node was cordoned by kured-ts without a lock' },
        ctx.signal,
      );
    }
  }

  /** No slot held: is a reboot needed, allowed, and can we get a slot? */
  private async fresh(ctx: Ctx): Promise<Outcome> {
    const verdict = await this.sentinel(ctx);
    if (!verdict.required) return this.notNeeded(ctx, verdict);
    // Right after startUp's 'pending', the first tick does not report it again.
    const last = this.lastReported;
    const pending: Outcome = last?.kind === 'pending' ? last : { kind: 'pending', reason: 'reboot required' };
    if (pending !== last) await this.report(pending, ctx.signal);
    await this.addTaint(ctx);
    return ctx.acquire ? this.tryLock(ctx) : pending;
  }

  /** No reboot: our taint comes off (unless the sentinel failed: unknown is not "no"). */
  private async notNeeded(ctx: Ctx, verdict: SentinelVerdict): Promise<Outcome> {
    if (verdict.error === undefined) await this.removeTaint(ctx);
    this.clean = verdict.error === undefined || !this.hasTaint(ctx.node);
    return notRequired(verdict);
  }

  /** Reboot required and tainted: the window, the blockers, then a slot. */
  private async tryLock(ctx: Ctx): Promise<Outcome> {
    const now = this.deps.clock.now();
    if (!this.deps.window.contains(now)) return this.outsideWindow(now);
    const block = await firstBlock(this.deps.blockers, ctx.signal);
    if (block.blocked) return { kind: 'blocked', reason: block.reason, blocker: block.blocker };
    if (ctx.node.bootID === '') {
      return {
        kind: 'blocked',
        reason: 'node reports no bootID: a reboot could not be proven',
        blocker: 'node',
      };
    }
    const meta: LockMetadata = {
      unschedulable: ctx.node.unschedulable,
      bootID: ctx.node.bootID,
      attempts: 0,
    };
    const result = await this.deps.lock.acquire(meta, ctx.signal);
    if (!result.acquired) {
      return { kind: 'waiting-for-lock', reason: result.reason, holders: result.holders };
    }
    return this.startCycle(ctx, result.holder);
  }

  /** The sentinel's verdict, asked once per tick. */
  private async sentinel(ctx: Ctx): Promise<SentinelVerdict> {
    ctx.verdict ??= await this.deps.sentinel.rebootRequired(ctx.signal);
    return ctx.verdict;
  }

  private outsideWindow(now: Date): Outcome {
    const next = this.deps.window.next(now).change;
    const opens = next ? `; opens ${next.toISOString()}` : '';
    return {
      kind: 'outside-window',
      reason: `outside maintenance window ${this.deps.window.describe()}${opens}`,
    };
  }

  /** Just took the slot: labels, drain-delay, notify, then cordon and drain. */
  private async startCycle(ctx: Ctx, holder: LockHolder): Promise<Outcome> {
    const reason = `lock acquired by ${holder.nodeID}; cordoning and draining`;
    await this.report({ kind: 'draining', reason }, ctx.signal);
    if (Object.keys(this.config.preRebootNodeLabels).length > 0) {
      await this.deps.node.setLabels(this.config.preRebootNodeLabels, ctx.signal);
    }
    if (this.config.annotateNodes) {
      const now = this.deps.clock.now().toISOString();
      await this.deps.node.setAnnotations(
        { [KURED_IN_PROGRESS_ANNOTATION]: now, [KURED_REBOOT_NEEDED_ANNOTATION]: now },
        ctx.signal,
      );
    }
    if (this.config.drainDelayMs > 0) await this.deps.clock.sleep(this.config.drainDelayMs, ctx.signal);
    await this.notify('drain', this.config.messageTemplateDrain);
    return this.drainAndVerify(ctx, holder.metadata, 0);
  }

  /** We hold a slot: where in the cycle are we? The bootID tells whether the reboot happened. */
  private async continueHeld(ctx: Ctx, held: LockHolder): Promise<Outcome> {
    const meta = held.metadata;
    await this.adoptKuredCordon(ctx, meta);
    const recorded = meta.bootID ?? '';
    if (recorded !== '' && ctx.node.bootID !== '' && ctx.node.bootID !== recorded) {
      return this.postReboot(ctx, held);
    }
    return this.resume(ctx, meta);
  }

  /**
   * A slot recorded by kured (no bootID: e.g. during a migration) on a node it cordoned
   * (unschedulable: false): the cordon is the cycle's, so mark it ours to undo it like our own.
   */
  private async adoptKuredCordon(ctx: Ctx, meta: LockMetadata): Promise<void> {
    if (meta.bootID !== undefined || meta.unschedulable || !ctx.node.unschedulable || this.ours(ctx.node))
      return;
    await this.deps.node.setAnnotations({ [CORDONED_BY_ANNOTATION]: 'kured' }, ctx.signal);
    ctx.node.annotations[CORDONED_BY_ANNOTATION] = 'kured';
  }

  /**
   * Holding a slot on the same boot: a crash or a reboot that did not happen. Resume at the drain
   * (a no-op on a drained node) so that a crash mid-drain never leads to an undrained reboot.
   */
  private async resume(ctx: Ctx, meta: LockMetadata): Promise<Outcome> {
    const attempts = meta.attempts ?? 0;
    if (attempts >= this.config.rebootRetries) {
      return {
        kind: 'failed',
        reason:
          `bootID unchanged after ${attempts} reboot attempts; ` +
          'keeping the node cordoned and the lock until an operator intervenes',
      };
    }
    if (attempts === 0) {
      const cancelled = await this.cancelIfNoLongerRequired(ctx);
      if (cancelled) return cancelled;
    }
    const cordonedBefore = this.ours(ctx.node) || meta.unschedulable || attempts > 0;
    if (!ctx.node.unschedulable && cordonedBefore) return this.uncordonedMeanwhile(ctx, meta, 0);
    return this.drainAndVerify(ctx, meta, 0);
  }

  /** A slot taken for a reboot the sentinel no longer asks for (and none requested yet): give it back. */
  private async cancelIfNoLongerRequired(ctx: Ctx): Promise<Outcome | undefined> {
    const verdict = await this.sentinel(ctx);
    if (verdict.required || verdict.error !== undefined) return undefined;
    await this.undoCordon(ctx);
    await this.removeTaint(ctx);
    await this.deps.lock.release(ctx.signal);
    this.clean = true;
    return { kind: 'idle', reason: 'reboot no longer required; lock released' };
  }

  /** Cordon (unless already unschedulable), drain, wait --reboot-delay, re-verify, reboot. */
  private async drainAndVerify(ctx: Ctx, meta: LockMetadata, redrains: number): Promise<Outcome> {
    if (!ctx.node.unschedulable) {
      await this.deps.node.setAnnotations({ [CORDONED_BY_ANNOTATION]: 'kured-ts' }, ctx.signal);
      await this.deps.node.cordon(ctx.signal);
    }
    const drained = await this.deps.drainer.drain(ctx.signal);
    this.recordDrain(drained);
    if (!drained.ok && !this.config.forceReboot) return this.drainFailed(ctx, drained);
    if (this.config.rebootDelayMs > 0) await this.deps.clock.sleep(this.config.rebootDelayMs, ctx.signal);
    // Re-verify (kured #929): someone may have uncordoned the node or taken our slot meanwhile.
    ctx.node = await this.readNode(ctx.signal);
    const held = await this.deps.lock.holding(ctx.signal);
    if (!held) {
      await this.undoCordon(ctx);
      return { kind: 'aborted', reason: 'lock lost before the reboot; cordon undone' };
    }
    if (!ctx.node.unschedulable) return this.uncordonedMeanwhile(ctx, held.metadata, redrains);
    return this.reboot(ctx, held.metadata);
  }

  private recordDrain(result: DrainResult): void {
    const { metrics } = this.deps;
    metrics.observeDrain(result.durationMs / 1000);
    metrics.countEvictions('evicted', result.requests.evicted);
    metrics.countEvictions('refused', result.requests.refused);
    metrics.countEvictions('failed', result.requests.failed);
  }

  /** Uncordon (if we cordoned) BEFORE giving the slot back (kured #1129), then release. */
  private async drainFailed(ctx: Ctx, result: DrainResult): Promise<Outcome> {
    ctx.node = await this.readNode(ctx.signal);
    await this.undoCordon(ctx);
    await this.deps.lock.release(ctx.signal);
    const pods = result.pending.map((p) => `${p.pod} (${p.reason})`).join(', ');
    return { kind: 'drain-failed', reason: `drain failed: ${pods === '' ? 'unknown' : pods}` };
  }

  /** Someone else uncordoned our node before the reboot: leave it to them, or drain again. */
  private async uncordonedMeanwhile(ctx: Ctx, meta: LockMetadata, redrains: number): Promise<Outcome> {
    if (this.config.onUncordonedDuringDelay === 'redrain' && redrains < MAX_REDRAINS) {
      return this.drainAndVerify(ctx, meta, redrains + 1);
    }
    // Drop only our marker: the node stays as the other actor set it.
    if (this.ours(ctx.node)) {
      await this.deps.node.setAnnotations({ [CORDONED_BY_ANNOTATION]: null }, ctx.signal);
    }
    await this.deps.lock.release(ctx.signal);
    return {
      kind: 'aborted',
      reason: 'node was uncordoned by someone else before the reboot; lock released',
    };
  }

  /** Count the attempt in the lock first, so a reboot that never comes is noticed after restart. */
  private async reboot(ctx: Ctx, meta: LockMetadata): Promise<Outcome> {
    const attempts = (meta.attempts ?? 0) + 1;
    // A slot without a bootID (kured's) gets one now: the proof of the reboot needs it.
    await this.deps.lock.update({ ...meta, bootID: meta.bootID ?? ctx.node.bootID, attempts }, ctx.signal);
    const outcome: Outcome = {
      kind: 'rebooting',
      reason: `reboot attempt ${attempts} of ${this.config.rebootRetries} (bootID ${ctx.node.bootID})`,
    };
    await this.report(outcome, ctx.signal);
    await this.notify('reboot', this.config.messageTemplateReboot);
    try {
      await this.deps.rebooter.reboot(ctx.signal);
    } catch (err) {
      if (ctx.signal?.aborted) throw err;
      return { kind: 'failed', reason: `reboot request failed: ${errorText(err)}; will retry` };
    }
    return outcome;
  }

  /** The bootID changed: the readiness gate, then uncordon and release. */
  private async postReboot(ctx: Ctx, held: LockHolder): Promise<Outcome> {
    const now = this.deps.clock.now();
    let since = Date.parse(held.metadata.verifyingSince ?? '');
    if (Number.isNaN(since)) {
      since = now.getTime();
      await this.deps.lock.update({ ...held.metadata, verifyingSince: now.toISOString() }, ctx.signal);
    }
    const waiting = await this.readinessGaps(ctx);
    if (waiting.length === 0) return this.complete(ctx, held, undefined);
    const elapsed = now.getTime() - since;
    const what = waiting.join('; ');
    if (elapsed < this.config.postRebootTimeoutMs) {
      return { kind: 'verifying', reason: `bootID changed; waiting for ${what}` };
    }
    const after = formatDuration(this.config.postRebootTimeoutMs);
    if (this.config.onPostRebootTimeout === 'hold') {
      return { kind: 'holding', reason: `not ready ${after} after the reboot: ${what}; holding the lock` };
    }
    return this.complete(ctx, held, `not ready ${after} after the reboot: ${what}; releasing the lock`);
  }

  /** What the node still lacks to count as ready after the reboot; empty = ready. */
  private async readinessGaps(ctx: Ctx): Promise<string[]> {
    const gaps: string[] = [];
    for (const type of ['Ready', ...this.config.readinessGates]) {
      const condition = ctx.node.conditions.find((c) => c.type === type);
      if (condition?.status !== 'True') gaps.push(`condition ${type}=${condition?.status ?? 'absent'}`);
    }
    if (this.config.waitForDaemonSetPods) {
      const pods = await this.deps.node.daemonSetPodsReady(ctx.signal);
      if (!pods.ready) gaps.push(`DaemonSet pods not ready: ${pods.notReady.join(', ')}`);
    }
    return gaps;
  }

  /** Uncordon (only our cordon), taint off, labels, notify, release delay, release. */
  private async complete(ctx: Ctx, held: LockHolder, timedOut: string | undefined): Promise<Outcome> {
    const uncordoned = ctx.node.unschedulable && this.ours(ctx.node);
    await this.undoCordon(ctx);
    await this.removeTaint(ctx);
    if (Object.keys(this.config.postRebootNodeLabels).length > 0) {
      await this.deps.node.setLabels(this.config.postRebootNodeLabels, ctx.signal);
    }
    if (this.config.annotateNodes && ctx.node.annotations[KURED_IN_PROGRESS_ANNOTATION] !== undefined) {
      await this.deps.node.setAnnotations({ [KURED_IN_PROGRESS_ANNOTATION]: null }, ctx.signal);
    }
    await this.notify('uncordon', this.config.messageTemplateUncordon);
    if (this.config.lockReleaseDelayMs > 0) {
      await this.deps.clock.sleep(this.config.lockReleaseDelayMs, ctx.signal);
    }
    await this.deps.lock.release(ctx.signal);
    const durationMs = this.deps.clock.now().getTime() - held.created.getTime();
    if (timedOut !== undefined) return { kind: 'timed-out', reason: timedOut, uncordoned, durationMs };
    const reason = `bootID ${held.metadata.bootID ?? '?'} -> ${ctx.node.bootID}; node ready`;
    return { kind: 'completed', reason, uncordoned, durationMs };
  }

  // ---- small idempotent steps ---------------------------------------------------------------

  /** Uncordons only a cordon we made (our marker), then drops the marker. */
  private async undoCordon(ctx: Ctx): Promise<void> {
    if (!this.ours(ctx.node)) return;
    if (ctx.node.unschedulable) await this.deps.node.uncordon(ctx.signal);
    await this.deps.node.setAnnotations({ [CORDONED_BY_ANNOTATION]: null }, ctx.signal);
  }

  private hasTaint(node: NodeState): boolean {
    const key = this.config.preferNoScheduleTaint;
    return node.taints.some((t) => t.key === key && t.effect === 'PreferNoSchedule');
  }

  private async addTaint(ctx: Ctx): Promise<void> {
    const key = this.config.preferNoScheduleTaint;
    if (key !== '' && !this.hasTaint(ctx.node)) await this.deps.node.addTaint(key, ctx.signal);
  }

  private async removeTaint(ctx: Ctx): Promise<void> {
    const key = this.config.preferNoScheduleTaint;
    if (key !== '' && this.hasTaint(ctx.node)) await this.deps.node.removeTaint(key, ctx.signal);
  }

  private async notify(event: NotifyEvent, template: string): Promise<void> {
    const node = this.config.nodeId;
    try {
      await this.deps.notifier.notify(event, node, renderMessage(template, node));
    } catch (err) {
      this.deps.logger.warn('notification failed', { node, event, error: errorText(err) });
    }
  }

  // ---- derived effects ----------------------------------------------------------------------

  /** Status, Events, metrics and the log line of one outcome. Status write failures are logged. */
  private async report(outcome: Outcome, signal: AbortSignal | undefined): Promise<void> {
    this.lastReported = outcome;
    const fx = effectsOf(outcome);
    const { metrics, logger, events } = this.deps;
    const node = this.config.nodeId;
    logger[fx.level](fx.message, { node, outcome: outcome.kind, reason: outcome.reason });
    this.reportMetrics(outcome, fx.rebootResult);
    if (fx.lockHeld !== undefined) metrics.setLockHeld(fx.lockHeld);
    for (const e of fx.events) {
      await events.record(e.reason, outcome.reason, e.type);
    }
    if (fx.phase === undefined) return;
    metrics.setPhase(fx.phase);
    const now = this.deps.clock.now().toISOString();
    if (outcome.kind === 'completed') this.lastReboot = now;
    const status: NodeStatus = { phase: fx.phase, reason: outcome.reason, since: now, bootID: this.bootID };
    if (this.lastReboot !== undefined) status.lastReboot = this.lastReboot;
    const key = statusKey(status);
    if (key === this.statusWritten) return;
    try {
      this.statusWritten = undefined;
      await this.deps.node.setStatus(status, signal);
      this.statusWritten = key;
    } catch (err) {
      if (signal?.aborted) throw err;
      logger.warn('cannot write status', { node, error: errorText(err) });
    }
  }

  private reportMetrics(outcome: Outcome, result: Effects['rebootResult']): void {
    const { metrics } = this.deps;
    const first = outcome.kind !== this.lastKind;
    if (outcome.kind !== 'pending' && outcome.kind !== 'draining') this.lastKind = outcome.kind;
    if (outcome.kind === 'pending') metrics.setRebootRequired(true);
    if (outcome.kind === 'idle') metrics.setRebootRequired(false);
    if (outcome.kind === 'sentinel-error') metrics.countSentinelError();
    if (outcome.kind !== 'error') metrics.setBlocked(outcome.blocker);
    if (result !== undefined && first) metrics.countReboot(result);
    if (outcome.durationMs !== undefined) metrics.observeReboot(outcome.durationMs / 1000);
  }
}

type Effects = ReturnType<typeof effectsOf>;
