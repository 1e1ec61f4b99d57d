// The decision: one pass of DESIGN §1's reboot cycle, from what the cluster records.
//
// The cluster is the state: the lock slot, and on the Node the cycle record (src/node/cycle.ts) with
// its label, the cordon, the taint, bootID and conditions. Every pass that may act starts from a
// fresh read of both, so a fresh agent after a crash at any step, or a second agent for the same node
// (a DaemonSet rollout), continues from what the cluster records. The one thing kept in memory is
// `clean`: the last full read, and our own writes since, left no slot, taint or record of ours; only
// this node's agents write those, so while no reboot is required a clean agent asks only the
// sentinel: no API request.
//
// Orderings and guards that make that safe (each a hazard if changed):
// - the cycle record and its label are written in the same patch as our cordon, guarded by the
//   node's resourceVersion: a cordon of ours is never unmarked, a record never stands without its
//   cordon, and a cordon someone made after our last read is never taken for ours;
// - the record and our cordon go (in one guarded patch) BEFORE the slot is released, on every path;
// - the attempt is counted in the record (guarded) BEFORE the reboot request: a reboot that never
//   comes is noticed after a restart (bootID unchanged) and bounded by --reboot-retries, and of two
//   agents of one node only one requests the reboot of one boot;
// - a cycle on an unchanged boot resumes at the drain (a no-op on a drained node), never straight at
//   the reboot, so a crash mid-drain cannot lead to rebooting an undrained node;
// - a node whose slot was lost mid-cycle keeps its record and label (it still counts against
//   --concurrency, see DaemonSetLock), takes its slot back, and never uncordons before its readiness
//   gate passed; before any reboot request, losing the slot ends the cycle instead;
// - the post-reboot timeout starts at the record's verifyingSince, so a restart does not reset it.
import { firstBlock } from '../blockers/blocker.js';
import type { LockHolder, LockMetadata } from '../lock/lock.js';
import type { DrainResult } from '../drain/drainer.js';
import {
  KURED_IN_PROGRESS_ANNOTATION,
  KURED_REBOOT_NEEDED_ANNOTATION,
  NODE_PAUSE_ANNOTATION,
  type NodeState,
  type NodeWrite,
} from '../node/node.js';
import {
  CYCLE_ANNOTATION,
  CYCLE_LABEL,
  CYCLE_MANAGERS,
  formatCycle,
  parseCycle,
  type CycleRecord,
} from '../node/cycle.js';
import { APPROVAL_ANNOTATION, approvalCheck, type ApprovalVerdict } from '../node/approval.js';
import {
  HISTORY_ANNOTATION,
  cycleHistoryRecord,
  historyAnnotations,
  parseHistory,
  phaseDurations,
  type HistoryResult,
} from '../node/history.js';
import { renderMessage } from '../notify/message.js';
import type { NotifyEvent } from '../notify/notifier.js';
import type { SentinelVerdict } from '../sentinel/sentinel.js';
import { shortDuration } from '../text/duration.js';
import { errorText } from '../text/error-text.js';
import type { AgentConfig, AgentDeps } from './agent-config.js';
import type { Outcome } from './outcome.js';
import type { Reporter } from './report.js';

/** `redrain` gives up after this many uncordons by someone else in one cycle, then aborts. */
export const MAX_REDRAINS = 3;
/** Guarded node writes retried this many times when the node keeps changing under us. */
const GUARDED_WRITE_ATTEMPTS = 8;

/** What one pass works on: its signal, the latest read of the node, and the sentinel's answer once asked. */
interface Ctx {
  signal: AbortSignal | undefined;
  node: NodeState;
  /** false at start-up: stop after the taint, before the window, blockers and the lock attempt. */
  acquire: boolean;
  verdict?: SentinelVerdict;
  /** When this pass's drain finished (for the reboot history). */
  drainedAt?: string;
  /** The lock names this node, but no cycle of ours proves that slot: it is asked for anew. */
  unproven?: boolean;
}

/** Before the lock: what `decideBeforeLock` needs to know (also what `kured-ts check` shows). */
export interface BeforeLock {
  /** The sentinel's answer. */
  verdict: SentinelVerdict;
  /** Inside the maintenance window now? With the window's description and next change. */
  window: { inside: boolean; describe: string; next: Date | undefined };
  /** The first blocker that blocks, if any. */
  block: { blocked: false } | { blocked: true; blocker: string; reason: string };
  /** The node's bootID ('' = unknown). */
  bootID: string;
  /** Under --require-approval, the node's approval as judged now; absent without it. */
  approval?: ApprovalVerdict;
}

