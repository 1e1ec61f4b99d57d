// The cycle (DESIGN §1 from the lock on): cordon, drain, delay, re-verify, reboot.
//
// Orderings and guards that make it safe (each a hazard if changed):
// - the cycle record and its label are written in the same patch as our cordon, guarded by the
//   node's resourceVersion: a cordon of ours is never unmarked, a record never stands without its
//   cordon, and a cordon someone made after our last read is never taken for ours;
// - the attempt is counted in the record (guarded) BEFORE the reboot request: a reboot that never
//   comes is noticed after a restart (bootID unchanged) and bounded by --reboot-retries, and of two
//   agents of one node only one requests the reboot of one boot; nothing is awaited between the
//   status written for it and the request but the notification;
// - a cycle on an unchanged boot resumes at the drain (a no-op on a drained node), never straight at
//   the reboot, so a crash mid-drain cannot lead to rebooting an undrained node;
// - before any reboot request, losing the slot ends the cycle (record and cordon first, then the
//   slot); after one, the node stays cordoned and keeps counting until it can take a slot again.
import { firstBlock, judges } from '../../blockers/blocker.js';
import type { LockHolder } from '../../lock/lock.js';
import {
  KURED_IN_PROGRESS_ANNOTATION,
  KURED_REBOOT_NEEDED_ANNOTATION,
  type NodeState,
  type NodeWrite,
} from '../../node/node.js';
import {
  CYCLE_ANNOTATION,
  CYCLE_LABEL,
  formatCycle,
  parseCycle,
  type CycleRecord,
} from '../../node/cycle.js';
import { quarantineCordon } from '../../node/quarantine.js';
import { protect } from '../../node/autoscaler.js';
import { marksFor, type MarkOptions } from '../../node/cycle-marks.js';
import { STATUS_ANNOTATION, parseStatus } from '../../node/status.js';
import type { Outcome } from '../outcome.js';
import { endDeniedCycle, misconfigured, misconfiguredBy } from './misconfigured.js';
import { endCycle } from './cycle-end.js';
import { foreignCordon } from '../../node/our-cordon.js';
import { phaseOf, type CyclePhase, type PhaseName } from './phase.js';
import { reportFallback, summaryOf } from './drain-report.js';
import { endFailedDrain } from './drain-failed.js';
import { withoutWaitsAfterDrain } from './hold.js';
import { waitsAfterDrain } from './after-drain.js';
import { attachedTo } from './volume-wait.js';
import { abortBeforeReboot } from './cycle-end.js';
import { requestReboot } from './request-reboot.js';
import { restartSingleReplicas } from './single-replicas.js';
import { leaveLoadBalancers } from './lb-wait.js';
import type { Pass } from './pass.js';

/** Someone else's uncordon (or cordon) before the reboot leads to at most this many drains again. */
const MAX_REDRAINS = 3;

/** Where the way to the reboot goes on from. */
export type Step = 'drain' | 'verify' | 'uncordoned';

/**
 * A conflict on the write that counts the attempt (the Node changed between our read and it: a
 * kubelet's status write, say) leads back to the re-verify at most this many times in one pass.
 */
const MAX_RECOUNTS = 3;

/**
 * A step's answer: the pass ends with an outcome, or goes on at `step` (counting a drain again, or a
 * re-verify after a conflicting count).
 */
type Next =
  { outcome: Outcome } | Handoff | { step: Step; record: CycleRecord; redrain: boolean; recount?: true };

/** The re-verify found the node in another phase: the pass goes on in that phase's handler. */
export interface Handoff {
  handoff: CyclePhase;
}

/**
 * Cordon, just after taking the slot: status draining, the pre-reboot labels, --drain-delay, notify,
 * then the cycle record with our cordon (beginCycle). A write there that the agent's own admission
 * policy denies (a pre-reboot label the chart does not know, say) ends the pass as that configuration
 * error, the slot given back: nothing was cordoned, since the cordon comes in one patch with the record.
 */
