// A drain that did not complete (and no --force-reboot): whose fault it was decides what follows
// (issue 46). A pod's or the request's (a denial, a budget that never allowed, a pod stuck
// terminating, a bad drain label): with --on-drain-failure quarantine the node is quarantined and
// passed over, the record saying which kind of failure it was. The API server's alone (5xx, 429 of
// API Priority and Fairness, no answer until the deadline): no quarantine; the node gives its slot
// back and waits as for a blocker ("the API server is failing: …"), then tries again.
import type { DrainResult } from '../../drain/drainer.js';
import type { CycleRecord } from '../../node/cycle.js';
import {
  QUARANTINE_LABEL,
  quarantineValue,
  kindWords,
  podList,
  quarantineKindOf,
  quarantineWrite,
  type QuarantineKind,
  type QuarantinedPod,
} from '../../node/quarantine.js';
import { shortDuration } from '../../text/duration.js';
import type { Outcome } from '../outcome.js';
import { endCycle, endUndrainedCycle } from './cycle-end.js';
import { ourCordon } from '../../node/our-cordon.js';
import { summaryOf } from './drain-report.js';
import type { Pass } from './pass.js';
import { afterFailure, waveAtEnd } from './wave.js';
import { waveOf } from '../../node/wave.js';

/** What kured_ts_blocked and the status name as the blocker of a node whose drain met a failing API server. */
const API_SERVER_BLOCKER = 'api-server';

/**
 * A wait after the drain that outlasted its timeout: why, and what stood: the hold's annotations
 * (--hold-timeout), the volumes still attached or the node checks still false (--volume-detach-timeout).
 */
export type WaitTimedOut = { why: string } & (
  { holdKeys: string[] } | { volumes: string[] } | { nodeChecks: string[] } | { hook: string }
);

/** Ends the cycle of a drain that failed: a wait for the API server when only it failed, else drainFailed. */
export function endFailedDrain(pass: Pass, record: CycleRecord, result: DrainResult): Promise<Outcome> {
  const server = result.serverFailure;
  return server === undefined
    ? drainFailed(pass, record, result)
    : serverFailed(pass, record, result, server);
}

/**
 * Uncordon (if we cordoned; with --quarantine-cordon our cordon stays, recorded as ours) and end the
 * cycle BEFORE giving the slot back (kured #1129). With --on-drain-failure quarantine the same write
 * quarantines the node: it is passed over until the pods that stopped the drain change or
 * --quarantine-retry passes, instead of taking the next free slot again (its need is the oldest).
 * `hold` says when the hold after the drain outlasted --hold-timeout instead: its reason replaces
 * the pods, and the quarantine lasts while those annotations stand (no pod of it can change).
 */
export async function drainFailed(
  pass: Pass,
  record: CycleRecord,
  result: DrainResult,
  hold?: WaitTimedOut,
): Promise<Outcome> {
  const why = hold?.why;
  const kind = kindOf(result, hold);
  const quarantine = pass.config.onDrainFailure === 'quarantine';
  const keepCordon = quarantine && pass.config.quarantineCordon;
  await endCycle(pass, keepCordon ? { ...record, cordoned: false } : record, (node) => {
    const summary = summaryOf(result);
    const annotations = pass.history(node, summary ? { ...record, drain: summary } : record, 'drain-failed');
    if (!quarantine) return { annotations };
    const cordoned = keepCordon && record.cordoned && ourCordon(node, record);
    const held = heldBy(hold);
    const q = quarantineWrite({
      since: pass.now(),
      ...kind,
      pods: quarantinedPods(result),
      cordoned,
      ...held,
    });
    // quarantined: a failure of its wave, in the same write
    return {
      labels: { ...q.labels, ...waveAtEnd(pass, node, false) },
      annotations: { ...annotations, ...q.annotations },
    };
  });
  const pods = podList(quarantinedPods(result), 10);
  if (quarantine) await quarantineFailsWave(pass, `drain failed: ${why ?? pods}`);
  await pass.release();
  if (!quarantine) return { kind: 'drain-failed', reason: `drain failed: ${why ?? pods}` };
  return { kind: 'quarantined', reason: quarantinedReason(pass, { why, pods, keepCordon, kind }) };
}

