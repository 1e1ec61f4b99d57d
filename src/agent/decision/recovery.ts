// Recovery: the phases a crash, a second agent, an operator, kured or a wiped lock leave, each
// brought back to the cycle or ended, never guessed past:
// - a cycle whose slot was lost keeps its record and label (it still counts against --concurrency,
//   see DaemonSetLock), takes its slot back, and never uncordons before its readiness gate passed;
// - an entry naming this node that no cycle of ours proves is asked for anew (DESIGN §12);
// - kured's slot and cordon for this node are adopted as a cycle of ours;
// - an operator's removal of the cycle label hands the node to them.
import type { LockHolder } from '../../lock/lock.js';
import { CYCLE_LABEL, type CycleRecord } from '../../node/cycle.js';
import { HISTORY_ANNOTATION, parseHistory } from '../../node/history.js';
import { waitingFor, type Outcome } from '../outcome.js';
import { completeAfterHook, readinessGaps } from './after-reboot.js';
import { notRequired } from './before-lock.js';
import { firstPass } from './first-pass.js';
import { OWN_COUNT, attemptText, beginCycle, toReboot, type Handoff } from './cycle.js';
import { abortBeforeReboot } from './cycle-end.js';
import { requestReboot } from './request-reboot.js';
import { endCycle } from './cycle-end.js';
import { takeFleetLock } from './fleetlock.js';
import type { Pass } from './pass.js';
import { waveFailed } from './wave.js';
import { REBOOT_GRACE_MS } from './phase.js';
import { shortDuration } from '../../text/duration.js';

/** The slot was taken back: the pass goes on in the phase the held slot puts the node in. */
export interface Retaken {
  retaken: LockHolder;
}

/** A cycle before any reboot request whose reboot the sentinel no longer asks for: end it. */
export async function cancelIfNoLongerRequired(
  pass: Pass,
  record: CycleRecord | undefined,
): Promise<Outcome | undefined> {
  const verdict = await pass.sentinel();
  if (verdict.required || verdict.error !== undefined) return undefined;
  if (record) await endCycle(pass, record);
  await pass.removeTaint();
  await pass.release();
  pass.deps.logger.info('reboot no longer required; cycle ended, lock released', {
    node: pass.config.nodeId,
  });
  pass.remember({ kind: 'judged-clean', clean: true });
  return notRequired(verdict);
}

/**
 * The lock names this node, and no cycle record of ours proves it: a crash between taking the slot
 * and beginning the cycle, or an entry written by hand or with a stolen token. It is no slot until
 * asked for anew: through the window, the blockers and a count of the other slots and the nodes in a
 * cycle, as a new acquisition.
 */
export async function unprovenEntry(pass: Pass): Promise<Outcome | Handoff> {
  return firstPass(pass, true);
}

/** kured's slot for this node (a migration): taken over, and kured's cordon adopted as ours. */
export async function adoptKured(pass: Pass, entry: LockHolder): Promise<Outcome | Handoff> {
  // a reboot still to come takes its FleetLock slot first, as any new cycle does (before-lock.ts)
  if ((await pass.sentinel()).required) {
    const fleet = await takeFleetLock(pass);
    if (fleet) return fleet;
  }
  const meta = { unschedulable: false, bootID: pass.node.bootID, ...pass.groupOf() };
  const result = await pass.env.slot.acquire(meta, pass.signal, { inCycle: false });
  if (!result.acquired) {
    return waitingFor(result);
  }
  const record = await beginCycle(pass, { started: entry.created, kured: true });
  // adopted first, so that ending it undoes kured's cordon like ours
  const cancelled = await cancelIfNoLongerRequired(pass, record);
  return cancelled ?? toReboot(pass, record, 'drain');
}

/**
 * An operator removed our cycle label: the node is theirs now. Our record goes (the cordon stays as
 * it is), and our slot too; a reboot still required starts a new cycle later.
 */
export async function released(pass: Pass, record: CycleRecord): Promise<Outcome> {
  await endCycle(pass, { ...record, cordoned: false });
  await pass.release();
  return {
    kind: 'released',
    reason: `released by an operator (label ${CYCLE_LABEL} removed): the node is left as it is${pass.node.unschedulable ? ' (cordoned)' : ''}`,
  };
}

