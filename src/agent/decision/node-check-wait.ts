// The wait for the storage system's word after the drain (--node-check, issue 54): once the volumes
// are detached (volume-wait.ts), the node goes down only when every node check holds for it, as the
// storage system's own objects say (Longhorn: no volume attached here; Rook: the cluster healthy).
// Bounded by the same --volume-detach-timeout, counted from the same start (the record's
// volumesSince, so that a restart goes on counting); looked at again every NODE_CHECK_POLL_MS (one
// LIST per check: only the nodes in their slot look). What ends it early is the cycle's to act on.
import { failedNodeCheck } from '../../blockers/node-check.js';
import type { CycleRecord } from '../../node/cycle.js';
import { shortDuration } from '../../text/duration.js';
import { waitStart } from './hold.js';
import { dataWaitStop } from './volume-wait.js';
import type { Pass } from './pass.js';

/** How often the checks are judged again while one is false. */
const NODE_CHECK_POLL_MS = 10_000;

/** Why the wait stopped short of the checks' holding: the slot lost, or the timeout passed. */
export type NodeCheckWaitEnd =
  { lost: string } | { timedOut: string; nodeChecks: string[]; action: 'fail' | 'reboot' };

/**
 * Judges the node checks of after the drain (after-drain, always) until all hold, reporting
 * 'waiting-for-volumes' with the first that does not; resolves to undefined once they do, else to
 * why it stopped (with --volume-detach-timeout 0: judged once, and a false check ends it at once).
 */
export async function waitForNodeChecks(
  pass: Pass,
  record: CycleRecord,
): Promise<NodeCheckWaitEnd | undefined> {
  const checks = pass.deps.nodeChecks;
  const judged = checks?.afterDrain ?? [];
  if (checks === undefined || judged.length === 0) return undefined;
  const timeout = pass.config.volumeDetachTimeoutMs;
  let since: number | undefined;
  for (;;) {
    const results = await checks.evaluate(judged, pass.signal);
    const failed = failedNodeCheck(results);
    if (failed === undefined) return undefined;
    since ??= await waitStart(pass, record, 'volumesSince');
    const stop = await dataWaitStop(pass, record, since, 'the node checks');
    if (stop !== undefined) {
      if ('lost' in stop) return stop;
      const nodeChecks = results.filter((r) => !r.ok).map((r) => r.check.text);
      return { timedOut: `${failed} ${stop.late}`, nodeChecks, action: stop.action };
    }
    const started = new Date(since).toISOString();
    await pass.env.progress.report(
      {
        kind: 'waiting-for-volumes',
        reason: `drained; reboot waits: ${failed} (waiting since ${started}, at most --volume-detach-timeout ${shortDuration(timeout)})`,
      },
      pass.signal,
    );
    const leftMs = timeout - Math.max(0, pass.deps.clock.now().getTime() - since);
    await pass.deps.clock.sleep(Math.min(NODE_CHECK_POLL_MS, leftMs), pass.signal);
  }
}
