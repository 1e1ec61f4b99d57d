// The cycle record: what a node's reboot cycle has done so far, kept on the Node itself.
//
// Written in the same merge patch as our cordon (so a cordon of ours is never unmarked, and a mark
// never stands without its cordon), guarded by the node's resourceVersion, together with the label
// CYCLE_LABEL that makes the node findable by a label selector. While the label is there the node
// counts against --concurrency whether or not its lock slot survived (src/lock/daemonset-lock.ts):
// a lock annotation deleted, rewritten or expired while the node is down cannot let another node
// start (--lock-ttl does not free such a node: deleting its Node or removing the label does). After the reboot the record proves it (bootID changed) even without the lock, and carries
// the attempt count and the start of the readiness wait across agent restarts.

import { parseDrainSummary, type DrainSummary } from './drain-summary.js';

/** The record's annotation. */
export const CYCLE_ANNOTATION = 'kured-ts.dev/cycle';
/**
 * Present (value "true") exactly while the record is: the selector of nodes in a cycle. An operator
 * who removes it releases the node on purpose (docs/safety.md): the agent then drops its record, does
 * not take the slot again, and leaves the node as it is.
 */
export const CYCLE_LABEL = 'kured-ts.dev/rebooting';

/** The field manager of every write of ours (metadata.managedFields names it). */
const OUR_FIELD_MANAGER = 'kured-ts';
/** Managers whose cordon a cycle record may claim: ours, and kured's during a migration. */
export const CYCLE_MANAGERS: readonly string[] = [OUR_FIELD_MANAGER, 'kured'];

export interface CycleRecord {
  /** The boot the cycle started on: a different bootID proves the reboot. */
  bootID: string;
  /** We cordoned the node (it was schedulable): we uncordon it at the end. */
  cordoned: boolean;
  /** Reboots requested on `bootID`. */
  attempts: number;
  /** RFC 3339 time of the last reboot request. */
  rebootRequestedAt?: string;
  /** RFC 3339 time the agent first saw the new boot: the start of --post-reboot-timeout. */
  verifyingSince?: string;
  /** RFC 3339 time the cycle began (the slot was taken). */
  started: string;
  /** Who wrote it: the agent's pod name (or host name), for people reading the record. */
  agent?: string;
  /**
   * The agent instance that counted the last attempt (one id per agent process): an agent tells its
   * own count, committed though answered with an error, from another agent's written in the same
   * millisecond.
   */
  requestedBy?: string;
  /** For the reboot history: when the agent first saw the reboot required (RFC 3339). */
  requiredAt?: string;
  /** When the drain finished (written with the reboot request). */
  drainedAt?: string;
  /**
   * RFC 3339 time the agent first saw a --hold-after-drain-annotation after the drain: the start of
   * --hold-timeout, so that a restart does not reset it.
   */
  heldSince?: string;
  /**
   * RFC 3339 time the agent first found volumes of its evicted pods still attached after the drain:
   * the start of --volume-detach-timeout, so that a restart does not reset it.
   */
  volumesSince?: string;
  /** What the drain did with the pods (written with the reboot request), for the reboot history. */
  drain?: DrainSummary;
  /**
   * --single-replica restart: the Deployments (namespace/name) this cycle restarted and when (RFC 3339,
   * the start of --single-replica-timeout), written BEFORE the restart: a Deployment is restarted at
   * most once per cycle, whatever restarts the agent goes through.
   */
  restarts?: RestartMark[];
  /** The kernel and OS image the cycle started on. */
  kernel?: string;
  osImage?: string;
  /**
   * RFC 3339 time (this host's clock) the cycle labelled the node out of the load balancers
   * (cycle-marks.ts): present = the label is ours to remove; --lb-drain-wait runs from it.
   */
  lbExcludedAt?: string;
  /** The cycle added karpenter.sh/do-not-repair: ours to remove at its end. */
  doNotRepair?: boolean;
  /**
   * Reboots this cycle's need has survived: each counted at the first check after a new boot that
   * found the sentinel still asking, in the same write that records the new boot (verifyingSince), so
   * no crash between the reboot and that write loses one (the next agent sees the old bootID and
   * counts it then). Absent: 0. A value that cannot be read is UNKNOWN_COUNT, the bound reached:
   * a lost count must never allow more reboots than a kept one.
   */
  needReboots?: number;
  /** The first check after the current boot found the need still there: reboot again, or stop (reboot-loop). */
  stillNeeded?: true;
}

