// One pass of the decision: what it works on (the latest read of the node, the sentinel's answer
// once asked), what the agent keeps between passes, and the small idempotent steps every phase uses:
// the one guarded node write, the taint, the slot, notifications.
import { needOf } from './need.js';
import type { AcquireResult, LockHolder, LockMetadata } from '../../lock/lock.js';
import type { HeldSlot } from '../../lock/held-slot.js';
import type { NodeState, NodeWrite } from '../../node/node.js';
import { CYCLE_ANNOTATION, formatCycle, type CycleRecord } from '../../node/cycle.js';
import { cycleHistoryRecord, historyAnnotations, type HistoryResult } from '../../node/history.js';
import { renderMessage } from '../../notify/message.js';
import { groupOf, roleOf } from './acquisition.js';
import type { NotifyEvent } from '../../notify/notifier.js';
import { rebootRequestOf, type RebootRequest } from '../../node/reboot-request.js';
import type { SentinelVerdict } from '../../sentinel/sentinel.js';
import { errorText } from '../../text/error-text.js';
import type { AgentConfig, AgentDeps } from '../agent-config.js';
import type { Outcome } from '../outcome.js';
import { keepIn, type Memory, type MemoryChange } from './memory.js';
import { cycleFacts, type CycleFacts } from './phase.js';

/** Guarded node writes retried this many times when the node keeps changing under us. */
const GUARDED_WRITE_ATTEMPTS = 8;

/** Where the decision reports progress mid-pass ('pending', 'draining', 'rebooting') and each read. */
export interface Progress {
  /** Reports an outcome as it stands, before the pass ends. */
  report(outcome: Outcome, signal: AbortSignal | undefined): Promise<void>;
  /**
   * The status annotation `outcome` writes, to ride in the node write the caller makes next (one
   * write per step, not two: issue 42). report(outcome) afterwards records its Events, metrics and
   * log, and writes the status itself only if that write did not carry it (noteNode of its answer).
   */
  carry(outcome: Outcome): Record<string, string>;
  /** The last outcome reported, progress included. */
  readonly last: Outcome | undefined;
  /** A fresh read of the node (its bootID and the status it carries). */
  noteNode(node: NodeState): void;
  /** Since when the current reboot has been required (RFC 3339; kept in the status across restarts). */
  readonly requiredSince: string | undefined;
}

/** What every pass is built from. */
export interface PassEnv {
  config: AgentConfig;
  deps: AgentDeps;
  progress: Progress;
  /** The one owner of "do we hold a slot" (the lease keeper renews what it says is held). */
  slot: HeldSlot;
  /** What the agent keeps between passes; changed only through Pass.remember (memory.ts). */
  memory: Memory;
}

export class Pass {
  /** The latest read (or write) of the node. */
  node: NodeState;
  /** The sentinel's answer (the host's alone), once asked. */
  verdict: SentinelVerdict | undefined;

  constructor(
    readonly env: PassEnv,
    readonly signal: AbortSignal | undefined,
    node: NodeState,
    /** false at start-up: stop after the taint, before the window, blockers and the lock attempt. */
    readonly acquire: boolean,
  ) {
    this.node = node;
  }

  get config(): AgentConfig {
    return this.env.config;
  }

  /** What the agent keeps between passes, as it stands. */
  get memory(): Memory {
    return this.env.memory;
  }

  /** Keeps `change` for the passes that follow (the one writer of the memory: memory.ts). */
  remember(change: MemoryChange): void {
    keepIn(this.env, change);
  }

  get deps(): AgentDeps {
    return this.env.deps;
  }

  /** Now, as an RFC 3339 time. */
  now(): string {
    return this.deps.clock.now().toISOString();
  }

  async readNode(): Promise<NodeState> {
    this.node = await this.deps.node.get(this.signal);
    this.env.progress.noteNode(this.node);
    return this.node;
  }

  /** The sentinel's verdict, asked once per pass; an admin's request on the node is a need too. */
  async sentinel(): Promise<SentinelVerdict> {
    this.verdict ??= await this.deps.sentinel.rebootRequired(this.signal);
    return needOf(this.verdict, this.node.annotations);
  }

  /** The admin's reboot request on the node as last read (`kured-ts reboot`), if any. */
  request(): RebootRequest | undefined {
    return rebootRequestOf(this.node.annotations);
  }

