// What the drain of a reboot cycle did with the node's pods, kept small (counts and the first
// HISTORY_PODS names of each kind): carried in the cycle record across the reboot, then into the
// node's reboot history (`kured-ts history`).

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Pods of one kind the drain handled: how many, and the names of the first HISTORY_PODS. */
interface PodTally {
  count: number;
  /** namespace/name, at most HISTORY_PODS. */
  pods: string[];
}

/** What the drain of a cycle did with the node's pods; a kind with no pod is absent. */
export interface DrainSummary {
  /** Evicted (or deleted by --drain-fallback) and gone. */
  evicted?: PodTally;
  /** Left on the node by a drain rule (`skip`). DaemonSet, mirror and terminal pods are not listed. */
  skipped?: PodTally;
  /** Waited for until they completed (drain rule `wait-completed`). */
  waited?: PodTally;
  /** Deleted by --drain-fallback delete (also counted in evicted). */
  deleted?: PodTally;
}

/** Names kept per kind of pod in a drain summary: the annotations stay small on a node of 110 pods. */
const HISTORY_PODS = 20;

/** The summary of the drain's lists of pod names (each kept to its first HISTORY_PODS). */
export function drainSummary(lists: Readonly<Record<keyof DrainSummary, readonly string[]>>): DrainSummary {
  const summary: DrainSummary = {};
  for (const key of ['evicted', 'skipped', 'waited', 'deleted'] as const) {
    const names = lists[key];
    if (names.length > 0) summary[key] = { count: names.length, pods: names.slice(0, HISTORY_PODS) };
  }
  return summary;
}

function tallyOf(value: unknown): PodTally | undefined {
  if (!isRecord(value) || typeof value.count !== 'number' || !Array.isArray(value.pods)) return undefined;
  const pods = value.pods.filter((p): p is string => typeof p === 'string').slice(0, HISTORY_PODS);
  return { count: value.count, pods };
}

/** Reads a summary written by drainSummary; undefined when there is none that can be read. */
export function parseDrainSummary(value: unknown): DrainSummary | undefined {
  if (!isRecord(value)) return undefined;
  const summary: DrainSummary = {};
  for (const key of ['evicted', 'skipped', 'waited', 'deleted'] as const) {
    const tally = tallyOf(value[key]);
    if (tally !== undefined) summary[key] = tally;
  }
  return summary;
}
