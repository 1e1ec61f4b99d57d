// kured's lock annotation JSON, read and written byte-compatibly (pure; no I/O, no clock).
//
// kured (pkg/daemonsetlock) marshals, in Go field order:
//   single (concurrency <= 1): {"nodeID":"n1","metadata":{"unschedulable":false},"created":"…","TTL":0}
//   multi  (concurrency > 1):  {"maxOwners":2,"locks":[<single>,…]}
// `created` is a Go time.Time (RFC3339Nano, trailing zeros of the fraction trimmed, UTC → "Z"),
// `TTL` a Go time.Duration, i.e. integer nanoseconds. `metadata` is kured's NodeMeta; Go ignores
// fields it does not know, so ours (bootID, attempts) live there too. kured's documented manual lock
// `{"nodeID":"manual"}` has no `created` (Go's zero time).
import type { LockHolder, LockMetadata } from './lock.js';

/** One slot as stored; keeps what we read verbatim so that rewriting others' slots changes nothing. */
export interface LockEntry {
  nodeID: string;
  /** `created` exactly as written; '' when absent or Go's zero time (an operator's manual lock). */
  created: string;
  /** `created` in ms since the epoch; undefined when `created` is ''. */
  createdMs: number | undefined;
  /** Go time.Duration: nanoseconds; 0 = the lock records no TTL. */
  ttlNs: number;
  /** The raw metadata object, unknown fields included. */
  metadata: Record<string, unknown>;
}

/** A parsed annotation. */
export type LockValue =
  { form: 'single'; entry: LockEntry } | { form: 'multi'; maxOwners: number; entries: LockEntry[] };

/** An annotation we cannot read as kured's JSON. */
export class LockFormatError extends Error {
  override readonly name = 'LockFormatError';
}

const GO_ZERO_TIME = '0001-01-01T00:00:00Z';
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

function offsetMinutes(m: RegExpExecArray): number {
  if (m[8] !== undefined) return 0;
  return (m[9] === '-' ? -1 : 1) * (Number(m[10]) * 60 + Number(m[11]));
}

/** Parses an RFC 3339 time (any fraction length, Z or offset) to ms; undefined when it is not one. */
export function parseRfc3339(text: string): number | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const fraction = Number(`0.${m[7] ?? '0'}`);
  const offsetMin = offsetMinutes(m);
  const date = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
  if (year < 100) date.setUTCFullYear(year);
  const valid =
    date.getUTCMonth() === month - 1 && date.getUTCDate() === day && hour < 24 && minute < 60 && second < 60;
  if (!valid) return undefined;
  return date.getTime() + Math.floor(fraction * 1000) - offsetMin * 60_000;
}

/** Go's time.Time JSON form of a UTC instant: RFC3339Nano, fraction without trailing zeros. */
export function formatRfc3339Nano(date: Date): string {
  const iso = date.toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
  const fraction = iso.slice(20, 23).replace(/0+$/, '');
  return `${iso.slice(0, 19)}${fraction === '' ? '' : `.${fraction}`}Z`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function field<T>(
  obj: Record<string, unknown>,
  key: string,
  check: (v: unknown) => v is T,
  what: string,
): T | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  if (!check(value)) throw new LockFormatError(`"${key}" is not ${what}`);
  return value;
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isInteger = (v: unknown): v is number => Number.isInteger(v);

function parseEntry(raw: unknown): LockEntry {
  if (!isRecord(raw)) throw new LockFormatError('a lock entry is not an object');
  const nodeID = field(raw, 'nodeID', isString, 'a string') ?? '';
  const created = field(raw, 'created', isString, 'a string') ?? '';
  const ttlNs = field(raw, 'TTL', isInteger, 'an integer (nanoseconds)') ?? 0;
  const metadata = field(raw, 'metadata', isRecord, 'an object') ?? {};
  field(metadata, 'unschedulable', (v): v is boolean => typeof v === 'boolean', 'a boolean');
  if (created === '' || created === GO_ZERO_TIME)
    return { nodeID, created: '', createdMs: undefined, ttlNs, metadata };
  const createdMs = parseRfc3339(created);
  if (createdMs === undefined) throw new LockFormatError(`"created" is not an RFC 3339 time: ${created}`);
  return { nodeID, created, createdMs, ttlNs, metadata };
}

/** Parses the annotation value (either form). Throws LockFormatError saying what is wrong. */
export function parseLockAnnotation(text: string): LockValue {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new LockFormatError(`not JSON: ${text.slice(0, 80)}`, { cause: err });
  }
  if (!isRecord(raw)) throw new LockFormatError('not a JSON object');
  if ('locks' in raw || 'maxOwners' in raw) {
    const maxOwners = field(raw, 'maxOwners', isInteger, 'an integer') ?? 0;
    const locks = field(raw, 'locks', Array.isArray, 'an array') ?? [];
    return { form: 'multi', maxOwners, entries: (locks as unknown[]).map(parseEntry) };
  }
  if (!('nodeID' in raw)) throw new LockFormatError('neither "nodeID" nor "locks"');
  return { form: 'single', entry: parseEntry(raw) };
}

