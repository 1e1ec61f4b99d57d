// Before the lock (DESIGN §1): detect, taint, the window and the blockers, then a slot.
import { firstBlock, judges, type Blocker } from '../../blockers/blocker.js';
import type { Config } from '../../config/config.js';
import type { Lock, LockMetadata } from '../../lock/lock.js';
import type { PolicyConfig } from '../../admission/agent-policy.js';
import type { NodeState } from '../../node/node.js';
import { isControlPlane } from '../../node/role.js';
import type { Window } from '../../window/window.js';
import { approvalCheck, type ApprovalVerdict } from '../../node/approval.js';
import { NODE_PAUSE_ANNOTATION } from '../../node/node.js';
import {
  QUARANTINE_ANNOTATION,
  QUARANTINE_LABEL,
  liftWrite,
  quarantineCordon,
  afterHookQuarantine,
} from '../../node/quarantine.js';
import { describeRebootRequest, rebootRequestOf, type RebootRequest } from '../../node/reboot-request.js';
import type { SentinelVerdict } from '../../sentinel/sentinel.js';
import { sameOutcome, waitingFor, type Outcome } from '../outcome.js';
import { blockOf, type Block } from './misconfigured.js';
import { foreignCordon } from '../../node/our-cordon.js';
import type { Pass } from './pass.js';
import { leaveWave } from './wave.js';

/** Before the lock: what `decideBeforeLock` needs to know (also what `kured-ts check` shows). */
export interface BeforeLock {
  /** The sentinel's answer. */
  verdict: SentinelVerdict;
  /** Inside the maintenance window now? With the window's description and next change (it closes, or opens). */
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
  // an after-reboot hook's quarantine stays until an operator removes its label: read the node each
  // pass until then, to lift the cordon it kept once they have
  const kept = afterHookQuarantine(pass.node);
  pass.remember({ kind: 'judged-clean', clean: !kept && (verdict.error === undefined || !pass.hasTaint()) });
  return notRequired(verdict);
}

/** Lifts the node's quarantine, and the cordon it kept when that is still ours (guarded). */
async function liftQuarantine(pass: Pass): Promise<void> {
  const { labels, annotations } = pass.node;
  if (labels[QUARANTINE_LABEL] === undefined && annotations[QUARANTINE_ANNOTATION] === undefined) return;
  // the node is up but the after-reboot hook said it is not fit: only an operator releases it
  if (afterHookQuarantine(pass.node)) return;
  await pass.guardedWrite('its quarantine was lifted', (node) => {
    const change = liftWrite(node);
    if (change.labels === undefined && change.annotations === undefined) return undefined;
    const paused = node.annotations[NODE_PAUSE_ANNOTATION] === 'true';
    if (quarantineCordon(node) && !foreignCordon(node) && !paused) change.unschedulable = false;
    return change;
  });
}

/**
 * What the judgement before the lock reads: the agent's pass (viewOf) or `kured-ts check`'s read-only
 * view of the same cluster, so that both take their decision from the same steps.
 */
export interface BeforeLockView {
  readonly config: Pick<Config, 'taintTiming' | 'requireApproval' | 'approvalTtlMs' | 'nodeId'> &
    PolicyConfig;
  readonly window: Window;
  /** The node's blockers, in the agent's order. */
  readonly blockers: readonly Blocker[];
  /** Asked, writing nothing, whether a slot would be given (before the blockers judged at the slot). */
  readonly lock: Pick<Lock, 'wouldAcquire'>;
  /** With --fleetlock-url: the FleetLock server is asked at the slot too. */
  readonly fleetLock: boolean;
  /** Our wall time (the window) and the API server's (approvals are written on its clock). */
  readonly now: Date;
  readonly serverNow: Date;
  /** The node as last read. */
  readonly node: Pick<NodeState, 'annotations' | 'labels' | 'bootID' | 'unschedulable'>;
}

