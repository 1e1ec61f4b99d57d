// The decision: one pass of DESIGN §1's reboot cycle, from what the cluster records.
//
// The cluster is the state: the lock slot, and on the Node the cycle record (src/node/cycle.ts) with
// its label, the cordon, the taint, bootID and conditions. Every pass that may act starts from a
// fresh read of both, finds the node's phase (phase.ts, pure) and runs that phase's handler:
//
//   the first pass    DESIGN §1 from the need to the reboot request,    first-pass.ts
//                     top-down, over these steps:
//     before the lock detect, taint, window and blockers, lock          before-lock.ts
//     the cycle       cordon, drain, delay, re-verify, reboot           cycle.ts
//   after the reboot  prove (bootID), readiness, uncordon, release      after-reboot.ts
//   recovery          a lost slot, an unproven entry, kured's slot,     recovery.ts
//                     an operator's release, a reboot that may still
//                     come, retries exhausted
//
// So a fresh agent after a crash at any step, or a second agent for the same node (a DaemonSet
// rollout), continues from what the cluster records. What the agent keeps between passes (memory.ts:
// that it is clean, an attempt not yet sent, a FleetLock slot owed, the settle and soak it times) is
// changed as data through one writer; while no reboot is required a clean agent asks only the sentinel.
import { HeldSlot } from '../../lock/held-slot.js';
import { PROTECTION_ANNOTATION } from '../../node/autoscaler.js';
import { randomUUID } from 'node:crypto';
import { CYCLE_ANNOTATION, parseCycle } from '../../node/cycle.js';
import type { AgentConfig, AgentDeps } from '../agent-config.js';
import type { Outcome } from '../outcome.js';
import { readiness } from './after-reboot.js';
import { notRequired } from './before-lock.js';
import { firstPass } from './first-pass.js';
import { toReboot, type Handoff } from './cycle.js';
import { settle, settleDue } from './settle.js';
import { soak, soakDue } from './wave.js';
import { returnFleetLock } from './fleetlock.js';
import { stopLoop } from './reboot-loop.js';
import { initialMemory, keepIn } from './memory.js';
import { Pass, type PassEnv, type Progress } from './pass.js';
import { phaseOf, type CycleFacts, type CyclePhase, type PhaseName } from './phase.js';
import {
  adoptKured,
  cancelIfNoLongerRequired,
  carryOutUnsent,
  givenUp,
  rebootRequested,
  released,
  retakeAfterReboot,
  retakeBeforeReboot,
  unprovenEntry,
  type Retaken,
} from './recovery.js';

/**
 * What a handler answers: the pass's outcome, or where the pass goes on: the slot taken back
 * (Retaken), or the re-verify before the reboot found the node in another phase (Handoff).
 */
type Handled = Outcome | Retaken | Handoff;

/** A pass goes on in another phase at most this often (a slot taken back, then a handoff). */
const MAX_HOPS = 2;

/** One handler per phase. */
const HANDLERS: { [K in PhaseName]: (pass: Pass, phase: CyclePhase<K>) => Promise<Handled> } = {
  'before-lock': (pass) => firstPass(pass),
  'unproven-entry': (pass) => unprovenEntry(pass),
  'kured-entry': (pass, { entry }) => adoptKured(pass, entry),
  released: (pass, { record }) => released(pass, record),
  'retake-before-reboot': (pass, { record }) => retakeBeforeReboot(pass, record),
  'retake-after-reboot': (pass, { record }) => retakeAfterReboot(pass, record),
  'given-up': (pass, { record }) => givenUp(pass, record),
  'reboot-requested': (pass, { record }) => rebootRequested(pass, record),
  'unsent-reboot': (pass, { record }) => carryOutUnsent(pass, record),
  'reboot-loop': (pass, { record, reason }) => stopLoop(pass, record, reason),
  'uncordoned-meanwhile': (pass, { record }) => toReboot(pass, record, 'uncordoned'),
  drain: (pass, { record }) => toReboot(pass, record, 'drain'),
  readiness: (pass, { record }) => readiness(pass, record),
};

/** Runs `phase`'s handler (a cancellable phase ends first when no reboot is required any more). */
async function handle<K extends PhaseName>(pass: Pass, phase: CyclePhase<K>): Promise<Handled> {
  if (phase.cancellable) {
    const record = 'record' in phase ? phase.record : undefined;
    const cancelled = await cancelIfNoLongerRequired(pass, record);
    if (cancelled) return cancelled;
  }
  const handler: (pass: Pass, phase: CyclePhase<K>) => Promise<Handled> = HANDLERS[phase.name];
  return handler(pass, phase);
}

function isOutcome(result: Handled): result is Outcome {
  return 'kind' in result;
}

/** Agents started in this process: numbers each, so that two never share an instance id. */
let started = 0;

export class Decision {
  private readonly env: PassEnv;