export async function cordon(
  pass: Pass,
  holder: LockHolder,
): Promise<{ record: CycleRecord } | { outcome: Outcome }> {
  // the holder follows the lock from its acquisition's answer on: the drain and the re-verify read it
  // (pass.release() stops following it)
  pass.deps.views?.holdLock();
  try {
    return { record: await labelAndCordon(pass, holder) };
  } catch (err) {
    const error = misconfiguredBy(err, pass.config);
    if (error === undefined || pass.signal?.aborted === true) throw err;
    await pass.release();
    return { outcome: { ...error, reason: `${error.reason}; nothing cordoned, lock released` } };
  }
}

async function labelAndCordon(pass: Pass, holder: LockHolder): Promise<CycleRecord> {
  const draining: Outcome = {
    kind: 'draining',
    reason: `lock acquired by ${holder.nodeID}; cordoning and draining`,
  };
  const { progress } = pass.env;
  // the status rides in the cordon's write (one write, not two), unless --drain-delay comes between
  const rides = pass.config.drainDelayMs === 0;
  if (!rides) await progress.report(draining, pass.signal);
  const labels = pass.config.preRebootNodeLabels;
  const annotations: Record<string, string> = {};
  if (pass.config.annotateNodes) {
    annotations[KURED_IN_PROGRESS_ANNOTATION] = pass.now();
    annotations[KURED_REBOOT_NEEDED_ANNOTATION] = pass.now();
  }
  if (Object.keys(labels).length + Object.keys(annotations).length > 0) {
    await pass.deps.node.write({ labels, annotations }, undefined, pass.signal);
  }
  if (pass.config.drainDelayMs > 0) await pass.deps.clock.sleep(pass.config.drainDelayMs, pass.signal);
  await pass.notify('drain', pass.config.messageTemplateDrain);
  const record = await beginCycle(pass, { started: holder.created }, rides ? progress.carry(draining) : {});
  if (rides) await progress.report(draining, pass.signal);
  return record;
}

/**
 * Whether the cycle's cordon is ours to undo: we make it (the node is schedulable); kured records its
 * own cordon as unschedulable: false, adopted, it is undone like ours; so is the cordon our quarantine
 * kept (--quarantine-cordon), unless someone else owns it since.
 */
function cordonIsOurs(node: NodeState, kured: boolean): boolean {
  return kured || !node.unschedulable || (quarantineCordon(node) && !foreignCordon(node));
}

/**
 * Cordon: writes the cycle record and label, and our cordon when the node is schedulable, in one
 * patch guarded by the resourceVersion of a fresh read: a cordon someone made meanwhile (during
 * --drain-delay, say) is seen and stays theirs. Another agent of this node may have begun the cycle
 * already: then its record is the one.
 */
export async function beginCycle(
  pass: Pass,
  from: { started: Date; kured?: boolean },
  status: Record<string, string> = {},
): Promise<CycleRecord> {
  await pass.readNode();
  let record: CycleRecord | undefined;
  await pass.guardedWrite('the reboot cycle began', (node) => {
    record = parseCycle(node.annotations[CYCLE_ANNOTATION]);
    if (record) return undefined;
    // since when the reboot is required: as the node's status says it (the agent's report wrote it);
    // the reporter's own when that write failed (it is best effort)
    const required =
      parseStatus(node.annotations[STATUS_ANNOTATION])?.requiredSince ?? pass.env.progress.requiredSince;
    record = {
      bootID: node.bootID,
      cordoned: cordonIsOurs(node, from.kured === true),
      attempts: 0,
      started: from.started.toISOString(),
      ...(pass.deps.agentId === undefined ? {} : { agent: pass.deps.agentId }),
      ...(required === undefined ? {} : { requiredAt: required }),
      kernel: node.kernelVersion ?? '',
      osImage: node.osImage ?? '',
    };
    // out of the load balancers, safe from repair: in the record's patch, so the record owns them
    const marks = marksFor(node, markOptions(pass), pass.now());
    record = { ...record, ...marks.record };
    const change: NodeWrite = {
      labels: { [CYCLE_LABEL]: 'true', ...marks.write.labels },
      annotations: {
        ...status,
        [CYCLE_ANNOTATION]: formatCycle(record),
        // in the same patch: a drained node looks empty to an autoscaler from the cordon on
        ...(pass.config.autoscalerProtection ? protect(node.annotations) : {}),
        ...marks.write.annotations,
      },
    };
    if (!node.unschedulable) change.unschedulable = true;
    return change;
  });
  if (record === undefined) throw new Error('the reboot cycle began without a record');
  return record;
}

