// Before the lock (DESIGN §1): detect, taint, the window and the blockers, then a slot.
import { firstBlock, judges, type Blocker } from '../../blockers/blocker.js';
import type { Config } from '../../config/config.js';
import type { LockHolder, LockMetadata } from '../../lock/lock.js';
import { approvalCheck, type ApprovalVerdict } from '../../node/approval.js';
import { NODE_PAUSE_ANNOTATION } from '../../node/node.js';
import {
  QUARANTINE_ANNOTATION,
  QUARANTINE_LABEL,
  liftWrite,
  quarantineCordon,
} from '../../node/quarantine.js';
import { describeRebootRequest, type RebootRequest } from '../../node/reboot-request.js';
import type { SentinelVerdict } from '../../sentinel/sentinel.js';
import { sameOutcome, waitingFor, type Outcome } from '../outcome.js';
import { blockOf, type Block } from './misconfigured.js';
import { foreignCordon } from './cycle-end.js';
import { takeFleetLock } from './fleetlock.js';
import type { Pass } from './pass.js';
import { leaveWave, waveMeta } from './wave.js';

/** Before the lock: what `decideBeforeLock` needs to know (also what `kured-ts check` shows). */
export interface BeforeLock {
  /** The sentinel's answer. */
  verdict: SentinelVerdict;
  /** Inside the maintenance window now? With the window's description and next change. */
  window: { inside: boolean; describe: string; next: Date | undefined };
  /**
   * The first blocker that blocks, if any; `misconfigured` when it failed on a request the agent's
   * own admission policy denied (a configuration error, not a verdict).
   */
  block: Block;
  /** The node's bootID ('' = unknown). */
  bootID: string;
  /** Under --require-approval, the node's approval as judged now; absent without it. */
  approval?: ApprovalVerdict;
  /** An admin's reboot request on the node (`kured-ts reboot`); with `now` past the window and blockers. */
  request?: RebootRequest;
}

/**
 * The pre-lock decision, pure: no reboot, outside the window, blocked, or undefined (go for a slot).
 * The agent and `kured-ts check` both take it from here.
 */
