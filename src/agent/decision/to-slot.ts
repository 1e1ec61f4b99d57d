// From a needed reboot to a slot, step by step (DESIGN §1): the window, the blockers and the
// approval (judgeBeforeLock, decided by decideBeforeLock), then what is asked only of a node that
// would take a slot now (judgeAtSlot: the lock without writing, the blockers left to the slot), the
// FleetLock server, and the slot. The one runner: the agent's first pass runs it with its writes
// (slotActions, first-pass.ts), `kured-ts check` with none (it asks wouldAcquire where the agent
// acquires), so that check shows what the agent would do by doing it, not by doing it again its own
// way. Each answer is returned with its detail, for check to render and for nobody to recompute.
import type { AcquireResult, LockHolder, LockMetadata } from '../../lock/lock.js';
import type { SentinelVerdict } from '../../sentinel/sentinel.js';
import type { Misconfigured, Outcome } from '../outcome.js';
import { waitingFor } from '../outcome.js';
import {
  decideBeforeLock,
  judgeAtSlot,
  judgeBeforeLock,
  type BeforeLock,
  type BeforeLockView,
} from './before-lock.js';

/** One step's answer, as `kured-ts check` shows it: ok, holding the reboot back, or passed over. */
export interface StepAnswer {
  name: 'window' | 'node' | 'approval';
  verdict: 'ok' | 'blocks' | 'skipped';
  detail: string;
}

/** What the runner does between its steps: the agent's writes and slot, or check's questions. */
export interface SlotActions {
  /** An entry naming this node that no cycle proves, given back as the reboot is held back. */
  release(): Promise<void>;
  /** Before the questions at the slot (the agent: its taint under --taint-timing unblocked). */
  beforeSlot(): Promise<void>;
  /** The FleetLock server's slot: undefined when granted or not configured, else the wait. */
  fleetLock(): Promise<Outcome | undefined>;
  /** The slot: the agent acquires it, check asks whether it would be given. */
  slot(meta: LockMetadata): Promise<AcquireResult>;
}

/** What the run starts from. */
export interface SlotAsk {
  /** The need (needOf): the sentinel's answer, or an admin's request. */
  verdict: SentinelVerdict;
  /** The slot as this node would record it (slotMetaOf). */
  meta: LockMetadata;
  /** An entry naming this node that no cycle of its own proves: asked for anew, and given back when held. */
  unproven: boolean;
  /** A configuration error the agent reported (check reads it from the status): it holds the reboot back. */
  misconfigured?: Misconfigured;
}

/** The run: each step's answer, and how it ended (the outcome that ends the pass, or the slot). */
export interface SlotRun {
  answers: StepAnswer[];
  end: { outcome: Outcome } | { holder: LockHolder };
}

/** The window's answer: inside, outside (holding the reboot back), or passed over by a --now request. */
function windowAnswer(b: BeforeLock): StepAnswer {
  const { inside, describe, next } = b.window;
  const at = next === undefined ? '' : ` (${inside ? 'closes' : 'opens'} ${next.toISOString()})`;
  const detail = `${inside ? 'inside' : 'outside'} maintenance window ${describe}${at}`;
  if (inside) return { name: 'window', verdict: 'ok', detail };
  if (b.request?.now === true)
    return {
      name: 'window',
      verdict: 'skipped',
      detail: `${detail}; passed over: the reboot request says --now`,
    };
  return { name: 'window', verdict: 'blocks', detail };
}

/** The node's answer: a bootID to prove the reboot by. */
function nodeAnswer(b: BeforeLock, view: BeforeLockView): StepAnswer {
  if (b.bootID === '')
    return {
      name: 'node',
      verdict: 'blocks',
      detail: 'node reports no bootID: a reboot could not be proven',
    };
  const cordoned = view.node.unschedulable ? ', cordoned' : '';
  return { name: 'node', verdict: 'ok', detail: `bootID ${b.bootID}${cordoned}` };
}

/** Under --require-approval, the approval's answer; none without the flag. */
function approvalAnswer(b: BeforeLock): StepAnswer[] {
  const approval = b.approval;
  if (approval === undefined) return [];
  if (!approval.approved) return [{ name: 'approval', verdict: 'blocks', detail: approval.reason }];
  const { by, at } = approval.approval;
  return [{ name: 'approval', verdict: 'ok', detail: `approved by ${by || 'unknown'} at ${at}` }];
}

/** The window's, the node's and the approval's answers, from what judgeBeforeLock found. */
function answersOf(b: BeforeLock, view: BeforeLockView): StepAnswer[] {
  return [windowAnswer(b), nodeAnswer(b, view), ...approvalAnswer(b)];
}

/** A configuration error the agent reported holds the reboot back as a blocker does. */
function withReported(judged: BeforeLock, misconfigured: Misconfigured | undefined): BeforeLock {
  if (misconfigured === undefined) return judged;
  return {
    ...judged,
    block: { blocked: true, blocker: 'agent', reason: misconfigured.reason, misconfigured },
  };
}

/** Runs the steps from the need to the slot, in the order of the agent's first pass. */
export async function runToSlot(
  view: BeforeLockView,
  ask: SlotAsk,
  act: SlotActions,
  signal: AbortSignal | undefined,
): Promise<SlotRun> {
  const judged = withReported(await judgeBeforeLock(view, ask.verdict, signal), ask.misconfigured);
  const answers = answersOf(judged, view);
  const early = decideBeforeLock(judged);
  if (early !== undefined) {
    if (ask.unproven) await act.release();
    return { answers, end: { outcome: early } };
  }
  await act.beforeSlot();
  const held = await judgeAtSlot(view, ask.meta, ask.unproven, signal);
  if (held !== undefined) {
    if (ask.unproven && held.byBlocker) await act.release();
    return { answers, end: { outcome: held.outcome } };
  }
  // the fleet's slot across clusters (--fleetlock-url) before this cluster's
  const fleet = await act.fleetLock();
  if (fleet !== undefined) {
    if (ask.unproven) await act.release();
    return { answers, end: { outcome: fleet } };
  }
  const result = await act.slot(ask.meta);
  return { answers, end: result.acquired ? { holder: result.holder } : { outcome: waitingFor(result) } };
}
