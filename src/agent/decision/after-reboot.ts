// After the reboot (DESIGN §1): proven by the changed bootID, then readiness, uncordon, release.
// The post-reboot timeout starts at the record's verifyingSince, so a restart does not reset it.
import { APPROVAL_ANNOTATION } from '../../node/approval.js';
import { CYCLE_ANNOTATION, formatCycle, type CycleRecord } from '../../node/cycle.js';
import { cycleHistoryRecord, phaseDurations } from '../../node/history.js';
import { KURED_IN_PROGRESS_ANNOTATION } from '../../node/node.js';
import { liftWrite } from '../../node/quarantine.js';
import { REBOOT_REQUEST_ANNOTATION } from '../../node/reboot-request.js';
import { shortDuration } from '../../text/duration.js';
import type { Outcome } from '../outcome.js';
import { endCycle } from './cycle-end.js';
import { afterRebootHook, notReadyForHook } from './hook-step.js';
import type { Handoff } from './cycle.js';
import type { Pass } from './pass.js';
import { needAfterBoot, rebootAgain } from './reboot-loop.js';
import { afterFailure, startSoak, waveAtEnd, waveFailed } from './wave.js';
import { waveOf } from '../../node/wave.js';

/**
 * The bootID changed: the first check after the new boot (is the need still there? reboot-loop.ts),
 * the readiness gate, then uncordon and release, or another reboot while the need survives. The
 * wait's start is recorded (verifyingSince) only when the node is not ready at the first look, with
 * the status that says so and the first check's count, in one write: a crash before it counts the
 * same reboot again (never one uncounted, never one twice); ready at the first look, the count
 * rides in the write that ends the cycle or begins the next round.
 */
export async function readiness(pass: Pass, record: CycleRecord): Promise<Outcome | Handoff> {
  const now = pass.deps.clock.now();
  let since = Date.parse(record.verifyingSince ?? '');
  if (Number.isNaN(since)) record = { ...record, ...(await needAfterBoot(pass, record)) };
  const waiting = await readinessGaps(pass);
  // ready at the first look: the host was up as of now (the history's upAt), nothing to write for it
  if (waiting.length === 0)
    return finish(pass, { ...record, verifyingSince: record.verifyingSince ?? now.toISOString() }, undefined);
  const verifying: Outcome = {
    kind: 'verifying',
    reason: `bootID changed; waiting for ${waiting.join('; ')}`,
  };
  if (Number.isNaN(since)) {
    since = now.getTime();
    const begun: CycleRecord = { ...record, verifyingSince: now.toISOString() };
    record = begun;
    const status = pass.env.progress.carry(verifying);
    await pass.guardedWrite('the readiness wait began', () => ({
      annotations: { ...status, [CYCLE_ANNOTATION]: formatCycle(begun) },
    }));
  }
  const { postRebootTimeoutMs, onPostRebootTimeout } = pass.config;
  // the wait for readiness ends by the timeout, whatever it waits on (the Node's watch, a poll)
  if (now.getTime() - since < postRebootTimeoutMs)
    return { ...verifying, timeoutAt: since + postRebootTimeoutMs };
  const what = waiting.join('; ');
  const after = shortDuration(postRebootTimeoutMs);
  if (onPostRebootTimeout === 'hold') {
    // not back in time: a failure of its wave (its budget may halt it), said once
    await waveFailed(pass, `not ready ${after} after the reboot: ${what}`);
    return { kind: 'holding', reason: `not ready ${after} after the reboot: ${what}; holding the lock` };
  }
  return finish(pass, record, `not ready ${after} after the reboot: ${what}; releasing the lock`);
}

/** Ready (or past --post-reboot-timeout, released): complete, or reboot again while the need survives. */
function finish(pass: Pass, record: CycleRecord, timedOut: string | undefined): Promise<Outcome | Handoff> {
  return record.stillNeeded === true ? rebootAgain(pass, record) : completeAfterHook(pass, record, timedOut);
}

/**
 * Ready: the after-reboot hook (--after-reboot-hook), then complete; a hook that fails leaves the node
 * cordoned and quarantined (hook-step.ts). Past --post-reboot-timeout (not ready) the hook cannot
 * run: with one configured the node is kept out the same way, not uncordoned without it.
 */
export async function completeAfterHook(
  pass: Pass,
  record: CycleRecord,
  timedOut: string | undefined,
): Promise<Outcome> {
  if (timedOut !== undefined) {
    // the hook gates the uncordon: never uncordoned without it
    if (pass.deps.hooks?.has('after-reboot') === true) return notReadyForHook(pass, record, timedOut);
    return complete(pass, record, timedOut);
  }
  return (await afterRebootHook(pass, record)) ?? complete(pass, record, undefined);
}