  constructor(config: AgentConfig, deps: AgentDeps, progress: Progress, slot: HeldSlot) {
    started++;
    // An identity, not a decision: random (two agents' pods of one node), numbered (one process), of
    // one length (a simulation's byte counts repeat)
    const instance = `${deps.agentId ?? config.nodeId}/${randomUUID().slice(0, 8)}-${started.toString(36).padStart(6, '0')}`;
    // Zincati's rule: steady-state on every start of a node in no cycle (idempotent)
    const memory = initialMemory(instance, deps.fleetLock !== undefined);
    this.env = { config, deps, progress, slot, memory };
  }

  async decide(signal: AbortSignal | undefined, acquire: boolean): Promise<Outcome> {
    const { deps } = this.env;
    // Clean and no reboot required: nothing of ours to undo, so nothing to read.
    // (a node soaking in its wave reads itself each pass: its soak is judged on its readiness)
    const clean = this.env.memory.clean && this.env.memory.soak === undefined;
    const verdict = clean ? await deps.sentinel.rebootRequired(signal) : undefined;
    if (verdict !== undefined && !verdict.required) return notRequired(verdict);
    keepIn(this.env, { kind: 'judged-clean', clean: false });
    deps.views?.newPass();
    const node = await deps.node.get(signal);
    this.env.progress.noteNode(node);
    const pass = new Pass(this.env, signal, node, acquire);
    pass.verdict = verdict;
    const inCycle = node.annotations[CYCLE_ANNOTATION] !== undefined;
    await settle(pass);
    await soak(pass);
    // An entry in the lock proves nothing by itself (DESIGN §12): only with our own cycle record.
    const entry = (await this.lockUnread(pass, inCycle))
      ? undefined
      : await this.env.slot.holding(signal, { inCycle });
    // the facts of the pass's first read, which the lock's read above went by (settle and soak may
    // have read the node again since)
    const outcome = await this.handled(pass, pass.facts(entry, node));
    await this.silences(pass);
    // a waiter follows only its own Node (DESIGN §13): no slot, no watch of the lock
    if (!this.env.slot.held) deps.views?.releaseLock();
    await returnFleetLock(pass);
    this.noteProtection(pass);
    return outcome;
  }

  /** The node's silences (--silence-matcher): held while its cycle record is on it, ended once it is gone. */
  private async silences(pass: Pass): Promise<void> {
    const keeper = this.env.deps.silences;
    const record = parseCycle(pass.node.annotations[CYCLE_ANNOTATION]);
    if (record === undefined) await keeper?.release(pass.signal);
    else await keeper?.hold(record.started, pass.signal);
  }

  /**
   * Is the lock left unread this pass? At start-up, a node in no cycle of ours and not cordoned that
   * needs its reboot goes no further than its taint, whether the lock names it or not (before-lock
   * and unproven-entry agree up to there; kured's entry needs kured's cordon): the lock attempt that
   * follows reads it. One read less per start (issue 42).
   */
  private async lockUnread(pass: Pass, inCycle: boolean): Promise<boolean> {
    if (pass.acquire || inCycle || pass.node.unschedulable) return false;
    return (await pass.sentinel()).required;
  }

  /** The handler of the phase the facts put the node in, and on in the phase it leads to (bounded). */
  private async handled(pass: Pass, facts: CycleFacts): Promise<Outcome> {
    const { deps, config } = this.env;
    const phase = phaseOf(facts);
    deps.logger.debug('cycle phase', { node: config.nodeId, phase: phase.name, reason: phase.reason });
    let result = await handle(pass, phase);
    for (let hops = 1; !isOutcome(result); hops++) {
      if (hops > MAX_HOPS) throw new Error(`the pass went on in another phase more than ${MAX_HOPS} times`);
      // the slot taken back: on as if it had been held; a handoff: on in the phase found
      const next = 'retaken' in result ? phaseOf({ ...facts, entry: result.retaken }) : result.handoff;
      deps.logger.debug('cycle phase', { node: config.nodeId, phase: next.name, reason: next.reason });
      result = await handle(pass, next);
    }
    return result;
  }

  /** Something outside (an admin's request) may have changed the node: read it on the next pass. */
  forgetClean(): void {
    keepIn(this.env, { kind: 'judged-clean', clean: false });
  }

  /**
   * When the next pass is due for what runs after a cycle (ms since the epoch): the end of the
   * autoscaler protection's settle, or the wave's soak; undefined when neither runs.
   */
  protectedUntil(): number | undefined {
    const due = [this.env.memory.settleUntil, soakDue(this.env.memory)].filter(
      (t): t is number => t !== undefined,
    );
    return due.length === 0 ? undefined : Math.min(...due);
  }

  /** A protection of ours on the node keeps the agent from being clean until it is removed. */
  private noteProtection(pass: Pass): void {
    pass.remember({ kind: 'settle-seen', until: settleDue(pass.node) });
    if (pass.node.annotations[PROTECTION_ANNOTATION] !== undefined)
      pass.remember({ kind: 'judged-clean', clean: false });
  }
}
