// What the cycle records of a drain: the summary kept for the reboot history, and the Event naming
// the pods --drain-fallback delete deleted.
import type { DrainResult } from '../../drain/drainer.js';
import { drainSummary, type DrainSummary } from '../../node/drain-summary.js';
import type { Pass } from './pass.js';

/** The names of at most this many deleted pods go into one DrainFallback Event's message. */
const EVENT_PODS = 20;

/**
 * The drain's result as the history keeps it (only rule-skipped pods count as skipped); undefined
 * when the drain touched no pod (nothing to record).
 */
export function summaryOf(result: DrainResult): DrainSummary | undefined {
  const summary = drainSummary({
    evicted: result.evicted,
    skipped: result.skipped.filter((s) => s.rule === true).map((s) => s.pod),
    waited: result.waited,
    deleted: result.deleted,
  });
  return Object.keys(summary).length === 0 ? undefined : summary;
}

/** Event DrainFallback on the node naming each pod --drain-fallback delete deleted (none when none was). */
export async function reportFallback(pass: Pass, result: DrainResult): Promise<void> {
  const deleted = result.deleted;
  if (deleted.length === 0) return;
  const more = deleted.length > EVENT_PODS ? ` and ${deleted.length - EVENT_PODS} more` : '';
  await pass.deps.events.record(
    'DrainFallback',
    `deleted ${deleted.length} pod(s) whose eviction was still refused at --drain-timeout (--drain-fallback delete): ${deleted.slice(0, EVENT_PODS).join(', ')}${more}`,
    'Warning',
  );
}