/**
 * The pre-lock decision, pure: no reboot, outside the window, blocked, or undefined (go for a slot).
 * The agent and `kured-ts check` both take it from here.
 */
export function decideBeforeLock(b: BeforeLock): Outcome | undefined {
  if (!b.verdict.required) return notRequired(b.verdict);
  if (!b.window.inside) {
    const opens = b.window.next ? `; opens ${b.window.next.toISOString()}` : '';
    return { kind: 'outside-window', reason: `outside maintenance window ${b.window.describe}${opens}` };
  }
  if (b.block.blocked) return { kind: 'blocked', reason: b.block.reason, blocker: b.block.blocker };
  if (b.bootID === '') {
    return {
      kind: 'blocked',
      reason: 'node reports no bootID: a reboot could not be proven',
      blocker: 'node',
    };
  }
  if (b.approval?.approved === false) return { kind: 'awaiting-approval', reason: b.approval.reason };
  return undefined;
}

export function notRequired(verdict: SentinelVerdict): Outcome {
  return verdict.error === undefined
    ? { kind: 'idle', reason: 'reboot not required' }
    : { kind: 'sentinel-error', reason: verdict.error };
}

/**
 * The write that ends a cycle on `node`: the record and its label go (when still there), with
 * `extra`, and our cordon when it is still ours: we made it, nobody else owns it since, and the node
 * is not paused (an operator's way to keep it cordoned). undefined: nothing to write.
 */
function endOfCycle(node: NodeState, record: CycleRecord, extra: CycleEnd): NodeWrite | undefined {
  const stillOurs =
    node.annotations[CYCLE_ANNOTATION] !== undefined || node.labels[CYCLE_LABEL] !== undefined;
  const change: NodeWrite = {
    labels: { ...extra.labels, ...(stillOurs ? { [CYCLE_LABEL]: null } : {}) },
    annotations: { ...extra.annotations, ...(stillOurs ? { [CYCLE_ANNOTATION]: null } : {}) },
  };
  if (stillOurs && ourCordon(node, record)) change.unschedulable = false;
  const keys = Object.keys(change.labels ?? {}).length + Object.keys(change.annotations ?? {}).length;
  return keys === 0 ? undefined : change;
}

/** Is the node's cordon ours to lift: we made it, nobody else owns it since, the node is not paused? */
function ourCordon(node: NodeState, record: CycleRecord): boolean {
  const paused = node.annotations[NODE_PAUSE_ANNOTATION] === 'true';
  return record.cordoned && node.unschedulable && !foreignCordon(node) && !paused;
}

/** Does anyone but us (or kured, during a migration) own the node's cordon as it is now? */
function foreignCordon(node: NodeState): boolean {
  return node.unschedulableOwners.some((owner) => !CYCLE_MANAGERS.includes(owner));
}

/** What the write that ends a cycle adds: labels, and annotations to set or (null) remove. */
interface CycleEnd {
  labels?: Record<string, string>;
  annotations?: Record<string, string | null>;
}

export class Decision {
  /**
   * No slot, taint or cycle record of ours on the cluster, as the last full read and our writes since
   * left it (see the file comment). Only a pass ending idle sets it.
   */
  private clean = false;
  /** Do we hold a slot, as far as we know? The agent renews the slot's lease while this is true. */
  holdsSlot = false;
  /** When this agent first saw the current reboot required (for the history); cleared when none is. */
  private requiredAt: string | undefined;

  constructor(
    private readonly config: AgentConfig,
    private readonly deps: AgentDeps,
    private readonly reporter: Reporter,
  ) {}

  async decide(signal: AbortSignal | undefined, acquire: boolean): Promise<Outcome> {
    // Clean and no reboot required: nothing of ours to undo, so nothing to read.
    const verdict = this.clean ? await this.deps.sentinel.rebootRequired(signal) : undefined;
    if (verdict !== undefined && !verdict.required) return notRequired(verdict);
    this.clean = false;
    const ctx: Ctx = { signal, node: await this.readNode(signal), acquire };
    if (verdict !== undefined) ctx.verdict = verdict;
    const held = await this.deps.lock.holding(signal);
    const record = parseCycle(ctx.node.annotations[CYCLE_ANNOTATION]);
    // An entry in the lock proves nothing by itself (DESIGN §12): only with our own cycle record.
    this.holdsSlot = held !== undefined && record !== undefined;
    if (held && record) return this.continueHeld(ctx, record);
    if (record) return this.withoutSlot(ctx, record);
    if (held) return this.heldWithoutCycle(ctx, held);
    return this.fresh(ctx);
  }

