// A node's reboot history: one record per finished reboot cycle, the latest last, bounded
// (--history-limit), in the annotation `kured-ts.dev/history`. It says when each phase happened and
// what changed: the boot (bootID), the kernel and the OS image, which is what proves that an update
// took effect. Written in the guarded patch that ends the cycle; read by `kured-ts history`.

import type { CycleRecord } from './cycle.js';
import type { NodeState } from './node.js';
import { rebootRequestOf } from './reboot-request.js';
import { parseDrainSummary, type DrainSummary } from './drain-summary.js';
import { waveOf } from './wave.js';

export const HISTORY_ANNOTATION = 'kured-ts.dev/history';

/** How a cycle ended. */
export type HistoryResult = 'success' | 'timeout' | 'failed' | 'drain-failed' | 'reboot-loop';

export interface HistoryRecord {
  result: HistoryResult;
  bootIDBefore: string;
  bootIDAfter: string;
  kernelBefore: string;
  kernelAfter: string;
  osImageBefore: string;
  osImageAfter: string;
  /** RFC 3339 times; absent when the cycle never got there (or it is not known). */
  requiredAt?: string;
  lockedAt: string;
  drainedAt?: string;
  rebootRequestedAt?: string;
  /** The agent saw the new boot. */
  upAt?: string;
  /** The cycle ended: uncordoned (or given up) and released. */
  endedAt: string;
  /** An admin's request the cycle answered (`kured-ts reboot`): who asked, and why. */
  requestedByAdmin?: string;
  requestReason?: string;
  /** What the drain did with the node's pods (absent when the cycle did not drain, or before kured-ts recorded it). */
  drain?: DrainSummary;
  /** The wave the reboot was part of (src/node/wave.ts), when a wave was tracked. */
  wave?: string;
}

