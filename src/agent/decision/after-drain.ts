// What the cycle waits for between the drain and --reboot-delay, in order: the hold while an external
// worker's annotation stands (hold.ts), then the volumes of the evicted pods detached from the node
// (volume-wait.ts), then the storage system's word (node-check-wait.ts), then the before-reboot hook
// (hook-step.ts). Each ends the cycle early the same ways: the slot lost aborts it before the reboot; past its timeout it ends as a failed
// drain does (quarantined naming what stood), unless --volume-detach-timeout-action reboot says to
// go on.
import type { DrainResult } from '../../drain/drainer.js';
import type { CycleRecord } from '../../node/cycle.js';
import type { Outcome } from '../outcome.js';
import { abortBeforeReboot } from './cycle-end.js';
import { drainFailed } from './drain-failed.js';
import { holdAfterDrain } from './hold.js';
import { beforeRebootHook } from './hook-step.js';
import type { Pass } from './pass.js';
import { waitForVolumes, type VolumeWaitEnd } from './volume-wait.js';
import { waitForNodeChecks, type NodeCheckWaitEnd } from './node-check-wait.js';

/** Waits out the hold, the volumes and the node checks; an outcome that ends the pass, or undefined to go on. */
export async function waitsAfterDrain(
  pass: Pass,
  record: CycleRecord,
  drained: DrainResult,
  attachedBefore: readonly string[],
): Promise<Outcome | undefined> {
  const held = await holdAfterDrain(pass, record);
  if (held !== undefined) {
    return 'lost' in held
      ? abortBeforeReboot(pass, record, held.lost)
      : drainFailed(pass, record, drained, { why: held.timedOut, holdKeys: held.keys });
  }
  const detached = await waitForVolumes(pass, record, attachedBefore);
  const ended =
    detached === undefined
      ? await nodeChecksWait(pass, record, drained)
      : await afterDataWait(pass, record, drained, detached);
  if (ended !== undefined) return ended;
  // the data safe: the before-reboot hook (--before-reboot-hook)
  return beforeRebootHook(pass, record, drained);
}

/** The wait for the node checks, and what its end means (undefined: go on). */
async function nodeChecksWait(
  pass: Pass,
  record: CycleRecord,
  drained: DrainResult,
): Promise<Outcome | undefined> {
  const checked = await waitForNodeChecks(pass, record);
  return checked === undefined ? undefined : afterDataWait(pass, record, drained, checked);
}

/**
 * The wait for the volumes or the node checks stopped short: the slot lost ends the cycle before the
 * reboot; past the timeout, `fail` ends it as a failed drain (quarantined naming the volumes or the
 * checks) and `reboot` goes on, said in the status and the log (undefined: go on).
 */
async function afterDataWait(
  pass: Pass,
  record: CycleRecord,
  drained: DrainResult,
  end: VolumeWaitEnd | NodeCheckWaitEnd,
): Promise<Outcome | undefined> {
  if ('lost' in end) return abortBeforeReboot(pass, record, end.lost);
  const stood = 'volumes' in end ? { volumes: end.volumes } : { nodeChecks: end.nodeChecks };
  if (end.action === 'fail') return drainFailed(pass, record, drained, { why: end.timedOut, ...stood });
  const what = 'volumes' in end ? 'with them attached' : 'with the node checks false';
  const reason = `${end.timedOut}; rebooting ${what} (--volume-detach-timeout-action reboot)`;
  pass.deps.logger.warn(`rebooting ${what}`, { node: pass.config.nodeId, reason });
  await pass.env.progress.report({ kind: 'waiting-for-volumes', reason }, pass.signal);
  return undefined;
}