export function decideBeforeLock(b: BeforeLock): Outcome | undefined {
  if (!b.verdict.required) return notRequired(b.verdict);
  if (!b.window.inside && b.request?.now !== true) {
    const opens = b.window.next ? `; opens ${b.window.next.toISOString()}` : '';
    return { kind: 'outside-window', reason: `outside maintenance window ${b.window.describe}${opens}` };
  }
  if (b.block.blocked) return blockOutcome(b.block);
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

/** A block as the outcome of the pass: blocked, or the configuration error behind it. */
function blockOutcome(block: Extract<Block, { blocked: true }>): Outcome {
  return block.misconfigured ?? { kind: 'blocked', reason: block.reason, blocker: block.blocker };
}

export function notRequired(verdict: SentinelVerdict): Outcome {
  return verdict.error === undefined
    ? { kind: 'idle', reason: 'reboot not required' }
    : { kind: 'sentinel-error', reason: verdict.error };
}

/** What the sentinel (or an admin's request) says: required, or the outcome that ends the pass. */
export type Need = { required: true; verdict: SentinelVerdict } | { required: false; outcome: Outcome };

/** Detect: is a reboot required? If not, our taint and a quarantine go (notNeeded). */
export async function detect(pass: Pass): Promise<Need> {
  const verdict = await pass.sentinel();
  if (verdict.required) return { required: true, verdict };
  return { required: false, outcome: await notNeeded(pass, verdict) };
}

/**
 * Status pending (unless the pass before said it already: startUp's) and, under the default
 * --taint-timing, the PreferNoSchedule taint at once (even blocked, even without the lock).
 */
export async function taint(pass: Pass): Promise<Outcome> {
  const { progress } = pass.env;
  const request = pass.request();
  const why = request === undefined ? 'reboot required' : describeRebootRequest(request);
  const fresh: Outcome = { kind: 'pending', reason: why };
  // said once: when the last report said the same (by value), it is handed back as it is, so that
  // the end of the pass (Agent.step) knows it for the report it already was
  const said = sameOutcome(progress.last, fresh) ? progress.last : undefined;
  const pending = said ?? fresh;
  if (said === undefined) await progress.report(pending, pass.signal);
  if (pass.config.taintTiming === 'required') await pass.addTaint();
  return pending;
}

/**
 * No reboot: our taint comes off, and a quarantine (with the cordon it kept) goes: the node was
 * rebooted some other way. Not when the sentinel failed: unknown is not "no".
 */
async function notNeeded(pass: Pass, verdict: SentinelVerdict): Promise<Outcome> {
  if (verdict.error === undefined) {
    await pass.removeTaint();
    await liftQuarantine(pass);
    await leaveWave(pass);
  }
  pass.env.memory.clean = verdict.error === undefined || !pass.hasTaint();
  return notRequired(verdict);
}

/** Lifts the node's quarantine, and the cordon it kept when that is still ours (guarded). */
async function liftQuarantine(pass: Pass): Promise<void> {
  const { labels, annotations } = pass.node;
  if (labels[QUARANTINE_LABEL] === undefined && annotations[QUARANTINE_ANNOTATION] === undefined) return;
  await pass.guardedWrite('its quarantine was lifted', (node) => {
    const change = liftWrite(node);
    if (change.labels === undefined && change.annotations === undefined) return undefined;
    const paused = node.annotations[NODE_PAUSE_ANNOTATION] === 'true';
    if (quarantineCordon(node) && !foreignCordon(node) && !paused) change.unschedulable = false;
    return change;
  });
}

/** What the window, the blockers and the approval say now. */
async function judge(pass: Pass, verdict: SentinelVerdict): Promise<BeforeLock> {
  const { window, blockers, clock, serverTime } = pass.deps;
  const now = clock.now();
  const inside = window.contains(now);
  const request = pass.request();
  return {
    verdict,
    window: { inside, describe: window.describe(), next: inside ? undefined : window.next(now).change },
    block:
      inside || request?.now === true
        ? blockOf(
            await firstBlock(
              blockers.filter(
                (b) =>
                  !leftToSlot(pass, b) &&
                  !bypassed(b, request) &&
                  judges(b, pass.roleOf().controlPlane === true),
              ),
              pass.signal,
            ),
            pass.config,
          )
        : { blocked: false },
    ...(request === undefined ? {} : { request }),
    bootID: pass.node.bootID,
    // an approval's time is the server's (kured-ts approve writes it so): judged on the server's clock
    ...approvalCheck(
      pass.config,
      { name: pass.config.nodeId, annotations: pass.node.annotations },
      serverTime?.at(now) ?? now,
    ),
  };
}

/** Blockers that guard the fleet's safety, not its schedule: --now never goes around them. */
const NEVER_BYPASSED = new Set(['pdb', 'control-plane']);

/**
 * Does an admin's request pass `blocker`? With --now every blocker but the PDB pre-flight and the
 * control plane's quorum.
 */
export function bypassed(blocker: Pick<Blocker, 'name'>, request: RebootRequest | undefined): boolean {
  return request?.now === true && !NEVER_BYPASSED.has(blocker.name);
}

/**
 * Is `blocker` judged only at the slot? Not under kured's taint timing (--taint-timing unblocked):
 * its taint goes on once nothing at all blocks, the PDB pre-flight included, so every blocker is
 * judged before it.
 */
function leftToSlot(pass: Pass, blocker: Blocker): boolean {
  return judgedAtSlot(blocker, pass.config.taintTiming);
}

/** leftToSlot for a --taint-timing (`kured-ts check` judges as the agent does). */
export function judgedAtSlot(blocker: Pick<Blocker, 'atSlot'>, taintTiming: Config['taintTiming']): boolean {
  return blocker.atSlot === true && taintTiming !== 'unblocked';
}

/**
 * What is asked only of a node that would take a slot now: the blockers judged at the slot
 * (Blocker.atSlot: the PDB pre-flight) and, after them, the FleetLock server. The lock is asked first,
 * without writing, whether it would give one: a waiter that would not (every slot taken, not its
 * turn) waits for the lock without them, and holds no slot of the fleet's group meanwhile (a
 * question to the FleetLock server takes one). undefined: go for the slot.
 */
async function atSlot(pass: Pass, meta: LockMetadata, unproven: boolean): Promise<Outcome | undefined> {
  const blockers = pass.deps.blockers.filter(
    (b) => leftToSlot(pass, b) && judges(b, meta.controlPlane === true),
  );
  if (blockers.length === 0 && pass.deps.fleetLock === undefined) return undefined;
  // an entry naming us that no cycle proves: acquire() judges (and removes) it, so no shortcut
  if (!unproven) {
    const would = await pass.deps.lock.wouldAcquire(pass.signal, meta);
    if (!would.acquired) return waitingFor(would);
  }
  if (blockers.length === 0) return undefined;
  const block = blockOf(await firstBlock(blockers, pass.signal), pass.config);
  if (!block.blocked) return undefined;
  if (unproven) await pass.release();
  return blockOutcome(block);
}

/**
 * The window, the blockers and the approval: the outcome that holds the reboot back, or undefined.
 * An entry naming us that no cycle of ours proves (`unproven`) holds no slot back from the others
 * meanwhile: it goes when the reboot is held back.
 */
export async function windowAndBlockers(
  pass: Pass,
  verdict: SentinelVerdict,
  unproven: boolean,
): Promise<Outcome | undefined> {
  const early = decideBeforeLock(await judge(pass, verdict));
  if (early === undefined) return undefined;
  if (unproven) await pass.release();
  return early;
}

/**
 * A slot: the blockers left to the slot (the PDB pre-flight) for a node that would take one now,
 * then the lock. The holder, or the outcome that ends the pass (waiting for the lock, blocked).
 */
export async function takeSlot(
  pass: Pass,
  unproven: boolean,
): Promise<{ holder: LockHolder } | { outcome: Outcome }> {
  // kured's timing: the taint goes on once nothing blocks the reboot, as the node waits for a slot.
  if (pass.config.taintTiming === 'unblocked') await pass.addTaint();
  const meta: LockMetadata = {
    unschedulable: pass.node.unschedulable,
    bootID: pass.node.bootID,
    ...pass.groupOf(),
    ...pass.roleOf(),
    ...waveMeta(pass),
  };
  const held = await atSlot(pass, meta, unproven);
  if (held) return { outcome: held };
  // the fleet's slot across clusters (--fleetlock-url) before this cluster's
  const fleet = await takeFleetLock(pass);
  if (fleet) {
    if (unproven) await pass.release();
    return { outcome: fleet };
  }
  const result = await pass.env.slot.acquire(meta, pass.signal);
  if (!result.acquired) return { outcome: waitingFor(result) };
  return { holder: result.holder };
}
