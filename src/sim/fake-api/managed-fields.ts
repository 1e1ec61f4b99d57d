// metadata.managedFields as kube-apiserver keeps them for non-apply writes (structured-merge-diff's
// Update operation): a write gives its field manager the fields it changed (added or modified) and
// takes them from every other manager; a field it removed belongs to nobody; managers left with no
// field are dropped. What kured-ts relies on: who owns spec.unschedulable. Simplified where kured-ts
// does not care: lists are atomic (one field each, no `k:`/`v:` keys), one entry per manager and
// subresource.
import { isObject, jsonEqual, type JsonObject } from './json.js';

/** One managedFields entry. */
export interface ManagedFieldsEntry {
  manager: string;
  operation: 'Update';
  apiVersion: string;
  time: string;
  fieldsType: 'FieldsV1';
  fieldsV1: JsonObject;
  subresource?: string;
}

/** Who writes, and where (kube records status writes with subresource: status). */
export interface Writer {
  manager: string;
  apiVersion: string;
  time: string;
  subresource?: string;
}

/** Metadata the server owns: never anyone's field. */
const SERVER_META = new Set([
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'managedFields',
  'selfLink',
]);

/** A field path as a key: JSON of its segments (map keys may hold dots and slashes). */
type PathKey = string;

/** Fields nobody owns: the type, and metadata the server owns. */
function unowned(prefix: string[], key: string): boolean {
  if (prefix.length === 0) return key === 'apiVersion' || key === 'kind';
  return prefix.length === 1 && prefix[0] === 'metadata' && SERVER_META.has(key);
}

/** Every leaf field of `value` under `prefix` (objects are walked, anything else is one field). */
function leaves(value: unknown, prefix: string[], out: Map<PathKey, unknown>): void {
  if (!isObject(value) || (prefix.length > 0 && Object.keys(value).length === 0)) {
    out.set(JSON.stringify(prefix), value);
    return;
  }
  for (const [key, child] of Object.entries(value)) {
    if (!unowned(prefix, key)) leaves(child, [...prefix, key], out);
  }
}

function fieldsOf(obj: JsonObject | undefined): Map<PathKey, unknown> {
  const out = new Map<PathKey, unknown>();
  if (obj !== undefined) leaves(obj, [], out);
  return out;
}

/** FieldsV1 → path keys. */
function pathsOf(fields: JsonObject, prefix: string[] = [], out = new Set<PathKey>()): Set<PathKey> {
  for (const [key, child] of Object.entries(fields)) {
    if (!key.startsWith('f:')) continue;
    const path = [...prefix, key.slice(2)];
    if (isObject(child) && Object.keys(child).length > 0) pathsOf(child, path, out);
    else out.add(JSON.stringify(path));
  }
  return out;
}

/** Path keys → FieldsV1. */
function fieldsV1(paths: Iterable<PathKey>): JsonObject {
  const root: JsonObject = {};
  for (const key of paths) {
    let node = root;
    for (const segment of JSON.parse(key) as string[]) {
      const next = node[`f:${segment}`];
      node = isObject(next) ? next : (node[`f:${segment}`] = {});
    }
  }
  return root;
}

function entriesOf(obj: JsonObject | undefined): ManagedFieldsEntry[] {
  const raw = isObject(obj?.metadata) ? obj.metadata.managedFields : undefined;
  return Array.isArray(raw) ? (raw.filter(isObject) as unknown as ManagedFieldsEntry[]) : [];
}

/**
 * The managedFields of `after`, written by `writer` over `before` (undefined for a create). Unchanged
 * objects keep their managedFields as they were.
 */
export function managedFieldsAfter(
  before: JsonObject | undefined,
  after: JsonObject,
  writer: Writer,
): ManagedFieldsEntry[] {
  const { changed, removed } = diff(fieldsOf(before), fieldsOf(after));
  const entries = entriesOf(before);
  if (changed.size === 0 && removed.size === 0) return entries;
  const same = (e: ManagedFieldsEntry): boolean =>
    e.manager === writer.manager && (e.subresource ?? '') === (writer.subresource ?? '');
  const kept = entries.flatMap((e) => {
    const mine = same(e);
    const paths = [...pathsOf(e.fieldsV1)].filter((p) => !removed.has(p) && (mine || !changed.has(p)));
    if (mine) paths.push(...changed);
    return paths.length === 0
      ? []
      : [{ ...e, fieldsV1: fieldsV1(paths), ...(mine ? { time: writer.time } : {}) }];
  });
  if (!entries.some(same) && changed.size > 0) kept.push(newEntry(writer, changed));
  return kept;
}

/** Fields added or modified, and fields removed, from `old` to `now`. */
function diff(
  old: Map<PathKey, unknown>,
  now: Map<PathKey, unknown>,
): { changed: Set<PathKey>; removed: Set<PathKey> } {
  const changed = new Set<PathKey>();
  const removed = new Set<PathKey>();
  for (const [path, value] of now) if (!old.has(path) || !jsonEqual(old.get(path), value)) changed.add(path);
  for (const path of old.keys()) if (!now.has(path)) removed.add(path);
  return { changed, removed };
}

function newEntry(writer: Writer, paths: Set<PathKey>): ManagedFieldsEntry {
  return {
    manager: writer.manager,
    operation: 'Update',
    apiVersion: writer.apiVersion,
    time: writer.time,
    fieldsType: 'FieldsV1',
    fieldsV1: fieldsV1(paths),
    ...(writer.subresource === undefined ? {} : { subresource: writer.subresource }),
  };
}

/**
 * The field manager kube-apiserver records for a request: ?fieldManager=, else the User-Agent's
 * first word (up to '/'), else 'unknown'.
 */
export function managerOf(query: URLSearchParams, userAgent: string | undefined): string {
  const asked = query.get('fieldManager');
  if (asked !== null && asked !== '') return asked;
  const agent = (userAgent ?? '').split('/')[0]?.trim() ?? '';
  return agent === '' ? 'unknown' : agent;
}