  private async readNode(signal: AbortSignal | undefined): Promise<NodeState> {
    const node = await this.deps.node.get(signal);
    this.reporter.noteNode(node);
    return node;
  }

  // ---- before the lock -----------------------------------------------------------------------

  /** No slot and no cycle: is a reboot needed, allowed, and can we get a slot? */
  private async fresh(ctx: Ctx): Promise<Outcome> {
    const verdict = await this.sentinel(ctx);
    if (!verdict.required) return this.notNeeded(ctx, verdict);
    this.requiredAt ??= this.deps.clock.now().toISOString();
    // Right after startUp's 'pending', the first pass does not report it again.
    const last = this.reporter.last;
    const pending: Outcome = last?.kind === 'pending' ? last : { kind: 'pending', reason: 'reboot required' };
    if (pending !== last) await this.reporter.report(pending, ctx.signal);
    if (this.config.taintTiming === 'required') await this.addTaint(ctx);
    return ctx.acquire ? this.tryLock(ctx, verdict) : pending;
  }

  /** No reboot: our taint comes off (unless the sentinel failed: unknown is not "no"). */
  private async notNeeded(ctx: Ctx, verdict: SentinelVerdict): Promise<Outcome> {
    if (verdict.error === undefined) {
      this.requiredAt = undefined;
      await this.removeTaint(ctx);
    }
    this.clean = verdict.error === undefined || !this.hasTaint(ctx.node);
    return notRequired(verdict);
  }

  /** Reboot required and tainted: the window, the blockers, then a slot. */
  private async tryLock(ctx: Ctx, verdict: SentinelVerdict): Promise<Outcome> {
    const now = this.deps.clock.now();
    const { window } = this.deps;
    const inside = window.contains(now);
    const before: BeforeLock = {
      verdict,
      window: { inside, describe: window.describe(), next: inside ? undefined : window.next(now).change },
      block: inside ? await firstBlock(this.deps.blockers, ctx.signal) : { blocked: false },
      bootID: ctx.node.bootID,
      // an approval's time is the server's (kured-ts approve writes it so): judged on the server's clock
      ...approvalCheck(
        this.config,
        { name: this.config.nodeId, annotations: ctx.node.annotations },
        this.deps.serverTime?.at(now) ?? now,
      ),
    };
    const early = decideBeforeLock(before);
    if (early) {
      // an entry naming us that no cycle of ours proves holds no slot back from the others meanwhile
      if (ctx.unproven === true) await this.release(ctx);
      return early;
    }
    // kured's timing: the taint goes on once nothing blocks the reboot, as the node waits for a slot.
    if (this.config.taintTiming === 'unblocked') await this.addTaint(ctx);
    const meta: LockMetadata = {
      unschedulable: ctx.node.unschedulable,
      bootID: ctx.node.bootID,
      ...this.groupOf(ctx.node),
    };
    const result = await this.deps.lock.acquire(meta, ctx.signal);
    if (!result.acquired) {
      return { kind: 'waiting-for-lock', reason: result.reason, holders: result.holders };
    }
    this.holdsSlot = true;
    return this.startCycle(ctx, result.holder);
  }

  /** The sentinel's verdict, asked once per pass. */
  private async sentinel(ctx: Ctx): Promise<SentinelVerdict> {
    ctx.verdict ??= await this.deps.sentinel.rebootRequired(ctx.signal);
    return ctx.verdict;
  }

  // ---- the cycle -----------------------------------------------------------------------------

  /** Just took the slot: labels, drain-delay, notify, then the cycle record with our cordon, and the drain. */
  private async startCycle(ctx: Ctx, holder: LockHolder): Promise<Outcome> {
    const reason = `lock acquired by ${holder.nodeID}; cordoning and draining`;
    await this.reporter.report({ kind: 'draining', reason }, ctx.signal);
    const labels = this.config.preRebootNodeLabels;
    const annotations: Record<string, string> = {};
    if (this.config.annotateNodes) {
      const now = this.deps.clock.now().toISOString();
      annotations[KURED_IN_PROGRESS_ANNOTATION] = now;
      annotations[KURED_REBOOT_NEEDED_ANNOTATION] = now;
    }
    if (Object.keys(labels).length + Object.keys(annotations).length > 0) {
      await this.deps.node.write({ labels, annotations }, undefined, ctx.signal);
    }
    if (this.config.drainDelayMs > 0) await this.deps.clock.sleep(this.config.drainDelayMs, ctx.signal);
    await this.notify('drain', this.config.messageTemplateDrain);
    const record = await this.beginCycle(ctx, { started: holder.created });
    return this.drainAndVerify(ctx, record, 0);
  }