/** Until what a quarantine for a wait past its timeout lasts (else until the label is removed). */
const LASTS: Partial<Record<QuarantineKind, string>> = {
  'volume-detach-timeout': 'they are detached',
  'hold-timeout': 'the annotation goes',
};

/** Why the node is quarantined, and until when, in words. */
function quarantinedReason(
  pass: Pass,
  q: {
    why: string | undefined;
    pods: string;
    keepCordon: boolean;
    kind: { kind?: QuarantineKind };
  },
): string {
  const retry = pass.config.quarantineRetryMs;
  const until = retry > 0 ? ` or ${shortDuration(retry)} pass` : '';
  const cordon = q.keepCordon ? '; left cordoned' : '';
  const what = q.why ?? `the drain failed on ${q.pods}`;
  const lasts =
    q.why === undefined
      ? 'these pods change'
      : (LASTS[q.kind.kind ?? 'hold-timeout'] ?? 'the label is removed');
  return `quarantined (${QUARANTINE_LABEL}=${quarantineValue(q.kind.kind)})${kindWords(q.kind)}: ${what}; passed over until ${lasts}${until}; lock released${cordon}`;
}

/** A quarantine is a failure of the node's wave, when one is tracked: it may spend the budget (halt). */
async function quarantineFailsWave(pass: Pass, reason: string): Promise<void> {
  const wave = pass.deps.waves === undefined ? undefined : waveOf(pass.node.labels)?.wave;
  if (wave !== undefined) await afterFailure(pass, wave, reason);
}

/** The record's kind: the hold's, else the worst kind among the pods that stopped the drain. */
/** What the quarantine of a wait that timed out records as standing. */
function heldBy(hold: WaitTimedOut | undefined): {
  volumes?: string[];
  holdKeys?: string[];
  nodeChecks?: string[];
  hook?: string;
} {
  if (hold === undefined) return {};
  if ('hook' in hold) return { hook: hold.hook };
  if ('volumes' in hold) return { volumes: hold.volumes };
  if ('nodeChecks' in hold) return { nodeChecks: hold.nodeChecks };
  return { holdKeys: hold.holdKeys };
}

function kindOf(result: DrainResult, hold: WaitTimedOut | undefined): { kind?: QuarantineKind } {
  const kind =
    hold === undefined
      ? quarantineKindOf(result.pending.map((p) => p.failure))
      : 'volumes' in hold
        ? 'volume-detach-timeout'
        : 'nodeChecks' in hold
          ? 'node-check-timeout'
          : 'hook' in hold
            ? 'before-reboot-hook'
            : 'hold-timeout';
  return kind === undefined ? {} : { kind };
}

/**
 * The pods that stopped the drain, as the quarantine records them: those that failed for a reason
 * of their own (not one evicted when the drain stopped for another, whose going would lift the
 * quarantine at once; not one whose eviction met only the API server's failures), or every pending
 * pod when none did.
 */
function quarantinedPods(result: DrainResult): QuarantinedPod[] {
  const own = result.pending.filter((p) => p.failure !== undefined && p.failure !== 'api-server');
  return (own.length > 0 ? own : result.pending).map((p) => ({
    pod: p.pod,
    ...(p.uid === undefined ? {} : { uid: p.uid }),
    reason: p.reason,
  }));
}

/**
 * The drain met only answers about the API server until its deadline: not the node's fault, so no
 * quarantine. The cycle ends as after a failed drain (our cordon goes, the slot is given back for
 * another node to use) and the node waits as for a blocker, then tries again.
 */
async function serverFailed(
  pass: Pass,
  record: CycleRecord,
  result: DrainResult,
  why: string,
): Promise<Outcome> {
  await endUndrainedCycle(pass, record, result);
  return { kind: 'blocked', blocker: API_SERVER_BLOCKER, reason: `${why}; drain stopped, lock released` };
}