/**
 * Our cycle record on the boot it began on, and no slot: the lock annotation was deleted, rewritten
 * or expired while the node was busy. The node still counts against --concurrency while its label
 * stands, so it takes its slot back. When it cannot, the cycle ends (abortBeforeReboot).
 */
export async function retakeBeforeReboot(pass: Pass, record: CycleRecord): Promise<Outcome | Retaken> {
  const result = await pass.takeSlotBack(record);
  if (result.acquired) return { retaken: result.holder };
  return abortBeforeReboot(pass, record, `lock slot lost (${result.reason})`);
}

/**
 * Our cycle record on a new boot, and no slot (wiped while the node was down): taken back as before
 * the reboot. When it cannot be, the node finishes once ready, and never uncordons before.
 */
export async function retakeAfterReboot(pass: Pass, record: CycleRecord): Promise<Outcome | Retaken> {
  const result = await pass.takeSlotBack(record);
  if (result.acquired) return { retaken: result.holder };
  const waiting = await readinessGaps(pass);
  if (waiting.length === 0) return completeAfterHook(pass, record, undefined);
  const why = `lock slot lost (${result.reason})`;
  return { kind: 'lock-lost', reason: `rebooted, waiting for ${waiting.join('; ')}; ${why}` };
}

/**
 * A reboot was requested on this boot moments ago (by us before a restart, or by another agent of
 * this node): it may still come. Neither drained nor asked for again until REBOOT_GRACE_MS passed.
 */
export function rebootRequested(pass: Pass, record: CycleRecord): Promise<Outcome> {
  const grace = shortDuration(REBOOT_GRACE_MS);
  const retries = pass.config.rebootRetries;
  const then =
    record.attempts >= retries
      ? `the last attempt: given up if the bootID has not changed ${grace} after it`
      : `not asked again before ${grace} have passed`;
  const reason = `reboot attempt ${record.attempts} of ${retries} requested at ${record.rebootRequestedAt ?? '?'} (bootID ${record.bootID}); waiting for it: ${then}`;
  return Promise.resolve({ kind: 'rebooting', reason });
}

/**
 * Our own attempt, counted but never asked for (the counting write was committed but answered with
 * an error): no reboot is coming, so the grace for another agent's request does not apply. Asked for
 * now, after the same re-verification as any reboot: the slot still ours, the node still cordoned.
 */
export async function carryOutUnsent(pass: Pass, record: CycleRecord): Promise<Outcome> {
  const lost = await pass.slotStillOurs(record);
  if (lost !== undefined || !pass.node.unschedulable) {
    pass.remember({ kind: 'attempt-sent' });
    const why = lost ?? 'the node is no longer cordoned';
    return rebootRequested(pass, record).then((o) => ({ ...o, reason: `${o.reason} (${why})` }));
  }
  const reason = `${attemptText(pass, record.attempts, record.bootID)}: ${OWN_COUNT}, and not yet asked for`;
  return requestReboot(pass, record, reason);
}

/**
 * The boot never changed after --reboot-retries requests: the node stays cordoned with the slot for
 * an operator, and the cycle goes into the history once (guarded by the node's resourceVersion; a
 * later pass retries a write the node's changes refused).
 */
export async function givenUp(pass: Pass, record: CycleRecord): Promise<Outcome> {
  if (pass.config.historyLimit > 0) {
    const last = parseHistory(pass.node.annotations[HISTORY_ANNOTATION]).at(-1);
    if (last?.lockedAt !== record.started || last.result !== 'failed') {
      const written = await pass.deps.node.write(
        { annotations: pass.history(pass.node, record, 'failed') },
        pass.node.resourceVersion,
        pass.signal,
      );
      if (written) pass.node = written;
    }
  }
  await waveFailed(pass, `bootID unchanged after ${record.attempts} reboot attempts`);
  return {
    kind: 'failed',
    reason:
      `bootID unchanged after ${record.attempts} reboot attempts; ` +
      'keeping the node cordoned and the lock until an operator intervenes',
  };
}