  /**
   * Writes the cycle record and label, and our cordon when the node is schedulable, in one patch
   * guarded by the resourceVersion of a fresh read: a cordon someone made meanwhile (during
   * --drain-delay, say) is seen and stays theirs. Another agent of this node may have begun the
   * cycle already: then its record is the one.
   */
  private async beginCycle(ctx: Ctx, from: { started: Date; kured?: boolean }): Promise<CycleRecord> {
    for (let attempt = 1; attempt <= GUARDED_WRITE_ATTEMPTS; attempt++) {
      ctx.node = await this.readNode(ctx.signal);
      const existing = parseCycle(ctx.node.annotations[CYCLE_ANNOTATION]);
      if (existing) return existing;
      const record: CycleRecord = {
        bootID: ctx.node.bootID,
        // kured records its own cordon as unschedulable: false; adopted, it is undone like ours
        cordoned: from.kured === true || !ctx.node.unschedulable,
        attempts: 0,
        started: from.started.toISOString(),
        ...(this.deps.agentId === undefined ? {} : { agent: this.deps.agentId }),
        ...(this.requiredAt === undefined ? {} : { requiredAt: this.requiredAt }),
        kernel: ctx.node.kernelVersion ?? '',
        osImage: ctx.node.osImage ?? '',
      };
      const change: NodeWrite = {
        labels: { [CYCLE_LABEL]: 'true' },
        annotations: { [CYCLE_ANNOTATION]: formatCycle(record) },
      };
      if (!ctx.node.unschedulable) change.unschedulable = true;
      const written = await this.deps.node.write(change, ctx.node.resourceVersion, ctx.signal);
      if (written) {
        ctx.node = written;
        return record;
      }
    }
    throw new Error(`node ${this.config.nodeId} kept changing while the reboot cycle began`);
  }

  /** We hold a slot: where in the cycle are we? The record's bootID tells whether the reboot happened. */
  private async continueHeld(ctx: Ctx, record: CycleRecord): Promise<Outcome> {
    if (ctx.node.labels[CYCLE_LABEL] === undefined) return this.released(ctx, record);
    if (this.rebooted(ctx.node, record)) return this.postReboot(ctx, record);
    return this.resume(ctx, record);
  }

  private rebooted(node: NodeState, record: CycleRecord): boolean {
    return record.bootID !== '' && node.bootID !== '' && node.bootID !== record.bootID;
  }

  /**
   * The lock names this node, and no cycle record of ours proves it: a crash between taking the slot
   * and beginning the cycle, a slot kured took for this node (a migration), or an entry written by
   * hand or with a stolen token. It is no slot until asked for anew: through the window, the
   * blockers and a count of the other slots and the nodes in a cycle, as a new acquisition. kured's
   * cordon (kured records unschedulable: false) is the cycle's: adopted as ours, to be undone like ours.
   */
  private async heldWithoutCycle(ctx: Ctx, held: LockHolder): Promise<Outcome> {
    const kured =
      held.metadata.bootID === undefined && !held.metadata.unschedulable && ctx.node.unschedulable;
    if (!kured) {
      const cancelled = await this.cancelIfNoLongerRequired(ctx, undefined);
      if (cancelled) return cancelled;
      ctx.unproven = true;
      return this.fresh(ctx);
    }
    const result = await this.deps.lock.acquire(this.kuredMeta(ctx.node), ctx.signal, { inCycle: false });
    if (!result.acquired) {
      return { kind: 'waiting-for-lock', reason: result.reason, holders: result.holders };
    }
    this.holdsSlot = true;
    const record = await this.beginCycle(ctx, { started: held.created, kured });
    const cancelled = await this.cancelIfNoLongerRequired(ctx, record);
    return cancelled ?? this.drainAndVerify(ctx, record, 0);
  }

