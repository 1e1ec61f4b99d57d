// What the cycle waits for between the drain and --reboot-delay, in order: the hold while an external
// worker's annotation stands (hold.ts), then the volumes of the evicted pods detached from the node
// (volume-wait.ts). Each ends the cycle early the same ways: the slot lost aborts it before the
// reboot; past its timeout it ends as a failed drain does (quarantined naming what stood), unless
// --volume-detach-timeout-action reboot says to go on.
import type { DrainResult } from '../../drain/drainer.js';
import type { CycleRecord } from '../../node/cycle.js';
import type { Outcome } from '../outcome.js';
import { abortBeforeReboot } from './cycle-end.js';
import { drainFailed } from './drain-failed.js';
import { holdAfterDrain } from './hold.js';
import type { Pass } from './pass.js';
import { waitForVolumes, type VolumeWaitEnd } from './volume-wait.js';

/** Waits out the hold and the volumes; an outcome that ends the pass, or undefined to go on. */
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
  return detached === undefined ? undefined : afterVolumeWait(pass, record, drained, detached);
}

/**
 * The wait for the volumes stopped short: the slot lost ends the cycle before the reboot; past the
 * timeout, `fail` ends it as a failed drain (quarantined naming the volumes) and `reboot` goes on,
 * said in the status and the log (undefined: go on).
 */
async function afterVolumeWait(
  pass: Pass,
  record: CycleRecord,
  drained: DrainResult,
  end: VolumeWaitEnd,
): Promise<Outcome | undefined> {
  if ('lost' in end) return abortBeforeReboot(pass, record, end.lost);
  if (end.action === 'fail')
    return drainFailed(pass, record, drained, { why: end.timedOut, volumes: end.volumes });
  const reason = `${end.timedOut}; rebooting with them attached (--volume-detach-timeout-action reboot)`;
  pass.deps.logger.warn('rebooting with volumes attached', { node: pass.config.nodeId, reason });
  await pass.env.progress.report({ kind: 'waiting-for-volumes', reason }, pass.signal);
  return undefined;
}
