// Quarantine: a node whose drain failed (a pod stuck terminating, a budget that never allows) gives
// its slot back and is passed over, so that one undrainable node does not hold the fleet back (AKS
// cordons such a node and labels it Quarantined). The label says that it is; the annotation says
// since when, which kind of failure and which pods stopped the drain. It holds until those pods
// change (one of them gone or replaced) or --quarantine-retry passes, and goes at the end of the
// node's next successful cycle (or once no reboot is needed any more). An operator who removes the
// label releases it. Only a failure about the node's pods or the request quarantines: a drain that
// met only answers about the API server (issue 46) gives its slot back and waits instead.
import type { NodeState, NodeWrite } from './node.js';
import { shortDuration } from '../text/duration.js';
import { volumeList } from '../volumes/volumes.js';

/** The label every quarantined node carries (value QUARANTINE_VALUE): a selector for the fleet's count. */
export const QUARANTINE_LABEL = 'kured-ts.dev/quarantined';
/** Why it is quarantined: its drain failed (or its hold outlasted --hold-timeout). */
const QUARANTINE_VALUE = 'drain-failed';
/**
 * Why it is quarantined: its need survived --max-reboots-per-need reboots. Only an operator releases
 * it (removing the label), or the need going away; --quarantine-retry does not.
 */
export const REBOOT_LOOP_VALUE = 'reboot-loop';
/** Why it is quarantined: a hook's Job (--before-reboot-hook, --after-reboot-hook) failed or timed out. */
const HOOK_FAILED_VALUE = 'hook-failed';
/** Every value the agent writes on QUARANTINE_LABEL (its admission policy admits these alone). */
export const QUARANTINE_VALUES: readonly string[] = [QUARANTINE_VALUE, REBOOT_LOOP_VALUE, HOOK_FAILED_VALUE];
/** The record: QuarantineRecord as JSON. */
export const QUARANTINE_ANNOTATION = 'kured-ts.dev/quarantine';

/**
 * Why the drain did not get a pod off the node, by kind. Each but `api-server` is about the pod or
 * the request (the same eviction would meet it again) and quarantines the node:
 * - `eviction-denied`: an admission webhook or policy denied the eviction (no retry would pass it);
 * - `eviction-rejected`: the eviction was answered about the pod or the request (400, 403, 422, the
 *   500 of a pod under two PodDisruptionBudgets) as often as the drain allows;
 * - `disruption-budget`: a PodDisruptionBudget refused its eviction until --drain-timeout;
 * - `namespace-terminating`: its namespace, being deleted, refused its eviction until --drain-timeout;
 * - `still-terminating`: evicted, but still there at --drain-timeout (past its grace);
 * - `not-completed`: drain rule wait-completed, not completed at --drain-timeout;
 * - `drain-label`: its drain label is not understood;
 * - `api-server`: its eviction met only answers about the API server (5xx, 429 of API Priority and
 *   Fairness, no answer, a reset connection) until the deadline: never the node's fault.
 */
export type PodFailure =
  | 'eviction-denied'
  | 'eviction-rejected'
  | 'disruption-budget'
  | 'namespace-terminating'
  | 'still-terminating'
  | 'not-completed'
  | 'drain-label'
  | 'api-server';

/**
 * Which kind of failure put the node in quarantine: a pod's (PodFailure, never `api-server`), or
 * `hold-timeout`: the hold after the drain (--hold-after-drain-annotation) outlasted --hold-timeout;
 * `reboot-loop`: the need survived --max-reboots-per-need reboots (label value REBOOT_LOOP_VALUE).
 */
export type QuarantineKind =
  | Exclude<PodFailure, 'api-server'>
  | 'hold-timeout'
  | 'volume-detach-timeout'
  | 'node-check-timeout'
  | 'before-reboot-hook'
  | 'after-reboot-hook'
  | 'reboot-loop';

/** Each kind in a few words, for status, check, the outcome and the Event: first the worst. */
export const QUARANTINE_KINDS: Readonly<Record<QuarantineKind, string>> = {
  'drain-label': 'a drain label not understood',
  'eviction-denied': 'an eviction denied by admission',
  'eviction-rejected': 'an eviction rejected for the pod',
  'disruption-budget': 'a PodDisruptionBudget that allowed no eviction',
  'namespace-terminating': 'a namespace being deleted',
  'still-terminating': 'a pod still terminating',
  'not-completed': 'a pod not completed',
  'hold-timeout': 'a hold past --hold-timeout',
  'volume-detach-timeout': 'volumes still attached past --volume-detach-timeout',
  'node-check-timeout': 'a --node-check still false past --volume-detach-timeout',
  'before-reboot-hook': 'a before-reboot hook Job that failed or timed out',
  'after-reboot-hook': 'an after-reboot hook that failed, timed out or could not run',
  'reboot-loop': 'a need that survived --max-reboots-per-need reboots',
};