  /**
   * Holding a slot on the same boot: a crash, a second agent, or a reboot that did not happen. Resume
   * at the drain (a no-op on a drained node) so that a crash mid-drain never leads to an undrained reboot.
   */
  private async resume(ctx: Ctx, record: CycleRecord): Promise<Outcome> {
    if (record.attempts >= this.config.rebootRetries) {
      await this.recordFailure(ctx, record);
      return {
        kind: 'failed',
        reason:
          `bootID unchanged after ${record.attempts} reboot attempts; ` +
          'keeping the node cordoned and the lock until an operator intervenes',
      };
    }
    if (record.attempts === 0) {
      const cancelled = await this.cancelIfNoLongerRequired(ctx, record);
      if (cancelled) return cancelled;
    }
    if (record.cordoned && !ctx.node.unschedulable) return this.uncordonedMeanwhile(ctx, record, 0);
    return this.drainAndVerify(ctx, record, 0);
  }

  /** A cycle before any reboot request whose reboot the sentinel no longer asks for: end it. */
  private async cancelIfNoLongerRequired(
    ctx: Ctx,
    record: CycleRecord | undefined,
  ): Promise<Outcome | undefined> {
    const verdict = await this.sentinel(ctx);
    if (verdict.required || verdict.error !== undefined) return undefined;
    if (record) await this.endCycle(ctx, record, {});
    await this.removeTaint(ctx);
    await this.release(ctx);
    this.deps.logger.info('reboot no longer required; cycle ended, lock released', {
      node: this.config.nodeId,
    });
    this.clean = true;
    return notRequired(verdict);
  }

  /** Drain (checking the slot between rounds), wait --reboot-delay, re-verify, reboot. */
  private async drainAndVerify(ctx: Ctx, record: CycleRecord, redrains: number): Promise<Outcome> {
    const drained = await this.deps.drainer.drain(ctx.signal, {
      onEviction: (outcome) => {
        this.deps.metrics.countEvictions(outcome, 1);
      },
      keepGoing: () => this.slotStillOurs(ctx, record),
    });
    this.deps.metrics.observeDrain(drained.durationMs / 1000);
    ctx.drainedAt = this.deps.clock.now().toISOString();
    if (drained.stopped !== undefined && !this.holdsSlot) {
      return this.abortBeforeReboot(ctx, record, `drain stopped: ${drained.stopped}`);
    }
    if (!drained.ok && !this.config.forceReboot) return this.drainFailed(ctx, record, drained);
    if (this.config.rebootDelayMs > 0) await this.deps.clock.sleep(this.config.rebootDelayMs, ctx.signal);
    return this.verifyAndReboot(ctx, record, redrains);
  }

  /** Re-verify (kured #929): the slot still ours, the node still cordoned, and by us alone; then reboot. */
  private async verifyAndReboot(ctx: Ctx, record: CycleRecord, redrains: number): Promise<Outcome> {
    ctx.node = await this.readNode(ctx.signal);
    const lost = await this.slotStillOurs(ctx, record);
    if (lost !== undefined) return this.abortBeforeReboot(ctx, record, `${lost} before the reboot`);
    const current = parseCycle(ctx.node.annotations[CYCLE_ANNOTATION]) ?? record;
    const overtaken = this.overtaken(ctx.node, record, current);
    if (overtaken !== undefined) return overtaken;
    if (!ctx.node.unschedulable) return this.uncordonedMeanwhile(ctx, current, redrains);
    if (current.cordoned && foreignCordon(ctx.node) && redrains < MAX_REDRAINS) {
      // Someone uncordoned and cordoned again meanwhile: pods may have landed in between, and the
      // cordon is theirs now (it stays after the reboot). Drain again before rebooting.
      const handed = await this.writeRecord(ctx, { ...current, cordoned: false });
      return this.drainAndVerify(ctx, handed, redrains + 1);
    }
    return this.reboot(ctx, current);
  }

  /**
   * Another agent of this node (a rollout overlap) requested the reboot of this boot while we waited,
   * or the node already rebooted: not again. One reboot per boot, whoever asks for it.
   */
  private overtaken(node: NodeState, mine: CycleRecord, current: CycleRecord): Outcome | undefined {
    if (current.attempts <= mine.attempts && !this.rebooted(node, current)) return undefined;
    return {
      kind: 'rebooting',
      reason: `the reboot of boot ${current.bootID} was requested by another agent of this node (attempt ${current.attempts}); not requesting it again`,
    };
  }