/** The marks (cycle-marks.ts) the flags ask for. */
function markOptions(pass: Pass): MarkOptions {
  return { excludeFromLb: pass.config.excludeFromLb, doNotRepair: pass.config.autoscalerProtection };
}

/** The drain's answer: the record (its drainedAt set) to re-verify, or the end of the pass. */
export type Drained = { outcome: Outcome } | { record: CycleRecord };

/**
 * Drain, delay, re-verify, reboot, from `first` on (a resumed cycle, or the first pass after its
 * drain); someone else's uncordon or cordon meanwhile leads back to the drain, at most MAX_REDRAINS
 * times.
 */
export async function toReboot(pass: Pass, record: CycleRecord, first: Step): Promise<Outcome | Handoff> {
  // the way to the reboot reads the slot again and again (the drain, the re-verify): follow the lock
  pass.deps.views?.holdLock();
  let next: Next = { step: first, record, redrain: false };
  let redrains = 0;
  let recounts = 0;
  while (!('outcome' in next) && !('handoff' in next)) {
    if (next.redrain) redrains++;
    if (next.recount === true) recounts++;
    const at: CycleRecord = next.record;
    if (next.step === 'drain') {
      const drained = await drainAndDelay(pass, at);
      next = 'outcome' in drained ? drained : { step: 'verify', record: drained.record, redrain: false };
    } else if (next.step === 'verify') next = await verify(pass, at, redrains, recounts);
    else next = await uncordoned(pass, at, redrains);
  }
  return 'outcome' in next ? next.outcome : next;
}

/**
 * Wait for the load balancers (lb-wait.ts), restart single replicas elsewhere (single-replicas.ts),
 * drain (checking the slot between rounds), hold while an annotation says so (hold.ts), then wait
 * --reboot-delay.
 */
export async function drainAndDelay(pass: Pass, given: CycleRecord): Promise<Drained> {
  const { drainer, metrics, clock } = pass.deps;
  // what was attached when the drain began: the status may drop a volume before its detach ends
  const attachedBefore = attachedTo(pass.node);
  await pass.deps.silences?.hold(given.started, pass.signal); // silenced before the drain (--silence-matcher)
  await leaveLoadBalancers(pass, given); //   out of the load balancers: --lb-drain-wait when they exist
  // --single-replica restart: single replicas restarted elsewhere first (marked in the record)
  const { record } = await restartSingleReplicas(pass, given);
  const drained = await drainer.drain(pass.signal, {
    onEviction: (outcome) => {
      metrics.countEvictions(outcome, 1);
    },
    keepGoing: () => pass.slotStillOurs(record),
  });
  metrics.observeDrain(drained.durationMs / 1000);
  const drainedAt = pass.now();
  const summary = summaryOf(drained);
  await reportFallback(pass, drained);
  // the agent's own policy denied an eviction: a configuration error, wherever --force-reboot stands
  const denied = misconfigured(drained.denied, pass.config);
  if (denied !== undefined) return { outcome: await endDeniedCycle(pass, record, drained, denied) };
  if (drained.stopped !== undefined && !pass.env.slot.held) {
    return { outcome: await abortBeforeReboot(pass, record, `drain stopped: ${drained.stopped}`) };
  }
  if (!drained.ok && !pass.config.forceReboot)
    return { outcome: await endFailedDrain(pass, record, drained) };
  // the hold (an external worker's annotation), then the volumes of the evicted pods detached
  const stopped = await waitsAfterDrain(pass, record, drained, attachedBefore);
  if (stopped !== undefined) return { outcome: stopped };
  if (pass.config.rebootDelayMs > 0) await clock.sleep(pass.config.rebootDelayMs, pass.signal);
  // kept in the record (written with the count): the history's drain time and what it did with the pods
  return { record: { ...record, drainedAt, ...(summary === undefined ? {} : { drain: summary }) } };
}