/** The command that releases a quarantine (the agent never lifts a reboot loop's on a timer). */
export function releaseCommand(node: string): string {
  return `kubectl label node ${node} ${QUARANTINE_LABEL}-`;
}

/** The kind a quarantine records for these pod failures: the first of QUARANTINE_KINDS among them. */
export function quarantineKindOf(failures: readonly (PodFailure | undefined)[]): QuarantineKind | undefined {
  return (Object.keys(QUARANTINE_KINDS) as QuarantineKind[]).find((k) => failures.includes(k as PodFailure));
}

/** Is `value` a QuarantineKind (as read back from the annotation)? */
function isQuarantineKind(value: unknown): value is QuarantineKind {
  return typeof value === 'string' && Object.hasOwn(QUARANTINE_KINDS, value);
}

/** A pod that stopped the drain. */
export interface QuarantinedPod {
  /** namespace/name */
  pod: string;
  /** Its UID when known: a pod recreated under the same name is another pod. */
  uid?: string;
  reason: string;
}

export interface QuarantineRecord {
  /** RFC 3339 time the agent quarantined the node (on its own clock; only its own clock reads it). */
  since: string;
  /** Which kind of failure put it there; absent in a record written before kured-ts said so. */
  kind?: QuarantineKind;
  /** The pods that stopped the drain. */
  pods: QuarantinedPod[];
  /** The node stays cordoned by us (--quarantine-cordon): lifted with the quarantine, or by its next cycle. */
  cordoned: boolean;
  /**
   * The hold annotations (--hold-after-drain-annotation) that outlasted --hold-timeout: passed over
   * while one of them stands (no pod stopped this drain, so no pod's change can lift it).
   */
  holdKeys?: string[];
  /**
   * The volumes still attached or in use past --volume-detach-timeout (their unique names): passed
   * over while the node's status lists one of them (no pod stopped this drain).
   */
  volumes?: string[];
  /**
   * The --node-check checks (as written) still false past --volume-detach-timeout: passed over until
   * --quarantine-retry passes or an operator lifts it (the agent does not list to find out).
   */
  nodeChecks?: string[];
  /** The hook Job (namespace/name) that failed or outlasted --hook-timeout. */
  hook?: string;
}

/** Is the node quarantined (the label is there, whatever its value)? */
export function isQuarantined(labels: Readonly<Record<string, string>>): boolean {
  return labels[QUARANTINE_LABEL] !== undefined;
}

/** The most the quarantine record holds (annotation-bounds.ts). */
export const QUARANTINE_MAX_BYTES = 16384;
/** The pods a quarantine record names at most (the first, then how many more), and a reason's length. */
const QUARANTINE_PODS_MAX = 32;
const POD_REASON_MAX_CHARS = 256;
const QUARANTINE_VOLUMES_MAX = 64;

/** The record as the annotation holds it: at most QUARANTINE_PODS_MAX pods, each reason cut short. */
export function formatQuarantine(record: QuarantineRecord): string {
  const pods = record.pods.slice(0, QUARANTINE_PODS_MAX).map((p) => ({
    ...p,
    reason:
      p.reason.length > POD_REASON_MAX_CHARS ? `${p.reason.slice(0, POD_REASON_MAX_CHARS - 1)}…` : p.reason,
  }));
  const more = record.pods.length - pods.length;
  // the volumes come from the node's status, which its kubelet writes: as many as fit
  const volumes = record.volumes?.slice(0, QUARANTINE_VOLUMES_MAX);
  return JSON.stringify({
    ...record,
    pods,
    ...(more > 0 ? { podsNotNamed: more } : {}),
    ...(volumes === undefined ? {} : { volumes }),
  });
}

function podOf(value: unknown): QuarantinedPod | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v.pod !== 'string') return undefined;
  return {
    pod: v.pod,
    ...(typeof v.uid === 'string' ? { uid: v.uid } : {}),
    reason: typeof v.reason === 'string' ? v.reason : '',
  };
}

/** The strings of a JSON array (none when it is not one). */
function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((k): k is string => typeof k === 'string') : [];
}