  /**
   * undefined while we hold our slot (taking it back when it was lost: no other node can have taken
   * it while our cycle label stood), else why not. For the drain's keepGoing and the re-verify.
   */
  private async slotStillOurs(ctx: Ctx, record: CycleRecord): Promise<string | undefined> {
    if (await this.deps.lock.holding(ctx.signal)) return undefined;
    const result = await this.deps.lock.acquire(this.metaOf(ctx.node, record), ctx.signal, {
      inCycle: true,
    });
    this.holdsSlot = result.acquired;
    if (result.acquired) {
      this.deps.logger.warn('lock slot lost and taken back', { node: this.config.nodeId });
      return undefined;
    }
    return `lock slot lost (${result.reason})`;
  }

  /** kured's slot for this node, taken over: kured's cordon counts as the cycle's. */
  private kuredMeta(node: NodeState): LockMetadata {
    return { unschedulable: false, bootID: node.bootID, ...this.groupOf(node) };
  }

  private metaOf(node: NodeState, record: CycleRecord): LockMetadata {
    return {
      unschedulable: !record.cordoned && node.unschedulable,
      bootID: record.bootID,
      ...this.groupOf(node),
    };
  }

  /** With --group-concurrency: the node's group (its --group-label value, '' without one) for the lock. */
  private groupOf(node: NodeState): { group?: string } {
    if (this.config.groupConcurrency === 0) return {};
    return { group: node.labels[this.config.groupLabel] ?? '' };
  }

  /** Uncordon (if we cordoned) and end the cycle BEFORE giving the slot back (kured #1129). */
  private async drainFailed(ctx: Ctx, record: CycleRecord, result: DrainResult): Promise<Outcome> {
    await this.endCycle(ctx, record, (node) => ({ annotations: this.history(node, record, 'drain-failed') }));
    await this.release(ctx);
    const pods = result.pending.map((p) => `${p.pod} (${p.reason})`).join(', ');
    return { kind: 'drain-failed', reason: `drain failed: ${pods === '' ? 'unknown' : pods}` };
  }

  /**
   * The slot is gone for good before the reboot: end the cycle (our cordon goes) and release. Unless
   * a reboot was requested before on this boot (it might still come): then the node stays cordoned
   * and keeps counting until it can take a slot again.
   */
  private async abortBeforeReboot(ctx: Ctx, record: CycleRecord, why: string): Promise<Outcome> {
    if (record.attempts > 0) {
      return {
        kind: 'lock-lost',
        reason: `reboot requested (attempt ${record.attempts}) but not done; ${why}; the node stays cordoned until it can take a slot`,
      };
    }
    await this.endCycle(ctx, record, {});
    await this.release(ctx);
    return { kind: 'aborted', reason: `${why}; cycle ended, cordon undone` };
  }

  /** Someone else uncordoned our node before the reboot: leave it to them, or drain again. */
  private async uncordonedMeanwhile(ctx: Ctx, record: CycleRecord, redrains: number): Promise<Outcome> {
    if (this.config.onUncordonedDuringDelay === 'redrain' && redrains < MAX_REDRAINS) {
      const cordoned = await this.deps.node.write(
        { unschedulable: true },
        ctx.node.resourceVersion,
        ctx.signal,
      );
      if (cordoned === undefined) return this.verifyAndReboot(ctx, record, redrains + 1);
      ctx.node = cordoned;
      return this.drainAndVerify(ctx, record, redrains + 1);
    }
    // The node stays as the other actor set it; only our record goes.
    await this.endCycle(ctx, { ...record, cordoned: false }, {});
    await this.release(ctx);
    return {
      kind: 'aborted',
      reason: 'node was uncordoned by someone else before the reboot; lock released',
    };
  }

  /**
   * Counts the attempt in the record first (guarded: of two agents of this node, one requests the
   * reboot of this boot), so a reboot that never comes is noticed after a restart.
   */
  private async reboot(ctx: Ctx, record: CycleRecord): Promise<Outcome> {
    const attempts = record.attempts + 1;
    const counted = await this.deps.node.write(
      {
        annotations: {
          [CYCLE_ANNOTATION]: formatCycle({
            ...record,
            attempts,
            rebootRequestedAt: this.deps.clock.now().toISOString(),
            ...(ctx.drainedAt === undefined ? {} : { drainedAt: ctx.drainedAt }),
          }),
        },
      },
      ctx.node.resourceVersion,
      ctx.signal,
    );
    const reason = `reboot attempt ${attempts} of ${this.config.rebootRetries} (bootID ${ctx.node.bootID})`;
    if (!counted) {
      return {
        kind: 'rebooting',
        reason: `${reason}: the node changed meanwhile (another agent of it?); looking again`,
      };
    }
    ctx.node = counted;
    const outcome: Outcome = { kind: 'rebooting', reason };
    await this.reporter.report(outcome, ctx.signal);
    await this.notify('reboot', this.config.messageTemplateReboot);
    try {
      await this.deps.rebooter.reboot(ctx.signal);
    } catch (err) {
      if (ctx.signal?.aborted) throw err;
      return { kind: 'failed', reason: `reboot request failed: ${errorText(err)}; will retry` };
    }
    return outcome;
  }