/**
 * Re-verify after the delay (kured #929): the slot still ours, then the phase the cluster puts the
 * node in now (phaseOf, as every pass judges it): still `drain` (cordoned, same boot, no request of
 * another agent), so reboot; uncordoned meanwhile, so drain again or give way; any other phase (the
 * reboot requested by another agent of the node, the node rebooted, released by an operator) goes
 * to that phase's handler, not to a reboot. Our own count whose answer was lost is carried out.
 */
export async function verifyAndReboot(pass: Pass, drained: Drained): Promise<Outcome | Handoff> {
  if ('outcome' in drained) return drained.outcome;
  return toReboot(pass, drained.record, 'verify');
}

async function verify(pass: Pass, record: CycleRecord, redrains: number, recounts: number): Promise<Next> {
  await pass.readNode();
  const slot = await pass.ourSlot(record);
  if ('lost' in slot)
    return { outcome: await abortBeforeReboot(pass, record, `${slot.lost} before the reboot`) };
  const current = currentRecord(pass, record);
  const facts = pass.facts(slot.entry);
  const phase = phaseOf({ ...facts, record: current });
  // Our own count, committed though its answer was an error (a 500, then a 409 on the client's
  // retry), is no other agent's request: it is carried out, once verified.
  const own = facts.ownUnsent;
  if (!goesOnToReboot(phase)) return { handoff: phase };
  // whoever's cordon it was (ours, or one we adopted or handed over): never a reboot of a schedulable node
  if (!pass.node.unschedulable) return { step: 'uncordoned', record: current, redrain: false };
  if (current.cordoned && foreignCordon(pass.node) && redrains < MAX_REDRAINS) {
    // Someone uncordoned and cordoned again meanwhile: pods may have landed in between, and the
    // cordon is theirs now (it stays after the reboot). Drain again before rebooting.
    const handed = await pass.writeRecord(withoutWaitsAfterDrain({ ...current, cordoned: false }));
    // our own count, rewritten: still ours to carry out after the drain
    if (own) pass.remember({ kind: 'attempt-written', record: formatCycle(handed) });
    return { step: 'drain', record: handed, redrain: true };
  }
  return rebootVerified(pass, current, own, recounts);
}

/** The phases in which the re-verify goes on toward the reboot; any other phase is its handler's. */
const TO_REBOOT: ReadonlySet<PhaseName> = new Set<PhaseName>([
  'drain',
  'uncordoned-meanwhile',
  'unsent-reboot',
]);

/**
 * Does the re-verify go on toward the reboot in `phase`: our cycle on the same boot (cordoned or
 * not: judged next), or our own count whose answer was lost?
 */
function goesOnToReboot(phase: CyclePhase): boolean {
  return TO_REBOOT.has(phase.name);
}

/** The record on the node as just read (ours if it is gone), with this pass's drain (its time and pods). */
function currentRecord(pass: Pass, record: CycleRecord): CycleRecord {
  const current = parseCycle(pass.node.annotations[CYCLE_ANNOTATION]) ?? record;
  const { drainedAt, drain } = record;
  return {
    ...current,
    ...(drainedAt === undefined ? {} : { drainedAt }),
    ...(drain === undefined ? {} : { drain }),
  };
}

/**
 * The node verified: our own count (`own`) is carried out at once; else the blockers are judged
 * again and the reboot counted.
 */