/** What stood past a wait's timeout, as the record read back names it (each only when named). */
function waitsOf(
  v: Record<string, unknown>,
): Pick<QuarantineRecord, 'holdKeys' | 'volumes' | 'nodeChecks' | 'hook'> {
  const lists = {
    holdKeys: strings(v.holdKeys),
    volumes: strings(v.volumes),
    nodeChecks: strings(v.nodeChecks),
  };
  return {
    ...Object.fromEntries(Object.entries(lists).filter(([, list]) => list.length > 0)),
    ...(typeof v.hook === 'string' ? { hook: v.hook } : {}),
  };
}

/** Reads the record; undefined when absent or unreadable. */
export function parseQuarantine(raw: string | undefined): QuarantineRecord | undefined {
  if (raw === undefined) return undefined;
  try {
    const v = JSON.parse(raw) as Record<string, unknown>;
    if (typeof v.since !== 'string' || Number.isNaN(Date.parse(v.since)) || !Array.isArray(v.pods))
      return undefined;
    const pods = v.pods.map(podOf).filter((p): p is QuarantinedPod => p !== undefined);
    return {
      since: v.since,
      ...(isQuarantineKind(v.kind) ? { kind: v.kind } : {}),
      pods,
      cordoned: v.cordoned === true,
      ...waitsOf(v),
    };
  } catch {
    return undefined;
  }
}

/** The write that quarantines a node with `record`. */
export function quarantineWrite(record: QuarantineRecord): {
  labels: Record<string, string>;
  annotations: Record<string, string>;
} {
  return {
    labels: { [QUARANTINE_LABEL]: quarantineValue(record.kind) },
    annotations: { [QUARANTINE_ANNOTATION]: formatQuarantine(record) },
  };
}

/** The label's value for a quarantine of `kind`. */
export function quarantineValue(kind: QuarantineKind | undefined): string {
  if (kind === 'reboot-loop') return REBOOT_LOOP_VALUE;
  return kind === 'before-reboot-hook' || kind === 'after-reboot-hook' ? HOOK_FAILED_VALUE : QUARANTINE_VALUE;
}

/**
 * Is this the quarantine of an after-reboot hook that failed: the node rebooted and is up, but not
 * fit for its pods by the hook's word. It stays (cordoned) until an operator removes the label; no
 * timer and no "no reboot needed" lifts it.
 */
export function afterHookQuarantine(node: Pick<NodeState, 'labels' | 'annotations'>): boolean {
  return (
    node.labels[QUARANTINE_LABEL] !== undefined &&
    parseQuarantine(node.annotations[QUARANTINE_ANNOTATION])?.kind === 'after-reboot-hook'
  );
}

/** The write that lifts the quarantine of `node` (label and record go); {} when there is none. */
export function liftWrite(node: Pick<NodeState, 'labels' | 'annotations'>): NodeWrite {
  const change: NodeWrite = {};
  if (node.labels[QUARANTINE_LABEL] !== undefined) change.labels = { [QUARANTINE_LABEL]: null };
  if (node.annotations[QUARANTINE_ANNOTATION] !== undefined)
    change.annotations = { [QUARANTINE_ANNOTATION]: null };
  return change;
}

/** Does the quarantine record say that the node's cordon is ours (--quarantine-cordon)? */
export function quarantineCordon(node: Pick<NodeState, 'annotations' | 'unschedulable'>): boolean {
  return node.unschedulable && parseQuarantine(node.annotations[QUARANTINE_ANNOTATION])?.cordoned === true;
}

/** A pod on the node now, as the quarantine compares them. */
export interface PresentPod {
  /** namespace/name */
  pod: string;
  uid?: string;
}

/** Whether the quarantine holds the node back now, and why. */
export type QuarantineVerdict = { held: false; reason: string } | { held: true; reason: string };

/** What judgeQuarantine looks at. */
export interface QuarantineFacts {
  node: Pick<NodeState, 'labels' | 'annotations' | 'volumes'>;
  /** The pods on the node now (only read for a quarantined node). */
  pods: readonly PresentPod[];
  now: Date;
  /** --quarantine-retry; 0 = only a change of its pods lifts it. */
  retryMs: number;
}

/** Names of the pods, at most `shown` of them. */
export function podList(pods: readonly QuarantinedPod[], shown = 5): string {
  const names = pods.slice(0, shown).map((p) => (p.reason === '' ? p.pod : `${p.pod} (${p.reason})`));
  const more = pods.length > shown ? `, and ${pods.length - shown} more` : '';
  return names.length === 0 ? 'unknown pods' : `${names.join(', ')}${more}`;
}

/** Is `p` still on the node, the same pod (same UID when both are known)? */
function stillThere(p: QuarantinedPod, present: readonly PresentPod[]): boolean {
  return present.some((q) => q.pod === p.pod && (p.uid === undefined || q.uid === p.uid));
}

