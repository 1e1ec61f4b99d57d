// The hooks around the reboot (--before-reboot-hook, --after-reboot-hook; src/hooks/): a Job of the
// chart's template for this node and cycle, awaited within --hook-timeout.
//
// Before the reboot, after the drain and its waits (the data safe): a hook that fails or outlasts its
// timeout ends the cycle as a failed drain does (quarantined, naming the hook's Job); the slot lost
// meanwhile ends it before the reboot. After the reboot, once the node is Ready, before the uncordon:
// a hook that fails leaves the node cordoned and quarantined (hook-failed) until an operator removes
// the label, and the slot goes back (the cordoned node counts as unavailable, as any cordoned node).
import type { CycleRecord } from '../../node/cycle.js';
import { quarantineValue, quarantineWrite, QUARANTINE_LABEL, releaseCommand } from '../../node/quarantine.js';
import type { DrainResult } from '../../drain/drainer.js';
import type { HookName } from '../../hooks/hook-job.js';
import type { HookEnd } from '../../hooks/hooks.js';
import type { Outcome } from '../outcome.js';
import { abortBeforeReboot, endCycle } from './cycle-end.js';
import { drainFailed } from './drain-failed.js';
import type { Pass } from './pass.js';
import { afterFailure, waveAtEnd } from './wave.js';
import { waveOf } from '../../node/wave.js';

/** Runs `hook` for the cycle of `record` when one is configured; undefined when none is. */
async function runHook(pass: Pass, record: CycleRecord, hook: HookName): Promise<HookEnd | undefined> {
  const hooks = pass.deps.hooks;
  if (hooks === undefined || !hooks.has(hook)) return undefined;
  const before = hook === 'before-reboot';
  return hooks.run(hook, record.started, {
    signal: pass.signal,
    // before the reboot the slot must still be ours; after it, the node finishes what it began
    keepGoing: () => (before ? pass.slotStillOurs(record) : Promise.resolve(undefined)),
    progress: (reason) =>
      before
        ? pass.env.progress.report({ kind: 'held-after-drain', reason: `drained; ${reason}` }, pass.signal)
        : pass.env.progress.report(
            { kind: 'verifying', reason: `bootID changed; node ready; ${reason}` },
            pass.signal,
          ),
  });
}

/** The hook's Job as the quarantine names it. */
function jobOf(pass: Pass, end: { job: string }): string {
  return `${pass.deps.hooks?.namespace ?? ''}/${end.job}`;
}

/**
 * The before-reboot hook, after the drain and its waits: an outcome that ends the cycle (the hook
 * failed: as a failed drain; the slot lost: before the reboot), or undefined to go on to the reboot.
 */
export async function beforeRebootHook(
  pass: Pass,
  record: CycleRecord,
  drained: DrainResult,
): Promise<Outcome | undefined> {
  const end = await runHook(pass, record, 'before-reboot');
  if (end === undefined || 'done' in end) return undefined;
  if ('lost' in end) return abortBeforeReboot(pass, record, `${end.lost} while the before-reboot hook ran`);
  return drainFailed(pass, record, drained, { why: end.failed, hook: jobOf(pass, end) });
}

/**
 * The after-reboot hook, once the node is ready: undefined when it completed (or none is configured),
 * else the outcome of a node left cordoned and quarantined.
 */
export async function afterRebootHook(pass: Pass, record: CycleRecord): Promise<Outcome | undefined> {
  const end = await runHook(pass, record, 'after-reboot');
  if (end === undefined || 'done' in end) return undefined;
  // after the reboot the slot is not given up while the hook runs: 'lost' is never answered
  const why = 'lost' in end ? end.lost : end.failed;
  return keptOut(pass, record, why, 'job' in end ? jobOf(pass, end) : '');
}

/**
 * Past --post-reboot-timeout with an after-reboot hook configured: the hook, which gates the uncordon,
 * cannot have run on a node not ready, so the node is not uncordoned without it: kept out as when the
 * hook fails, for an operator (who runs the hook by hand once the node is ready, then removes the label).
 */
export function notReadyForHook(pass: Pass, record: CycleRecord, timedOut: string): Promise<Outcome> {
  return keptOut(pass, record, `${timedOut}; the after-reboot hook cannot run on a node not ready`, '');
}

/** Ends the cycle with the node cordoned and quarantined (after-reboot-hook) for `why`; releases the slot. */
async function keptOut(pass: Pass, record: CycleRecord, why: string, job: string): Promise<Outcome> {
  await endCycle(pass, { ...record, cordoned: false }, (node) => {
    const q = quarantineWrite({
      since: pass.now(),
      kind: 'after-reboot-hook',
      pods: [],
      // our cordon, kept: lifted with the quarantine (when the operator removes the label)
      cordoned: record.cordoned && node.unschedulable,
      ...(job === '' ? {} : { hook: job }),
    });
    const annotations = pass.history(node, record, 'failed');
    return {
      labels: { ...q.labels, ...waveAtEnd(pass, node, false) },
      annotations: { ...annotations, ...q.annotations },
    };
  });
  const wave = pass.deps.waves === undefined ? undefined : waveOf(pass.node.labels)?.wave;
  if (wave !== undefined) await afterFailure(pass, wave, `after the reboot: ${why}`);
  await pass.release();
  const value = quarantineValue('after-reboot-hook');
  return {
    kind: 'quarantined',
    reason: `rebooted, but ${why}: quarantined (${QUARANTINE_LABEL}=${value}) and left cordoned until an operator looks (${releaseCommand(pass.config.nodeId)}); lock released`,
  };
}