/** needReboots that could not be read: counts as past any --max-reboots-per-need (fail safe). */
const UNKNOWN_COUNT = Number.POSITIVE_INFINITY;

/** The need's fields as read (only those that say something). */
function needOf(value: Record<string, unknown>): Pick<CycleRecord, 'needReboots' | 'stillNeeded'> {
  const needReboots = needRebootsOf(value);
  return {
    ...(needReboots === 0 ? {} : { needReboots }),
    ...(value.stillNeeded === true ? { stillNeeded: true as const } : {}),
  };
}

/** needReboots as read: absent 0, a non-negative integer as it is, anything else UNKNOWN_COUNT. */
function needRebootsOf(value: Record<string, unknown>): number {
  if (!('needReboots' in value)) return 0;
  const n = value.needReboots;
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 ? n : UNKNOWN_COUNT;
}

/** One Deployment restarted by the cycle. */
export interface RestartMark {
  /** namespace/name */
  deployment: string;
  /** RFC 3339: when the agent restarted it (our clock). */
  at: string;
}

function restartsOf(raw: unknown): RestartMark[] | undefined {
  if (!Array.isArray(raw)) return undefined;
  return raw.flatMap((m: unknown) =>
    isRecord(m) && typeof m.deployment === 'string' && typeof m.at === 'string'
      ? [{ deployment: m.deployment, at: m.at }]
      : [],
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const optionalText = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/**
 * Reads the record. A value we cannot read is still a cycle in progress (fail safe: the node keeps
 * its cordon and counts against --concurrency): it reads as a record with an unknown boot, which no
 * bootID matches, and zero attempts.
 */
export function parseCycle(raw: string | undefined): CycleRecord | undefined {
  if (raw === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    value = undefined;
  }
  if (!isRecord(value) || typeof value.bootID !== 'string') {
    // nothing says how often this need rebooted the node already: no more reboots without an operator
    return { bootID: '', cordoned: false, attempts: 0, started: '', needReboots: UNKNOWN_COUNT };
  }
  const attempts = typeof value.attempts === 'number' && value.attempts >= 0 ? Math.floor(value.attempts) : 0;
  const record: CycleRecord = {
    bootID: value.bootID,
    cordoned: value.cordoned === true,
    attempts,
    started: optionalText(value.started) ?? '',
  };
  Object.assign(record, needOf(value));
  for (const key of [
    'rebootRequestedAt',
    'verifyingSince',
    'agent',
    'requestedBy',
    'requiredAt',
    'drainedAt',
    'heldSince',
    'volumesSince',
    'kernel',
    'osImage',
    'lbExcludedAt',
  ] as const) {
    const field = optionalText(value[key]);
    if (field !== undefined) record[key] = field;
  }
  return withDrain(withDoNotRepair(withRestarts(record, value.restarts), value.doNotRepair), value.drain);
}

/** The record with the restart marks `raw` when they can be read. */
function withRestarts(record: CycleRecord, raw: unknown): CycleRecord {
  const restarts = restartsOf(raw);
  return restarts === undefined ? record : { ...record, restarts };
}

/** The record with doNotRepair when the raw record says true (anything else: not ours). */
function withDoNotRepair(record: CycleRecord, raw: unknown): CycleRecord {
  return raw === true ? { ...record, doNotRepair: true } : record;
}

/** The record with the drain summary `raw` when it can be read (for the reboot history). */
function withDrain(record: CycleRecord, raw: unknown): CycleRecord {
  const drain = parseDrainSummary(raw);
  return drain === undefined ? record : { ...record, drain };
}

/** The annotation's value (an UNKNOWN_COUNT is written as null: read back, it is unknown again). */
export function formatCycle(record: CycleRecord): string {
  return JSON.stringify(record);
}

/** Reboots `record`'s need has survived (UNKNOWN_COUNT when they cannot be known). */
export function needRebootsIn(record: Pick<CycleRecord, 'needReboots'>): number {
  return record.needReboots ?? 0;
}