  /**
   * The one guarded node write: `plan` says what to write on the node as last read (undefined:
   * nothing, or nothing any more), the write carries that read's resourceVersion, and on a conflict
   * the node is read again and planned anew (bounded). Resolves to the change written, if any.
   */
  async guardedWrite(
    what: string,
    plan: (node: NodeState) => NodeWrite | undefined,
  ): Promise<NodeWrite | undefined> {
    for (let attempt = 1; attempt <= GUARDED_WRITE_ATTEMPTS; attempt++) {
      const change = plan(this.node);
      if (change === undefined) return undefined;
      const written = await this.deps.node.write(change, this.node.resourceVersion, this.signal);
      if (written) {
        this.node = written;
        // what it wrote is what the node says now (a status it carried among it)
        this.env.progress.noteNode(written);
        return change;
      }
      await this.readNode();
    }
    throw new Error(`node ${this.config.nodeId} kept changing while ${what}`);
  }

  /** Rewrites the cycle record (guarded). */
  async writeRecord(record: CycleRecord): Promise<CycleRecord> {
    await this.guardedWrite('its cycle record was written', () => ({
      annotations: { [CYCLE_ANNOTATION]: formatCycle(record) },
    }));
    return record;
  }

  /** The history annotation with this cycle appended ({} with --history-limit 0). */
  history(node: NodeState, record: CycleRecord, result: HistoryResult): Record<string, string> {
    const entry = cycleHistoryRecord(node, record, result, this.now());
    return historyAnnotations(node.annotations, entry, this.config.historyLimit);
  }

  async release(): Promise<void> {
    await this.env.slot.release(this.signal);
    this.deps.views?.releaseLock();
  }

  /** What we record in our slot for a node in `record`'s cycle. */
  metaOf(record: CycleRecord): LockMetadata {
    return {
      unschedulable: !record.cordoned && this.node.unschedulable,
      bootID: record.bootID,
      ...this.groupOf(),
      ...this.roleOf(),
    };
  }

  /** A control-plane node says so in its slot (acquisition.ts). */
  roleOf(): { controlPlane?: boolean } {
    return roleOf(this.node.labels);
  }

  /** The node's group for the lock, under the flags that judge by group (acquisition.ts). */
  groupOf(): { group?: string } {
    return groupOf(this.config, this.node.labels);
  }

  /**
   * undefined while we hold our slot (taking it back when it was lost: no other node can have taken
   * it while our cycle label stood), else why not. For the drain's keepGoing and the re-verify.
   */
  async slotStillOurs(record: CycleRecord): Promise<string | undefined> {
    const slot = await this.ourSlot(record);
    return 'lost' in slot ? slot.lost : undefined;
  }

  /** Our slot's entry (taken back when it was lost, as slotStillOurs), or why it is lost. */
  async ourSlot(record: CycleRecord): Promise<{ entry: LockHolder } | { lost: string }> {
    const entry = await this.env.slot.holding(this.signal, { inCycle: true });
    if (entry !== undefined) return { entry };
    const result = await this.takeSlotBack(record);
    return result.acquired ? { entry: result.holder } : { lost: `lock slot lost (${result.reason})` };
  }

  /**
   * Asks for our slot back, proven by our cycle record: the node has counted against --concurrency
   * all along, so no other node can have taken its slot while the cycle label stood.
   */
  async takeSlotBack(record: CycleRecord): Promise<AcquireResult> {
    const result = await this.env.slot.acquire(this.metaOf(record), this.signal, { inCycle: true });
    if (result.acquired) this.deps.logger.warn('lock slot lost and taken back', { node: this.config.nodeId });
    return result;
  }

  /**
   * The facts (phase.ts) of `node` (this pass's latest read by default) and of `entry`, the lock's
   * for it: with the attempt this agent counted and never asked the host for (Memory.unsent), which
   * phaseOf reads.
   */
  facts(entry: LockHolder | undefined, node: NodeState = this.node): CycleFacts {
    const { rebootRetries, maxRebootsPerNeed } = this.config;
    const agent = { rebootRetries, maxRebootsPerNeed, unsent: this.memory.unsent };
    return cycleFacts(node, entry, agent, this.deps.clock.now());
  }

  hasTaint(): boolean {
    const key = this.config.preferNoScheduleTaint;
    return this.node.taints.some((t) => t.key === key && t.effect === 'PreferNoSchedule');
  }

  async addTaint(): Promise<void> {
    const key = this.config.preferNoScheduleTaint;
    if (key !== '' && !this.hasTaint()) await this.deps.node.addTaint(key, this.signal);
  }

  async removeTaint(): Promise<void> {
    const key = this.config.preferNoScheduleTaint;
    if (key !== '' && this.hasTaint()) await this.deps.node.removeTaint(key, this.signal);
  }

  /** Notifies (a failure is logged: a notification never holds the cycle back). */
  async notify(event: NotifyEvent, template: string): Promise<void> {
    const node = this.config.nodeId;
    try {
      await this.deps.notifier.notify(event, node, renderMessage(template, node));
    } catch (err) {
      this.deps.logger.warn('notification failed', { node, event, error: errorText(err) });
    }
  }
}