/** What the window, the blockers and the approval say now (decideBeforeLock takes its decision from it). */
export async function judgeBeforeLock(
  view: BeforeLockView,
  verdict: SentinelVerdict,
  signal: AbortSignal | undefined,
): Promise<BeforeLock> {
  const { window, now, node, config } = view;
  const inside = window.contains(now);
  const request = rebootRequestOf(node.annotations);
  const controlPlane = isControlPlane(node.labels);
  return {
    verdict,
    window: { inside, describe: window.describe(), next: window.next(now).change },
    block:
      inside || request?.now === true
        ? blockOf(
            await firstBlock(
              view.blockers.filter(
                (b) =>
                  !judgedAtSlot(b, config.taintTiming) && !bypassed(b, request) && judges(b, controlPlane),
              ),
              signal,
            ),
            config,
          )
        : { blocked: false },
    ...(request === undefined ? {} : { request }),
    bootID: node.bootID,
    // an approval's time is the server's (kured-ts approve writes it so): judged on the server's clock
    ...approvalCheck(config, { name: config.nodeId, annotations: node.annotations }, view.serverNow),
  };
}

/**
 * Blockers that guard the fleet's availability, not its schedule: --now never goes around them. The
 * PDB pre-flight, the --health-checks (the operator's own availability gates, judged at the slot
 * whatever the request says) and the control plane's quorum.
 */
const NEVER_BYPASSED = new Set(['pdb', 'health-check', 'control-plane']);

/**
 * Does an admin's request pass `blocker`? With --now every blocker but those (NEVER_BYPASSED): the
 * window's and the pause's, the alerts, the blocking pods.
 */
export function bypassed(blocker: Pick<Blocker, 'name'>, request: RebootRequest | undefined): boolean {
  return request?.now === true && !NEVER_BYPASSED.has(blocker.name);
}

/**
 * Is `blocker` judged only at the slot? Not under kured's taint timing (--taint-timing unblocked):
 * its taint goes on once nothing at all blocks, the PDB pre-flight included, so every blocker is
 * judged before it.
 */
function judgedAtSlot(blocker: Pick<Blocker, 'atSlot'>, taintTiming: Config['taintTiming']): boolean {
  return blocker.atSlot === true && taintTiming !== 'unblocked';
}

/** What holds back a node at the slot (judgeAtSlot): the lock, or a blocker judged there. */
export interface AtSlot {
  outcome: Outcome;
  /** A blocker's (an entry naming the node that no cycle proves then goes), not the lock's. */
  byBlocker: boolean;
}

/**
 * What is asked only of a node that would take a slot now: the blockers judged at the slot
 * (Blocker.atSlot: the PDB pre-flight) and, after them, the FleetLock server. The lock is asked first,
 * without writing, whether it would give one: a waiter that would not (every slot taken, not its
 * turn) waits for the lock without them, and holds no slot of the fleet's group meanwhile (a
 * question to the FleetLock server takes one). undefined: go for the slot.
 */
export async function judgeAtSlot(
  view: BeforeLockView,
  meta: LockMetadata,
  unproven: boolean,
  signal: AbortSignal | undefined,
): Promise<AtSlot | undefined> {
  const { config } = view;
  const blockers = view.blockers.filter(
    (b) => judgedAtSlot(b, config.taintTiming) && judges(b, meta.controlPlane === true),
  );
  if (blockers.length === 0 && !view.fleetLock) return undefined;
  // an entry naming us that no cycle proves: acquire() judges (and removes) it, so no shortcut
  if (!unproven) {
    const would = await view.lock.wouldAcquire(signal, meta);
    if (!would.acquired) return { outcome: waitingFor(would), byBlocker: false };
  }
  if (blockers.length === 0) return undefined;
  const block = blockOf(await firstBlock(blockers, signal), config);
  return block.blocked ? { outcome: blockOutcome(block), byBlocker: true } : undefined;
}
