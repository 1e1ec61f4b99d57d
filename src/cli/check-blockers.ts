// `check`'s blockers: each asked once and its answer kept, so that the items `check` shows (every
// blocker's answer, not only the first) and the agent's own steps it runs (judgeBeforeLock,
// judgeAtSlot: the first that blocks) read the same answers, with one request each.
import { errorText } from '../text/error-text.js';
import { checksVerdict, HealthCheckBlocker, objectOf, type CheckResult } from '../blockers/health-check.js';
import { firstBlock, type Blocker, type Verdict } from '../blockers/blocker.js';
import type { CheckItem } from './check-report.js';

/** A blocker whose answer is kept, and its lines in the report. */
export interface KeptBlocker extends Blocker {
  /** The blocker's lines, from the kept answer (one per --health-check). */
  items(): Promise<CheckItem[]>;
}

/** The same blocker (its name, where and whom it judges), answering from `ask` once. */
function keep(blocker: Blocker, ask: () => Promise<Verdict>, items: () => Promise<CheckItem[]>): KeptBlocker {
  let answer: Promise<Verdict> | undefined;
  const { name, atSlot, beforeReboot, controlPlaneOnly } = blocker;
  return {
    name,
    ...(atSlot === undefined ? {} : { atSlot }),
    ...(beforeReboot === undefined ? {} : { beforeReboot }),
    ...(controlPlaneOnly === undefined ? {} : { controlPlaneOnly }),
    check: () => (answer ??= ask()),
    items,
  };
}

/** One line for a blocker; through firstBlock, so that a blocker that throws blocks as in the agent. */
async function blockerItem(blocker: Blocker): Promise<CheckItem> {
  const verdict = await firstBlock([blocker]);
  return verdict.blocked
    ? { name: blocker.name, verdict: 'blocks', detail: verdict.reason }
    : { name: blocker.name, verdict: 'ok', detail: 'does not block' };
}

/** Each --health-check with its result, one line each (the blocker's verdict is the first failing one's). */
function keepHealthChecks(blocker: HealthCheckBlocker, signal: AbortSignal): KeptBlocker {
  let results: Promise<CheckResult[]> | undefined;
  const asked = (): Promise<CheckResult[]> => (results ??= blocker.results(signal));
  const lines = async (): Promise<CheckItem[]> => {
    const { name } = blocker;
    try {
      return (await asked()).map((r) => ({
        name: `${name} ${objectOf(r.check)}`,
        verdict: r.ok ? 'ok' : 'blocks',
        detail: `${r.check.expression}: ${r.reason}`,
      }));
    } catch (err) {
      return [{ name, verdict: 'blocks', detail: errorText(err) }];
    }
  };
  return keep(blocker, async () => checksVerdict(await asked()), lines);
}

/** The agent's blockers for the node, each asked at most once (on `signal`), in the same order. */
export function keepAnswers(blockers: readonly Blocker[], signal: AbortSignal): KeptBlocker[] {
  return blockers.map((blocker) => {
    if (blocker instanceof HealthCheckBlocker) return keepHealthChecks(blocker, signal);
    const kept: KeptBlocker = keep(
      blocker,
      () => blocker.check(signal),
      async () => [await blockerItem(kept)],
    );
    return kept;
  });
}

/** Every blocker's lines, asked one after the other in the agent's order (as the agent asks them). */
export async function blockerLines(blockers: readonly KeptBlocker[]): Promise<CheckItem[]> {
  const lines: CheckItem[] = [];
  for (const blocker of blockers) lines.push(...(await blocker.items()));
  return lines;
}