/** The entries of a parsed value, whatever its form. */
export function entriesOf(value: LockValue): LockEntry[] {
  return value.form === 'single' ? [value.entry] : value.entries;
}

/** Go's encoding/json escapes these even inside strings; so do we, to write the bytes kured writes. */
function goEscape(json: string): string {
  return json
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

function entryObject(entry: LockEntry): Record<string, unknown> {
  return {
    nodeID: entry.nodeID,
    metadata: { unschedulable: false, ...entry.metadata },
    created: entry.created === '' ? GO_ZERO_TIME : entry.created,
    TTL: entry.ttlNs,
  };
}

/** The single form, as kured with --concurrency 1 writes it. */
export function formatSingle(entry: LockEntry): string {
  return goEscape(JSON.stringify(entryObject(entry)));
}

/** The multi form, as kured with --concurrency > 1 writes it (an empty list is `[]`, as after a release). */
export function formatMulti(maxOwners: number, entries: readonly LockEntry[]): string {
  return goEscape(JSON.stringify({ maxOwners, locks: entries.map(entryObject) }));
}

/** Our metadata as stored: kured's `unschedulable` first, then every other field we carry. */
function metadataObject(metadata: LockMetadata): Record<string, unknown> {
  const obj: Record<string, unknown> = { unschedulable: metadata.unschedulable };
  for (const [key, value] of Object.entries(metadata)) if (value !== undefined) obj[key] = value;
  return obj;
}

/** A new entry for `nodeID`, created now with `ttlMs` (0 = none). */
export function newEntry(nodeID: string, metadata: LockMetadata, now: Date, ttlMs: number): LockEntry {
  return {
    nodeID,
    created: formatRfc3339Nano(now),
    createdMs: now.getTime(),
    ttlNs: Math.round(ttlMs * 1_000_000),
    metadata: metadataObject(metadata),
  };
}

/** Type of each optional LockMetadata field; a stored value of another type is dropped. */
const METADATA_TYPES: Record<
  Exclude<keyof LockMetadata, 'unschedulable'>,
  'string' | 'number' | 'boolean'
> = {
  bootID: 'string',
  group: 'string',
  controlPlane: 'boolean',
  wave: 'string',
};

/** Reads every field of LockMetadata (and passes fields we do not know through, for round trips). */
function readMetadata(raw: Record<string, unknown>): LockMetadata {
  const wrongType = (key: string): boolean => {
    const type = (METADATA_TYPES as Record<string, string | undefined>)[key];
    return type !== undefined && typeof raw[key] !== type;
  };
  const kept = Object.entries(raw).filter(([key]) => !wrongType(key));
  return { ...Object.fromEntries(kept), unschedulable: raw.unschedulable === true };
}

/** Go's zero time as a Date, for manual locks that record no creation time. */
const ZERO_TIME = new Date(-62135596800000);

/** The LockHolder view of an entry. */
export function toHolder(entry: LockEntry): LockHolder {
  return {
    nodeID: entry.nodeID,
    created: entry.createdMs === undefined ? new Date(ZERO_TIME) : new Date(entry.createdMs),
    ttlMs: entry.ttlNs / 1_000_000,
    metadata: readMetadata(entry.metadata),
  };
}

/**
 * kured's rule (effectiveTTL + ttlExpired), by wall clock: an entry is judged by its own TTL, or by
 * the configured --lock-ttl when it recorded none; 0 never expires. Deviation, fail safe: an entry
 * without a creation time (kured's manual `{"nodeID":"manual"}`) never expires. Only `kured-ts
 * status` judges slots this way (a one-shot reader has no earlier sighting); the agents judge them on
 * their own monotonic clocks (lease.ts).
 */
export function isExpired(entry: LockEntry, configuredTtlMs: number, nowMs: number): boolean {
  if (entry.createdMs === undefined) return false;
  const ttlMs = entry.ttlNs > 0 ? entry.ttlNs / 1_000_000 : configuredTtlMs;
  return ttlMs > 0 && nowMs - entry.createdMs >= ttlMs;
}
