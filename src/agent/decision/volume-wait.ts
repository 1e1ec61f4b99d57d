// The wait for the volumes after the drain (issue 54, DESIGN §2.8): the node goes down only once the
// volumes of the pods its drain evicted are detached from it and unmounted, as its own status says
// (src/volumes/volumes.ts: no request while the agent follows its Node). The volumes of the pods the
// drain left on purpose are named and not waited for. --volume-detach-timeout bounds it, counted
// from the record's volumesSince so that a restart goes on counting; what ends it early (the
// timeout, the slot lost) is the cycle's to act on (cycle.ts): this file only waits and says why.
import { shortDuration } from '../../text/duration.js';
import { judgeVolumes, volumeList, type VolumesJudged } from '../../volumes/volumes.js';
import type { CycleRecord } from '../../node/cycle.js';
import { waitStart } from './hold.js';
import type { Pass } from './pass.js';
import type { Outcome } from '../outcome.js';

/** How often the wait looks again without a watch of the Node (with one: at each change, at most this). */
const VOLUME_POLL_MS = 2_000;
/** With the Node followed, the wait looks again at each change and at least this often. */
const VOLUME_WATCHED_MS = 30_000;

/** Why the wait stopped short of the volumes' detach: the slot lost, or the timeout passed. */
export type VolumeWaitEnd =
  { lost: string } | { timedOut: string; volumes: string[]; action: 'fail' | 'reboot' };

/** The volumes judged on the node as read now (those the pods left use are kept). */
async function judged(pass: Pass, kept: ReadonlySet<string>): Promise<VolumesJudged> {
  const node = await pass.readNode();
  return judgeVolumes(node.volumes ?? { attached: [], inUse: [] }, kept);
}

/**
 * The volumes of the pods left on the node, asked about only when something is attached at all
 * (most nodes: nothing, and no question); undefined when nothing is.
 */
async function keptIfAttached(pass: Pass): Promise<Set<string> | undefined> {
  if ((await judged(pass, new Set())).waiting.length === 0) return undefined;
  return (await pass.deps.volumes?.kept(pass.signal)) ?? new Set<string>();
}

/**
 * Until the followed Node's next change (since `version`, the views' count when it was read), at
 * most VOLUME_WATCHED_MS; VOLUME_POLL_MS without a watch; never past `leftMs`.
 */
async function nextLook(pass: Pass, version: number | undefined, leftMs: number): Promise<void> {
  const views = pass.deps.views;
  const signal = pass.signal;
  if (views?.following === true && signal !== undefined) {
    await views.changed(Math.min(leftMs, VOLUME_WATCHED_MS), signal, false, version);
    signal.throwIfAborted();
  } else await pass.deps.clock.sleep(Math.min(leftMs, VOLUME_POLL_MS), signal);
}

/** The progress report of the wait: the volumes still attached, since when, and those not waited for. */
function waiting(volumes: VolumesJudged, sinceMs: number, timeoutMs: number): Outcome {
  const left =
    volumes.kept.length === 0 ? '' : `; not waited for (pods left on the node): ${volumeList(volumes.kept)}`;
  const since = new Date(sinceMs).toISOString();
  return {
    kind: 'waiting-for-volumes',
    reason: `drained; reboot waits: ${volumeList(volumes.waiting)} still attached (waiting since ${since}, at most --volume-detach-timeout ${shortDuration(timeoutMs)})${left}`,
  };
}

/**
 * Waits while volumes of the evicted pods are attached to the node or in use on it, looking again at
 * each change of the followed Node (VOLUME_POLL_MS without a watch), checking the slot each time and
 * reporting 'waiting-for-volumes' with the volumes and how long. Resolves to undefined once none is
 * left (at once with --volume-detach-timeout 0, or none attached), else to why it stopped.
 */
export async function waitForVolumes(pass: Pass, record: CycleRecord): Promise<VolumeWaitEnd | undefined> {
  const timeout = pass.config.volumeDetachTimeoutMs;
  if (timeout <= 0) return undefined;
  const kept = await keptIfAttached(pass);
  if (kept === undefined) return undefined;
  let since: number | undefined;
  for (;;) {
    const version = pass.deps.views?.version();
    const volumes = await judged(pass, kept);
    if (volumes.waiting.length === 0) return undefined;
    since ??= await waitStart(pass, record, 'volumesSince');
    const waitedMs = Math.max(0, pass.deps.clock.now().getTime() - since);
    if (waitedMs >= timeout) {
      const timedOut = `${volumeList(volumes.waiting)} still attached ${shortDuration(waitedMs)} after the drain, past --volume-detach-timeout ${shortDuration(timeout)}`;
      return { timedOut, volumes: volumes.waiting, action: pass.config.volumeDetachTimeoutAction };
    }
    const lost = await pass.slotStillOurs(record);
    if (lost !== undefined) return { lost: `${lost} while waiting for volumes to detach` };
    // the status names the volumes and when the wait began, not for how long: a look that finds the
    // same volumes writes nothing
    await pass.env.progress.report(waiting(volumes, since, timeout), pass.signal);
    await nextLook(pass, version, timeout - waitedMs);
  }
}