/**
 * Does the quarantine hold the node back? Not without the label; with it, until one of the pods
 * that stopped the drain is gone or replaced, or --quarantine-retry has passed since it began. A
 * label without a readable record (an operator's own, or a record someone removed) holds until the
 * label goes: nothing says when to try again.
 */
export function judgeQuarantine(f: QuarantineFacts): QuarantineVerdict {
  const label = f.node.labels[QUARANTINE_LABEL];
  if (label === undefined) return { held: false, reason: 'not quarantined' };
  const record = parseQuarantine(f.node.annotations[QUARANTINE_ANNOTATION]);
  if (record === undefined) {
    return {
      held: true,
      reason: `quarantined (${QUARANTINE_LABEL}=${label}) without a readable ${QUARANTINE_ANNOTATION} record: remove the label to release it`,
    };
  }
  if (record.kind === 'after-reboot-hook') {
    return {
      held: true,
      reason: `quarantined since ${record.since}${kindWords(record)} (${record.hook ?? 'its Job'}): left cordoned until an operator removes the label ${QUARANTINE_LABEL} (--quarantine-retry does not release it)`,
    };
  }
  if (record.kind === 'reboot-loop') {
    return {
      held: true,
      reason: `quarantined since ${record.since}${kindWords(record)}: no reboot until an operator removes the label ${QUARANTINE_LABEL} (--quarantine-retry does not release it) or the need goes`,
    };
  }
  const cause = causeOf(record, f);
  if (cause.changed !== undefined) return { held: false, reason: cause.changed };
  const since = Date.parse(record.since);
  const until = since + f.retryMs;
  if (f.retryMs > 0 && f.now.getTime() >= until) {
    return {
      held: false,
      reason: `quarantined since ${record.since}; --quarantine-retry ${shortDuration(f.retryMs)} passed: trying again`,
    };
  }
  const retry = f.retryMs > 0 ? ` or at ${new Date(until).toISOString()}` : '';
  return {
    held: true,
    reason: `quarantined since ${record.since}${kindWords(record)}: ${cause.holds}${retry}`,
  };
}

/** ` for <the kind in words>`, or nothing for a record that does not say. */
export function kindWords(record: Pick<QuarantineRecord, 'kind'>): string {
  return record.kind === undefined ? '' : ` for ${QUARANTINE_KINDS[record.kind]}`;
}

/** A quarantine for volumes that outlasted --volume-detach-timeout: held while one is still attached. */
function volumeCause(
  volumes: readonly string[],
  f: QuarantineFacts,
): { changed: string; holds?: undefined } | { changed?: undefined; holds: string } {
  const now = new Set([...(f.node.volumes?.attached ?? []), ...(f.node.volumes?.inUse ?? [])]);
  const still = volumes.filter((v) => now.has(v));
  if (still.length === 0)
    return { changed: 'quarantined, but the volumes that stayed attached are detached now: trying again' };
  return {
    holds: `volumes still attached after the drain past --volume-detach-timeout: ${volumeList(still)}; passed over until they are detached`,
  };
}

/**
 * What the quarantine waits on: the pods that stopped the drain, or the hold annotations that
 * outlasted --hold-timeout; `changed` says why it lifts when that is gone, `holds` what it waits on.
 */
function causeOf(
  record: QuarantineRecord,
  f: QuarantineFacts,
): { changed: string; holds?: undefined } | { changed?: undefined; holds: string } {
  if (record.volumes !== undefined) return volumeCause(record.volumes, f);
  if (record.hook !== undefined)
    return {
      holds: `the before-reboot hook Job ${record.hook} failed or timed out; passed over until --quarantine-retry passes or the label is removed`,
    };
  if (record.nodeChecks !== undefined)
    return {
      holds: `node checks still false after the drain past --volume-detach-timeout: ${record.nodeChecks.join('; ')}; passed over until --quarantine-retry passes or the label is removed`,
    };
  if (record.holdKeys !== undefined) {
    const standing = record.holdKeys.filter((k) => f.node.annotations[k] !== undefined);
    if (standing.length === 0)
      return {
        changed: 'quarantined, but the hold annotations that outlasted the timeout are gone: trying again',
      };
    return {
      holds: `held after the drain past --hold-timeout by ${standing.join(', ')}; passed over until the annotation goes`,
    };
  }
  const gone = record.pods.filter((p) => !stillThere(p, f.pods));
  if (gone.length > 0 || record.pods.length === 0)
    return { changed: `quarantined, but its pods changed (${podList(gone)} gone): trying again` };
  return { holds: `the drain failed on ${podList(record.pods)}; passed over until these pods change` };
}
