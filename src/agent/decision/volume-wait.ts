// The wait for the volumes after the drain (issue 54, DESIGN §2.8): the node goes down only once the
// volumes of the pods its drain evicted are detached from it and unmounted, as its own status says
// (src/volumes/volumes.ts: no request while the agent follows its Node). The volumes of the pods the
// drain left on purpose are named and not waited for. --volume-detach-timeout bounds it, counted
// from the record's volumesSince so that a restart goes on counting; what ends it early (the
// timeout, the slot lost) is the cycle's to act on (cycle.ts): this file only waits and says why.
import { shortDuration } from '../../text/duration.js';
import { judgeVolumes, volumeList, type VolumesJudged } from '../../volumes/volumes.js';
import type { CycleRecord } from '../../node/cycle.js';
import type { NodeState } from '../../node/node.js';
import { waitStart } from './hold.js';
import type { Pass } from './pass.js';
import type { Outcome } from '../outcome.js';
import { errorText } from '../../text/error-text.js';

/** How often the wait looks again without a watch of the Node (with one: at each change, at most this). */
const VOLUME_POLL_MS = 2_000;
/** The most VolumeAttachments one look reads (CSI drivers attach at most 128 or so volumes to a node). */
const ATTACHMENTS_READ_MAX = 256;
/** With the Node followed, the wait looks again at each change and at least this often. */
const VOLUME_WATCHED_MS = 30_000;

/** Why the wait stopped short of the volumes' detach: the slot lost, or the timeout passed. */
export type VolumeWaitEnd =
  { lost: string } | { timedOut: string; volumes: string[]; action: 'fail' | 'reboot' };

/**
 * The volumes of the pods left, or undefined when they cannot be told now (a claim that cannot be
 * read: a 429, a 403 of an older chart): the wait then waits for every volume and asks again.
 */
async function keptNow(pass: Pass): Promise<Set<string> | undefined> {
  try {
    return (await pass.deps.volumes?.kept(pass.signal)) ?? new Set<string>();
  } catch (err) {
    pass.signal?.throwIfAborted();
    pass.deps.logger.warn('cannot tell the volumes of the pods left on the node', {
      node: pass.config.nodeId,
      error: errorText(err),
    });
    return undefined;
  }
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

/** The volumes attached to `node` as last read. */
export function attachedTo(node: NodeState): string[] {
  return [...(node.volumes?.attached ?? [])];
}

/** What the wait has learnt so far: the volumes of the pods left (once told), those it has waited for. */
interface WaitState {
  kept: Set<string> | undefined;
  /** Every volume it has seen attached or in use (and those attached before the drain). */
  seen: Set<string>;
  since: number | undefined;
}

/**
 * Of the volumes seen, those still detaching: gone from the node's status, their VolumeAttachment
 * still there (the controller drops a volume from the status before the CSI detach runs). When that
 * cannot be told now, all of them (fail safe; asked again at the next look).
 */
async function detachingNow(pass: Pass, seen: readonly string[]): Promise<string[]> {
  if (seen.length === 0) return [];
  // the names come from the node's status, which its kubelet writes: a list longer than any node
  // attaches is not read one by one (a GET each), it is waited for whole (fail safe)
  if (seen.length > ATTACHMENTS_READ_MAX) return [...seen];
  try {
    return (await pass.deps.volumes?.detaching(seen, pass.signal)) ?? [];
  } catch (err) {
    pass.signal?.throwIfAborted();
    pass.deps.logger.warn('cannot tell whether the volumes are detached', {
      node: pass.config.nodeId,
      error: errorText(err),
    });
    return [...seen];
  }
}

/** One look: the volumes still waited for (attached, in use, or still detaching); undefined: none. */
async function look(pass: Pass, state: WaitState): Promise<VolumesJudged | undefined> {
  // one read of the node per look, judged as it is
  const onNode = (await pass.readNode()).volumes ?? { attached: [], inUse: [] };
  // the pods left are asked about only once something is or was attached (most nodes: nothing)
  if (state.seen.size === 0 && judgeVolumes(onNode, new Set()).waiting.length === 0) return undefined;
  state.kept ??= await keptNow(pass);
  const kept = state.kept ?? new Set<string>();
  const volumes = judgeVolumes(onNode, kept);
  for (const v of volumes.waiting) state.seen.add(v);
  if (volumes.waiting.length > 0) return volumes;
  const detaching = await detachingNow(
    pass,
    [...state.seen].filter((v) => !kept.has(v)),
  );
  return detaching.length === 0 ? undefined : { ...volumes, waiting: detaching };
}

/** Why the wait after the drain stops: the slot lost, or --volume-detach-timeout passed (`late`). */
export type DataWaitStop = { lost: string } | { late: string; action: 'fail' | 'reboot' };

/**
 * The timeout passed since `since` (the wait's start, both waits after the drain share it), or the
 * slot is lost: why the wait for `waitingFor` stops; undefined: it goes on.
 */
export async function dataWaitStop(
  pass: Pass,
  record: CycleRecord,
  since: number,
  waitingFor: string,
): Promise<DataWaitStop | undefined> {
  const timeout = pass.config.volumeDetachTimeoutMs;
  const waitedMs = Math.max(0, pass.deps.clock.now().getTime() - since);
  if (waitedMs >= timeout) {
    const late = `${shortDuration(waitedMs)} after the drain, past --volume-detach-timeout ${shortDuration(timeout)}`;
    return { late, action: pass.config.volumeDetachTimeoutAction };
  }
  const lost = await pass.slotStillOurs(record);
  return lost === undefined ? undefined : { lost: `${lost} while waiting for ${waitingFor}` };
}

/** The wait's end for `volumes`: the slot lost, or the volumes still attached past the timeout. */
function volumeWaitEnd(stop: DataWaitStop, volumes: VolumesJudged): VolumeWaitEnd {
  if ('lost' in stop) return stop;
  const timedOut = `${volumeList(volumes.waiting)} still attached ${stop.late}`;
  return { timedOut, volumes: volumes.waiting, action: stop.action };
}

/**
 * Waits while volumes of the evicted pods are attached to the node, in use on it, or still detaching
 * (their VolumeAttachment still there), looking again at each change of the followed Node
 * (VOLUME_POLL_MS without a watch), checking the slot each time and reporting 'waiting-for-volumes'
 * with the volumes. `before`: the volumes attached when the drain began (the status may have dropped
 * them by the first look while their detach still runs). Resolves to undefined once none is left (at
 * once with --volume-detach-timeout 0), else to why it stopped.
 */
export async function waitForVolumes(
  pass: Pass,
  record: CycleRecord,
  before: readonly string[] = [],
): Promise<VolumeWaitEnd | undefined> {
  const timeout = pass.config.volumeDetachTimeoutMs;
  if (timeout <= 0) return undefined;
  const state: WaitState = { kept: undefined, seen: new Set(before), since: undefined };
  for (;;) {
    const version = pass.deps.views?.version();
    const volumes = await look(pass, state);
    if (volumes === undefined) return undefined;
    state.since ??= await waitStart(pass, record, 'volumesSince');
    const stop = await dataWaitStop(pass, record, state.since, 'volumes to detach');
    if (stop !== undefined) return volumeWaitEnd(stop, volumes);
    // the status names the volumes and when the wait began, not for how long: a look that finds the
    // same volumes writes nothing
    await pass.env.progress.report(waiting(volumes, state.since, timeout), pass.signal);
    await nextLook(pass, version, timeout - Math.max(0, pass.deps.clock.now().getTime() - state.since));
  }
}