  // ---- after the reboot ----------------------------------------------------------------------

  /** The bootID changed: the readiness gate, then uncordon and release. */
  private async postReboot(ctx: Ctx, record: CycleRecord): Promise<Outcome> {
    const now = this.deps.clock.now();
    let since = Date.parse(record.verifyingSince ?? '');
    if (Number.isNaN(since)) {
      since = now.getTime();
      record = await this.writeRecord(ctx, { ...record, verifyingSince: now.toISOString() });
    }
    const waiting = await this.readinessGaps(ctx);
    if (waiting.length === 0) return this.complete(ctx, record, undefined);
    const what = waiting.join('; ');
    if (now.getTime() - since < this.config.postRebootTimeoutMs) {
      return { kind: 'verifying', reason: `bootID changed; waiting for ${what}` };
    }
    const after = shortDuration(this.config.postRebootTimeoutMs);
    if (this.config.onPostRebootTimeout === 'hold') {
      return { kind: 'holding', reason: `not ready ${after} after the reboot: ${what}; holding the lock` };
    }
    return this.complete(ctx, record, `not ready ${after} after the reboot: ${what}; releasing the lock`);
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

  /** Our cordon off (unless someone else's or the node is paused), record and taint off, labels, release. */
  private async complete(ctx: Ctx, record: CycleRecord, timedOut: string | undefined): Promise<Outcome> {
    const uncordoned = await this.endCycle(ctx, record, (node) => {
      const annotations: Record<string, string | null> = {
        ...this.history(node, record, timedOut === undefined ? 'success' : 'timeout'),
      };
      if (this.config.annotateNodes && node.annotations[KURED_IN_PROGRESS_ANNOTATION] !== undefined) {
        annotations[KURED_IN_PROGRESS_ANNOTATION] = null;
      }
      // An approval is for one reboot: this one used it.
      if (node.annotations[APPROVAL_ANNOTATION] !== undefined) annotations[APPROVAL_ANNOTATION] = null;
      return { labels: this.config.postRebootNodeLabels, annotations };
    });
    this.requiredAt = undefined;
    this.observePhases(ctx, record);
    await this.removeTaint(ctx);
    await this.notify('uncordon', this.config.messageTemplateUncordon);
    if (this.config.lockReleaseDelayMs > 0) {
      await this.deps.clock.sleep(this.config.lockReleaseDelayMs, ctx.signal);
    }
    await this.release(ctx);
    const started = Date.parse(record.started);
    const durationMs = Number.isNaN(started) ? 0 : this.deps.clock.now().getTime() - started;
    if (timedOut !== undefined) return { kind: 'timed-out', reason: timedOut, uncordoned, durationMs };
    const reason = `bootID ${record.bootID} -> ${ctx.node.bootID}; node ready`;
    return { kind: 'completed', reason, uncordoned, durationMs };
  }

  // ---- a cycle without its slot ----------------------------------------------------------------

  /**
   * Our cycle record, and no slot: the lock annotation was deleted, rewritten or expired while the
   * node was down or busy, or an operator released the node (label removed). The node still counts
   * against --concurrency while its label stands (DaemonSetLock), so it takes its slot back; it
   * never uncordons before the readiness gate passed.
   */
  private async withoutSlot(ctx: Ctx, record: CycleRecord): Promise<Outcome> {
    if (ctx.node.labels[CYCLE_LABEL] === undefined) return this.released(ctx, record);
    const rebooted = this.rebooted(ctx.node, record);
    if (!rebooted && record.attempts === 0) {
      const cancelled = await this.cancelIfNoLongerRequired(ctx, record);
      if (cancelled) return cancelled;
    }
    const result = await this.deps.lock.acquire(this.metaOf(ctx.node, record), ctx.signal, {
      inCycle: true,
    });
    if (result.acquired) {
      this.holdsSlot = true;
      this.deps.logger.warn('lock slot lost and taken back', { node: this.config.nodeId });
      return this.continueHeld(ctx, record);
    }
    const why = `lock slot lost (${result.reason})`;
    if (rebooted) {
      const waiting = await this.readinessGaps(ctx);
      if (waiting.length === 0) return this.complete(ctx, record, undefined);
      return { kind: 'lock-lost', reason: `rebooted, waiting for ${waiting.join('; ')}; ${why}` };
    }
    return this.abortBeforeReboot(ctx, record, why);
  }

  /**
   * An operator removed our cycle label: the node is theirs now. Our record goes (the cordon stays as
   * it is), and our slot too; a reboot still required starts a new cycle later.
   */
  private async released(ctx: Ctx, record: CycleRecord): Promise<Outcome> {
    await this.endCycle(ctx, { ...record, cordoned: false }, {});
    await this.release(ctx);
    return {
      kind: 'released',
      reason: `released by an operator (label ${CYCLE_LABEL} removed): the node is left as it is${ctx.node.unschedulable ? ' (cordoned)' : ''}`,
    };
  }

  // ---- small idempotent steps ---------------------------------------------------------------

  /**
   * Ends the cycle on the node in one guarded patch: the record and its label go, with `extra`, and
   * our cordon when it is still ours (we made it, nobody else owns it since, the node is not paused).
   * Resolves to whether we uncordoned.
   */
  private async endCycle(
    ctx: Ctx,
    record: CycleRecord,
    extra: CycleEnd | ((node: NodeState) => CycleEnd),
  ): Promise<boolean> {
    for (let attempt = 1; attempt <= GUARDED_WRITE_ATTEMPTS; attempt++) {
      const change = endOfCycle(ctx.node, record, typeof extra === 'function' ? extra(ctx.node) : extra);
      if (change === undefined) return false;
      const written = await this.deps.node.write(change, ctx.node.resourceVersion, ctx.signal);
      if (written) {
        ctx.node = written;
        return change.unschedulable === false;
      }
      ctx.node = await this.readNode(ctx.signal);
    }
    throw new Error(`node ${this.config.nodeId} kept changing while the reboot cycle ended`);
  }

  /** Rewrites the record (guarded; re-read and rewritten on a conflict). */
  private async writeRecord(ctx: Ctx, record: CycleRecord): Promise<CycleRecord> {
    for (let attempt = 1; attempt <= GUARDED_WRITE_ATTEMPTS; attempt++) {
      const written = await this.deps.node.write(
        { annotations: { [CYCLE_ANNOTATION]: formatCycle(record) } },
        ctx.node.resourceVersion,
        ctx.signal,
      );
      if (written) {
        ctx.node = written;
        return record;
      }
      ctx.node = await this.readNode(ctx.signal);
    }
    throw new Error(`node ${this.config.nodeId} kept changing while its cycle record was written`);
  }

  /** The history annotation with this cycle appended ({} with --history-limit 0). */
  private history(node: NodeState, record: CycleRecord, result: HistoryResult): Record<string, string> {
    const entry = cycleHistoryRecord(node, record, result, this.deps.clock.now().toISOString());
    return historyAnnotations(node.annotations, entry, this.config.historyLimit);
  }

  /**
   * A cycle given up on (the boot never changed) stays where it is for an operator, but goes into
   * the history once (guarded; a later pass retries a write the node's changes refused).
   */
  private async recordFailure(ctx: Ctx, record: CycleRecord): Promise<void> {
    if (this.config.historyLimit === 0) return;
    const last = parseHistory(ctx.node.annotations[HISTORY_ANNOTATION]).at(-1);
    if (last?.lockedAt === record.started && last.result === 'failed') return;
    const written = await this.deps.node.write(
      { annotations: this.history(ctx.node, record, 'failed') },
      ctx.node.resourceVersion,
      ctx.signal,
    );
    if (written) ctx.node = written;
  }

  /** kured_ts_phase_duration_seconds for a finished cycle. */
  private observePhases(ctx: Ctx, record: CycleRecord): void {
    const entry = cycleHistoryRecord(ctx.node, record, 'success', this.deps.clock.now().toISOString());
    const durations = phaseDurations(entry);
    for (const [phase, seconds] of Object.entries(durations)) this.deps.metrics.observePhase(phase, seconds);
  }

  private async release(ctx: Ctx): Promise<void> {
    await this.deps.lock.release(ctx.signal);
    this.holdsSlot = false;
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
}