async function rebootVerified(
  pass: Pass,
  current: CycleRecord,
  own: boolean,
  recounts: number,
): Promise<Next> {
  if (own) {
    const reason = `${attemptText(pass, current.attempts, current.bootID)}: ${OWN_COUNT}`;
    return { outcome: await requestReboot(pass, current, reason) };
  }
  const vetoed = await vetoBeforeReboot(pass, current);
  return vetoed === undefined ? reboot(pass, current, recounts) : { outcome: vetoed };
}

/**
 * The blockers judged again after the drain and --reboot-delay (etcd may have lost a member
 * meanwhile): the cycle ends before the reboot when one blocks; undefined when none does.
 */
async function vetoBeforeReboot(pass: Pass, current: CycleRecord): Promise<Outcome | undefined> {
  const controlPlane = pass.roleOf().controlPlane === true;
  const veto = await firstBlock(
    pass.deps.blockers.filter((b) => b.beforeReboot === true && judges(b, controlPlane)),
    pass.signal,
  );
  if (!veto.blocked) return undefined;
  return abortBeforeReboot(pass, current, `${veto.blocker}: ${veto.reason} before the reboot`);
}

/** Someone else uncordoned our node before the reboot: cordon and drain again, or leave it to them. */
async function uncordoned(pass: Pass, record: CycleRecord, redrains: number): Promise<Next> {
  if (pass.config.onUncordonedDuringDelay === 'redrain' && redrains < MAX_REDRAINS) {
    const cordoned = await pass.deps.node.write(
      { unschedulable: true },
      pass.node.resourceVersion,
      pass.signal,
    );
    if (cordoned === undefined) return { step: 'verify', record, redrain: true };
    pass.node = cordoned;
    return { step: 'drain', record, redrain: true };
  }
  // The node stays as the other actor set it; only our record goes.
  await endCycle(pass, { ...record, cordoned: false });
  await pass.release();
  return {
    outcome: {
      kind: 'aborted',
      reason: 'node was uncordoned by someone else before the reboot; lock released',
    },
  };
}

/**
 * Counts the attempt in the record first (guarded: of two agents of this node, one requests the
 * reboot of this boot), so a reboot that never comes is noticed after a restart. A conflict means
 * the Node changed since the re-verify read it: verified again on a fresh read (where another
 * agent's count shows), up to MAX_RECOUNTS times, before the pass ends and the next looks again.
 */
async function reboot(pass: Pass, record: CycleRecord, recounts: number): Promise<Next> {
  const attempts = record.attempts + 1;
  const request: CycleRecord = {
    ...record,
    attempts,
    rebootRequestedAt: pass.now(),
    requestedBy: pass.memory.instance,
  };
  const text = formatCycle(request);
  pass.remember({ kind: 'attempt-written', record: text });
  const reason = attemptText(pass, attempts, pass.node.bootID);
  // the status says so in the same write as the count: nothing between the count and the request
  // but the Events and the notification
  const status = pass.env.progress.carry({ kind: 'rebooting', reason });
  const counted = await pass.deps.node.write(
    { annotations: { ...status, [CYCLE_ANNOTATION]: text } },
    pass.node.resourceVersion,
    pass.signal,
  );
  if (!counted) {
    if (recounts < MAX_RECOUNTS) return { step: 'verify', record, redrain: false, recount: true };
    return {
      outcome: {
        kind: 'rebooting',
        reason: `${reason}: the node changed ${MAX_RECOUNTS + 1} times meanwhile (another agent of it?); looking again`,
      },
    };
  }
  pass.node = counted;
  pass.env.progress.noteNode(counted);
  return { outcome: await requestReboot(pass, request, reason) };
}

/** Why an agent asks for a reboot its own count recorded, though that write was answered with an error. */
export const OWN_COUNT = 'counted by this agent, whose write was answered with an error';

/** "reboot attempt N of --reboot-retries (bootID B)": how every reboot request names itself. */
export function attemptText(pass: Pass, attempts: number, bootID: string): string {
  return `reboot attempt ${attempts} of ${pass.config.rebootRetries} (bootID ${bootID})`;
}