/** The per-phase durations of a record, seconds; a phase whose ends are not known is absent. */
export function phaseDurations(
  r: HistoryRecord,
): Partial<Record<'wait' | 'drain' | 'reboot' | 'ready', number>> {
  const span = (from: string | undefined, to: string | undefined): number | undefined => {
    const a = Date.parse(from ?? '');
    const b = Date.parse(to ?? '');
    return Number.isNaN(a) || Number.isNaN(b) || b < a ? undefined : (b - a) / 1000;
  };
  const out: Partial<Record<'wait' | 'drain' | 'reboot' | 'ready', number>> = {};
  const set = (key: 'wait' | 'drain' | 'reboot' | 'ready', value: number | undefined): void => {
    if (value !== undefined) out[key] = value;
  };
  set('wait', span(r.requiredAt, r.lockedAt));
  set('drain', span(r.lockedAt, r.drainedAt));
  set('reboot', span(r.rebootRequestedAt, r.upAt));
  set('ready', span(r.upAt, r.endedAt));
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const OPTIONAL_FIELDS = [
  'requiredAt',
  'drainedAt',
  'rebootRequestedAt',
  'upAt',
  'requestedByAdmin',
  'requestReason',
  'wave',
] as const;
const RESULTS: readonly HistoryResult[] = ['success', 'timeout', 'failed', 'drain-failed', 'reboot-loop'];

function readRecord(value: unknown): HistoryRecord | undefined {
  if (!isRecord(value)) return undefined;
  const result = RESULTS.find((r) => r === value.result);
  if (result === undefined) return undefined;
  const text = (key: string): string => (typeof value[key] === 'string' ? value[key] : '');
  const record: HistoryRecord = {
    result,
    bootIDBefore: text('bootIDBefore'),
    bootIDAfter: text('bootIDAfter'),
    kernelBefore: text('kernelBefore'),
    kernelAfter: text('kernelAfter'),
    osImageBefore: text('osImageBefore'),
    osImageAfter: text('osImageAfter'),
    lockedAt: text('lockedAt'),
    endedAt: text('endedAt'),
  };
  for (const key of OPTIONAL_FIELDS) if (typeof value[key] === 'string') record[key] = value[key];
  const drain = parseDrainSummary(value.drain);
  if (drain !== undefined) record.drain = drain;
  return record;
}

/** The records in the annotation, oldest first; entries that cannot be read are left out. */
export function parseHistory(raw: string | undefined): HistoryRecord[] {
  if (raw === undefined) return [];
  try {
    const value: unknown = JSON.parse(raw);
    if (!Array.isArray(value)) return [];
    return value.flatMap((v) => {
      const r = readRecord(v);
      return r === undefined ? [] : [r];
    });
  } catch {
    return [];
  }
}

/**
 * The most the history annotation holds (annotation-bounds.ts): 100 records (--history-limit's
 * largest) of about 300 bytes each fit.
 */
export const HISTORY_MAX_BYTES = 32768;

/**
 * The annotation with `record` appended, keeping the latest `limit` records, and fewer when they
 * would not fit in HISTORY_MAX_BYTES (the oldest go first).
 */
function appendHistory(raw: string | undefined, record: HistoryRecord, limit: number): string {
  const kept = [...parseHistory(raw), record].slice(-limit);
  let text = JSON.stringify(kept);
  while (kept.length > 1 && Buffer.byteLength(text) > HISTORY_MAX_BYTES) {
    kept.shift();
    text = JSON.stringify(kept);
  }
  return text;
}

/**
 * The history record of a finished cycle: the boot, kernel and OS image the cycle record kept from
 * before the reboot against what the node shows now, and the cycle's times.
 */
export function cycleHistoryRecord(
  node: Pick<NodeState, 'bootID' | 'kernelVersion' | 'osImage'> &
    Partial<Pick<NodeState, 'annotations' | 'labels'>>,
  record: CycleRecord,
  result: HistoryResult,
  endedAt: string,
): HistoryRecord {
  const entry: HistoryRecord = {
    result,
    bootIDBefore: record.bootID,
    bootIDAfter: node.bootID,
    kernelBefore: record.kernel ?? '',
    kernelAfter: node.kernelVersion ?? '',
    osImageBefore: record.osImage ?? '',
    osImageAfter: node.osImage ?? '',
    lockedAt: record.started,
    endedAt,
  };
  const wave = waveOf(node.labels ?? {})?.wave;
  return {
    ...entry,
    ...cycleTimes(record),
    ...(wave === undefined ? {} : { wave }),
    ...requestFields(node.annotations),
  };
}

/** The cycle's times and drain the record kept, each when it did. */
function cycleTimes(
  record: CycleRecord,
): Pick<HistoryRecord, 'requiredAt' | 'drainedAt' | 'rebootRequestedAt' | 'upAt' | 'drain'> {
  const times: ReturnType<typeof cycleTimes> = {};
  if (record.requiredAt !== undefined) times.requiredAt = record.requiredAt;
  if (record.drainedAt !== undefined) times.drainedAt = record.drainedAt;
  if (record.rebootRequestedAt !== undefined) times.rebootRequestedAt = record.rebootRequestedAt;
  if (record.verifyingSince !== undefined) times.upAt = record.verifyingSince;
  if (record.drain !== undefined) times.drain = record.drain;
  return times;
}

/** Who asked for the reboot and why, when an admin's request stands on the node (`kured-ts reboot`). */
function requestFields(
  annotations: Readonly<Record<string, string>> = {},
): Pick<HistoryRecord, 'requestedByAdmin' | 'requestReason'> {
  const request = rebootRequestOf(annotations);
  if (request === undefined) return {};
  const by = request.byUnverified === undefined ? request.by : `${request.by} (unverified)`;
  return { requestedByAdmin: by, requestReason: request.reason };
}

/** The history annotation with `entry` appended, the last `limit` kept; none with limit 0. */
export function historyAnnotations(
  annotations: Record<string, string>,
  entry: HistoryRecord,
  limit: number,
): Record<string, string> {
  if (limit === 0) return {};
  return { [HISTORY_ANNOTATION]: appendHistory(annotations[HISTORY_ANNOTATION], entry, limit) };
}