/**
 * Taints under this prefix say the node is not ready for its pods yet, though its kubelet says Ready:
 * the out-of-tree readiness gates (the node-readiness-controller's rules: CNI, CSI, device plugins).
 */
const READINESS_TAINT_PREFIX = 'readiness.k8s.io/';

/** Does a taint `key` hold the node back after the reboot: readiness.k8s.io/, or a key or prefix listed? */
function waitedTaint(key: string, listed: readonly string[]): boolean {
  return [READINESS_TAINT_PREFIX, ...listed].some((k) => (k.endsWith('/') ? key.startsWith(k) : key === k));
}

/** What the node still lacks to count as ready after the reboot; empty = ready. */
export async function readinessGaps(pass: Pass): Promise<string[]> {
  const gaps: string[] = [];
  for (const type of ['Ready', ...pass.config.readinessGates]) {
    const condition = pass.node.conditions.find((c) => c.type === type);
    if (condition?.status !== 'True') gaps.push(`condition ${type}=${condition?.status ?? 'absent'}`);
  }
  const taints = pass.node.taints.filter((t) => waitedTaint(t.key, pass.config.postRebootWaitTaints));
  if (taints.length > 0) gaps.push(`taint ${taints.map((t) => `${t.key}:${t.effect}`).join(', ')}`);
  if (pass.config.waitForDaemonSetPods) {
    const pods = await pass.deps.node.daemonSetPodsReady(pass.signal);
    if (!pods.ready) gaps.push(`DaemonSet pods not ready: ${pods.notReady.join(', ')}`);
  }
  return gaps;
}

/** Uncordon (unless someone else's cordon or the node is paused), record and taint off, labels, release. */
async function complete(pass: Pass, record: CycleRecord, timedOut: string | undefined): Promise<Outcome> {
  const { config, deps } = pass;
  const reason = timedOut ?? `bootID ${record.bootID} -> ${pass.node.bootID}; node ready`;
  const kind = timedOut === undefined ? 'completed' : 'timed-out';
  // the end's status rides in the end's write, unless --lock-release-delay keeps the slot a while
  const status =
    config.lockReleaseDelayMs === 0
      ? pass.env.progress.carry({ kind, reason, uncordoned: false, durationMs: 0 })
      : {};
  const uncordoned = await endCycle(pass, record, (node) => {
    const annotations: Record<string, string | null> = {
      ...status,
      ...pass.history(node, record, timedOut === undefined ? 'success' : 'timeout'),
    };
    if (config.annotateNodes && node.annotations[KURED_IN_PROGRESS_ANNOTATION] !== undefined) {
      annotations[KURED_IN_PROGRESS_ANNOTATION] = null;
    }
    // An approval is for one reboot: this one used it. So is an admin's request: this reboot answered it.
    if (node.annotations[APPROVAL_ANNOTATION] !== undefined) annotations[APPROVAL_ANNOTATION] = null;
    if (node.annotations[REBOOT_REQUEST_ANNOTATION] !== undefined) {
      annotations[REBOOT_REQUEST_ANNOTATION] = null;
    }
    // A quarantine ends with the cycle that rebooted the node after all.
    const lift = liftWrite(node);
    // and our taint, in the same write (one request, not two)
    const taint = config.preferNoScheduleTaint;
    const ours = node.taints.some((t) => t.key === taint && t.effect === 'PreferNoSchedule');
    return {
      // back in its wave (its soak to come), or failed in it when not back in time
      labels: {
        ...config.postRebootNodeLabels,
        ...lift.labels,
        ...waveAtEnd(pass, node, timedOut === undefined),
      },
      annotations: { ...annotations, ...lift.annotations },
      ...(taint !== '' && ours ? { withoutTaint: taint } : {}),
    };
  });
  const wave = deps.waves === undefined ? undefined : waveOf(pass.node.labels)?.wave;
  if (timedOut !== undefined && wave !== undefined) await afterFailure(pass, wave, timedOut);
  else startSoak(pass);
  observePhases(pass, record);
  await pass.removeTaint();
  await pass.notify('uncordon', config.messageTemplateUncordon);
  if (config.lockReleaseDelayMs > 0) await deps.clock.sleep(config.lockReleaseDelayMs, pass.signal);
  await pass.release();
  const started = Date.parse(record.started);
  const durationMs = Number.isNaN(started) ? 0 : deps.clock.now().getTime() - started;
  return { kind, reason, uncordoned, durationMs };
}

/** kured_ts_phase_duration_seconds for a finished cycle. */
function observePhases(pass: Pass, record: CycleRecord): void {
  const entry = cycleHistoryRecord(pass.node, record, 'success', pass.now());
  for (const [phase, seconds] of Object.entries(phaseDurations(entry))) {
    pass.deps.metrics.observePhase(phase, seconds);
  }
}
