// The hold after the drain (--hold-after-drain-annotation, issue 30): an external worker (firmware,
// a backup, a storage rebalance) annotates the node while it needs it drained; the agent keeps its
// slot and its cordon and waits, after the drain and before --reboot-delay, until no such annotation
// stands, bounded by --hold-timeout. What ends it early (the timeout, the slot lost) is the cycle's
// to act on (cycle.ts): this file only waits and says why it stopped.
import { CYCLE_ANNOTATION, formatCycle, parseCycle, type CycleRecord } from '../../node/cycle.js';
import type { NodeState } from '../../node/node.js';
import { shortDuration } from '../../text/duration.js';
import type { Pass } from './pass.js';

/** The first wait between two reads of the node while held; it doubles up to HOLD_POLL_MAX_MS. */
export const HOLD_POLL_FIRST_MS = 5_000;
/** The longest wait between two reads of the node while held. */
export const HOLD_POLL_MAX_MS = 30_000;

/** Why a hold stopped short of its annotations' going: the slot lost, or --hold-timeout passed. */
export type HoldEnd = { lost: string } | { timedOut: string; keys: string[] };

/** The first of `keys` the node carries, as `key=value`; undefined when it carries none. */
function holdOn(node: NodeState, keys: readonly string[]): string | undefined {
  const key = keys.find((k) => node.annotations[k] !== undefined);
  return key === undefined ? undefined : `${key}=${node.annotations[key] ?? ''}`;
}

/** The start of a wait after the drain, as the record keeps it. */
type WaitStart = 'heldSince' | 'volumesSince';

/** The record's start of `wait` (epoch ms) when it can be read and is not ahead of `nowMs`. */
function startOf(record: CycleRecord | undefined, wait: WaitStart, nowMs: number): number | undefined {
  const since = Date.parse(record?.[wait] ?? '');
  return Number.isNaN(since) || since > nowMs ? undefined : since;
}

/**
 * When a wait after the drain began (epoch ms; `wait` names its field in the record): the record's
 * start as the node carries it (an earlier agent of this node wrote it before a restart), else now,
 * written into the record first, guarded, on the record as it is on the node then (another agent of
 * the node may have written it meanwhile; a record gone is not written again: the slot check that
 * follows ends the wait). A time the record cannot give back, or one ahead of the clock (set back
 * since), reads as now and is written again.
 */
export async function waitStart(pass: Pass, record: CycleRecord, wait: WaitStart): Promise<number> {
  const now = pass.deps.clock.now();
  let start = now.getTime();
  await pass.guardedWrite(`the wait after the drain began (${wait})`, (node) => {
    const current = parseCycle(node.annotations[CYCLE_ANNOTATION]);
    const since = startOf(current ?? record, wait, now.getTime());
    if (since !== undefined || current === undefined) {
      start = since ?? start;
      return undefined;
    }
    return { annotations: { [CYCLE_ANNOTATION]: formatCycle({ ...current, [wait]: now.toISOString() }) } };
  });
  return start;
}

/**
 * The record without the starts of its waits after the drain (the hold's, the volumes'): a drain
 * again starts waits of its own.
 */
export function withoutWaitsAfterDrain(record: CycleRecord): CycleRecord {
  const rest = { ...record };
  delete rest.heldSince;
  delete rest.volumesSince;
  return rest;
}

/**
 * Waits while the node carries one of --hold-after-drain-annotation's keys, reading it again on the
 * clock (HOLD_POLL_FIRST_MS, doubling up to HOLD_POLL_MAX_MS) and checking the slot is still ours
 * each time; reports 'held-after-drain' naming the annotation. --hold-timeout counts from the
 * record's heldSince (waitStart): an agent restarted while its node is held goes on counting; a
 * drain again (someone else's uncordon and cordon) starts a hold of its own (withoutWaitsAfterDrain). Resolves
 * to undefined once none stands (at once without the flag), else to why the hold stopped; the
 * pass's signal aborts the wait.
 */
export async function holdAfterDrain(pass: Pass, record: CycleRecord): Promise<HoldEnd | undefined> {
  const keys = pass.config.holdAfterDrainAnnotations;
  if (keys.length === 0) return undefined;
  const { clock } = pass.deps;
  const timeout = pass.config.holdTimeoutMs;
  let since: number | undefined;
  let waitMs = HOLD_POLL_FIRST_MS;
  for (;;) {
    const hold = holdOn(await pass.readNode(), keys);
    if (hold === undefined) return undefined;
    since ??= await waitStart(pass, record, 'heldSince');
    // a wall clock set back reads as no time held, never as a negative time
    const heldMs = Math.max(0, clock.now().getTime() - since);
    if (heldMs >= timeout) {
      return {
        timedOut: `held after the drain past --hold-timeout ${shortDuration(timeout)}: node annotation ${hold} still stands`,
        keys: keys.filter((k) => pass.node.annotations[k] !== undefined),
      };
    }
    const lost = await pass.slotStillOurs(record);
    if (lost !== undefined) return { lost: `${lost} while held after the drain by ${hold}` };
    const reason = `drained; reboot held while node annotation ${hold} stands (at most --hold-timeout ${shortDuration(timeout)})`;
    await pass.env.progress.report({ kind: 'held-after-drain', reason }, pass.signal);
    await clock.sleep(Math.min(waitMs, timeout - heldMs), pass.signal);
    waitMs = Math.min(waitMs * 2, HOLD_POLL_MAX_MS);
  }
}
