// No reboot loops (kured #976): a reboot proves that it happened (bootID), not that it cleared the
// need. The need is "still there" when the host's sentinel says so at the first check after the new
// boot; the cycle then reboots again (same slot, same cordon, the count in the record) until the need
// has survived --max-reboots-per-need reboots, and then stops: the node is quarantined reboot-loop for
// an operator. A need the first check does not see is gone: the cycle completes, and a need that
// appears later (the next package run) is a new cycle, counted from 0.
//
// Hazards, each handled here:
// - the count is written in the same guarded write as the first sight of the new boot
//   (verifyingSince): a crash before it leaves the old bootID in the record, so the next agent
//   counts the same reboot; never a reboot uncounted, never one counted twice;
// - an admin's reboot request (`kured-ts reboot`) is not the host's need: only the sentinel counts;
// - a sentinel that fails at that check is not "still there" (an error is never a reason to reboot):
//   the cycle completes as it would have;
// - a count that cannot be read (UNKNOWN_COUNT) is the bound reached: a garbled record never buys
//   more reboots than a kept one (phase reboot-loop).
import { needRebootsIn, type CycleRecord } from '../../node/cycle.js';
import {
  QUARANTINE_LABEL,
  REBOOT_LOOP_VALUE,
  quarantineWrite,
  releaseCommand,
} from '../../node/quarantine.js';
import type { Outcome } from '../outcome.js';
import { endCycle } from './cycle-end.js';
import { ourCordon } from '../../node/our-cordon.js';
import { toReboot, type Handoff } from './cycle.js';
import type { Pass } from './pass.js';

/**
 * What the first check after a new boot adds to the record: the need still there (and one more
 * reboot survived), or nothing.
 */
export async function needAfterBoot(
  pass: Pass,
  record: CycleRecord,
): Promise<Pick<CycleRecord, 'needReboots' | 'stillNeeded'>> {
  // Asked now, never the pass's earlier answer: a pass that began before the reboot (a second agent
  // of the node, handed over here by its re-verify) read the need of the old boot. The host's own
  // answer: an admin's request on the node is answered by this very reboot.
  const verdict = await pass.deps.sentinel.rebootRequired(pass.signal);
  pass.verdict = verdict;
  if (!verdict.required) return {};
  return { needReboots: needRebootsIn(record) + 1, stillNeeded: true };
}

/**
 * The node is back on a new boot and its need survived the reboot: reboot again within
 * --max-reboots-per-need (a new round of the same cycle: the record on the new boot, no attempt yet,
 * the count kept), else stop.
 */
export async function rebootAgain(pass: Pass, record: CycleRecord): Promise<Outcome | Handoff> {
  const survived = needRebootsIn(record);
  const max = pass.config.maxRebootsPerNeed;
  if (survived >= max) {
    return stopLoop(pass, record, `the need survived ${survived} reboots (--max-reboots-per-need ${max})`);
  }
  const round: CycleRecord = {
    bootID: pass.node.bootID,
    cordoned: record.cordoned,
    attempts: 0,
    started: record.started,
    needReboots: survived,
    ...(record.agent === undefined ? {} : { agent: record.agent }),
    ...(record.requiredAt === undefined ? {} : { requiredAt: record.requiredAt }),
    ...(record.kernel === undefined ? {} : { kernel: record.kernel }),
    ...(record.osImage === undefined ? {} : { osImage: record.osImage }),
    // the marks the cycle put on the node stay ours to remove at its end
    ...(record.lbExcludedAt === undefined ? {} : { lbExcludedAt: record.lbExcludedAt }),
    ...(record.doNotRepair === true ? { doNotRepair: true } : {}),
  };
  await pass.writeRecord(round);
  pass.deps.logger.warn('reboot still required after the reboot; rebooting again', {
    node: pass.config.nodeId,
    reboots: survived,
    max,
  });
  return toReboot(pass, round, 'drain');
}

/**
 * No reboot again: the cycle ends quarantined reboot-loop (its cordon kept with --quarantine-cordon,
 * else lifted when ours), the history says so, and the slot goes to the next node. Only an operator
 * (removing the label) or the need going away lifts it; --quarantine-retry does not.
 */
export async function stopLoop(pass: Pass, record: CycleRecord, why: string): Promise<Outcome> {
  const keepCordon = pass.config.quarantineCordon;
  await endCycle(pass, keepCordon ? { ...record, cordoned: false } : record, (node) => {
    const cordoned = keepCordon && record.cordoned && ourCordon(node, record);
    const q = quarantineWrite({ since: pass.now(), kind: 'reboot-loop', pods: [], cordoned });
    return {
      labels: q.labels,
      annotations: { ...pass.history(node, record, 'reboot-loop'), ...q.annotations },
    };
  });
  await pass.release();
  const node = pass.config.nodeId;
  const cordon = keepCordon ? '; left cordoned' : '';
  return {
    kind: 'reboot-loop',
    reason: `${why}: quarantined (${QUARANTINE_LABEL}=${REBOOT_LOOP_VALUE}), no reboot until an operator releases it (${releaseCommand(node)}); lock released${cordon}`,
  };
}
