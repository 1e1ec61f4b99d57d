// The end of a cycle on the node, on every path (done, given way, released, cancelled): the record
// and its label go, in one guarded patch with our cordon when it is still ours. It always comes
// BEFORE the slot is released, so a node never stands cordoned by us without counting against
// --concurrency.
import type { NodeState, NodeWrite } from '../../node/node.js';
import { ourCordon } from '../../node/our-cordon.js';
import { CYCLE_ANNOTATION, CYCLE_LABEL, parseCycle, type CycleRecord } from '../../node/cycle.js';
import { unmark } from '../../node/cycle-marks.js';
import { settleFrom } from '../../node/autoscaler.js';
import type { Pass } from './pass.js';
import type { Outcome } from '../outcome.js';
import type { DrainResult } from '../../drain/drainer.js';
import { summaryOf } from './drain-report.js';

/** What the write that ends a cycle adds: labels, and annotations to set or (null) remove. */
export interface CycleEnd {
  labels?: Record<string, string | null>;
  annotations?: Record<string, string | null>;
  /** Our PreferNoSchedule taint of this key goes in the same write (NodeWrite.withoutTaint). */
  withoutTaint?: string;
}

/**
 * The write that ends a cycle on `node`: the record and its label go (when still there), with
 * `extra`, and our cordon when it is still ours. undefined: nothing to write.
 */
function endOfCycle(node: NodeState, record: CycleRecord, extra: CycleEnd): NodeWrite | undefined {
  const stillOurs =
    node.annotations[CYCLE_ANNOTATION] !== undefined || node.labels[CYCLE_LABEL] !== undefined;
  // the marks the cycle added (the record on the node, or ours when it is gone) go with it
  const marks = unmark(node, parseCycle(node.annotations[CYCLE_ANNOTATION]) ?? record);
  const change: NodeWrite = {
    labels: { ...marks.labels, ...extra.labels, ...(stillOurs ? { [CYCLE_LABEL]: null } : {}) },
    annotations: {
      ...marks.annotations,
      ...extra.annotations,
      ...(stillOurs ? { [CYCLE_ANNOTATION]: null } : {}),
    },
  };
  if (stillOurs && ourCordon(node, record)) change.unschedulable = false;
  if (extra.withoutTaint !== undefined) change.withoutTaint = extra.withoutTaint;
  return writesAnything(change) ? change : undefined;
}

/** Does the write change any label or annotation? */
function writesAnything(change: NodeWrite): boolean {
  return Object.keys(change.labels ?? {}).length + Object.keys(change.annotations ?? {}).length > 0;
}

/**
 * Ends the cycle on the node in one guarded patch (see endOfCycle); `extra` is planned on the node
 * as each attempt reads it. Resolves to whether we uncordoned.
 */
export async function endCycle(
  pass: Pass,
  record: CycleRecord,
  extra: CycleEnd | ((node: NodeState) => CycleEnd) = {},
): Promise<boolean> {
  const written = await pass.guardedWrite('the reboot cycle ended', (node) => {
    const more = typeof extra === 'function' ? extra(node) : extra;
    // the autoscaler protection's settle period starts with the end of the cycle, in the same patch
    const settle = settleFrom(node.annotations, pass.deps.clock.now(), pass.config.settleTimeMs);
    return endOfCycle(node, record, { ...more, annotations: { ...settle, ...more.annotations } });
  });
  return written?.unschedulable === false;
}

/**
 * Ends the cycle after a drain that did not finish, its summary in the node's history, and gives the
 * slot back: the node is not rebooted now (a failing API server, our own policy's denial).
 */
export async function endUndrainedCycle(pass: Pass, record: CycleRecord, result: DrainResult): Promise<void> {
  await endCycle(pass, record, (node) => {
    const summary = summaryOf(result);
    return {
      annotations: pass.history(node, summary ? { ...record, drain: summary } : record, 'drain-failed'),
    };
  });
  await pass.release();
}

/**
 * The slot is gone for good before the reboot: end the cycle (our cordon goes) and release. Unless
 * a reboot was requested before on this boot (it might still come): then the node stays cordoned
 * and keeps counting until it can take a slot again.
 */
export async function abortBeforeReboot(pass: Pass, record: CycleRecord, why: string): Promise<Outcome> {
  if (record.attempts > 0) {
    return {
      kind: 'lock-lost',
      reason: `reboot requested (attempt ${record.attempts}) but not done; ${why}; the node stays cordoned until it can take a slot`,
    };
  }
  await endCycle(pass, record);
  await pass.release();
  return { kind: 'aborted', reason: `${why}; cycle ended, cordon undone` };
}
