// The three patch formats kube-apiserver accepts: RFC 6902 JSON patch, RFC 7386 merge patch, and
// strategic merge patch (merge patch plus list merging by key where Kubernetes' types declare it).
import { isObject, jsonEqual, type JsonObject } from './json.js';
import { badRequest, patchNotApplicable } from './status.js';

export const JSON_PATCH = 'application/json-patch+json';
export const MERGE_PATCH = 'application/merge-patch+json';
export const STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json';
export const APPLY_PATCH = 'application/apply-patch+yaml';

/** Applies a patch body (already parsed JSON) of the given content type to a copy of `target`. */
export function applyPatch(contentType: string, target: JsonObject, patch: unknown): JsonObject {
  switch (contentType) {
    case JSON_PATCH:
      return applyJsonPatch(target, patch);
    case MERGE_PATCH:
      return asObject(mergePatch(structuredClone(target), patch));
    case STRATEGIC_MERGE_PATCH:
      return asObject(strategicMerge(structuredClone(target), patch, ''));
    default:
      throw new Error(`unsupported patch type ${contentType}`);
  }
}

function asObject(value: unknown): JsonObject {
  if (!isObject(value)) throw badRequest('patch must produce a JSON object');
  return value;
}

// ---------------------------------------------------------------- RFC 6902

interface Operation {
  op: string;
  path: string;
  from?: string;
  value?: unknown;
}

const OPS = ['add', 'remove', 'replace', 'move', 'copy', 'test'];

function parseOperations(patch: unknown): Operation[] {
  if (!Array.isArray(patch)) throw badRequest('json patch must be a JSON array of operations');
  return patch.map((raw: unknown) => {
    if (
      !isObject(raw) ||
      typeof raw.op !== 'string' ||
      !OPS.includes(raw.op) ||
      typeof raw.path !== 'string'
    ) {
      throw badRequest(`invalid json patch operation: ${JSON.stringify(raw)}`);
    }
    const needsValue = ['add', 'replace', 'test'].includes(raw.op);
    if (needsValue && !('value' in raw)) throw badRequest(`json patch ${raw.op} operation needs a value`);
    const needsFrom = raw.op === 'move' || raw.op === 'copy';
    if (needsFrom && typeof raw.from !== 'string')
      throw badRequest(`json patch ${raw.op} operation needs from`);
    return raw as unknown as Operation;
  });
}

function applyJsonPatch(target: JsonObject, patch: unknown): JsonObject {
  const ops = parseOperations(patch);
  let doc: unknown = structuredClone(target);
  for (const op of ops) doc = applyOperation(doc, op);
  return asObject(doc);
}

function applyOperation(doc: unknown, op: Operation): unknown {
  switch (op.op) {
    case 'add':
      return addAt(doc, pointer(op.path), structuredClone(op.value), op.path);
    case 'remove':
      return removeAt(doc, pointer(op.path), op.path).doc;
    case 'replace':
      getAt(doc, pointer(op.path), op.path);
      return addAt(
        removeAt(doc, pointer(op.path), op.path).doc,
        pointer(op.path),
        structuredClone(op.value),
        op.path,
      );
    case 'move':
      return move(doc, op.from ?? '', op.path);
    case 'copy':
      return addAt(
        doc,
        pointer(op.path),
        structuredClone(getAt(doc, pointer(op.from ?? ''), op.from ?? '')),
        op.path,
      );
    default:
      return test(doc, op);
  }
}

function move(doc: unknown, from: string, path: string): unknown {
  if (path.startsWith(`${from}/`)) throw patchNotApplicable(`cannot move ${from} into its own child ${path}`);
  const removed = removeAt(doc, pointer(from), from);
  return addAt(removed.doc, pointer(path), removed.value, path);
}

function test(doc: unknown, op: Operation): unknown {
  const tokens = pointer(op.path);
  const found = lookup(doc, tokens);
  const actual = found.exists ? found.value : null;
  if (!jsonEqual(actual, op.value)) {
    throw patchNotApplicable(`testing value ${op.path} failed: test failed`);
  }
  return doc;
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw badRequest(`invalid json pointer "${path}"`);
  return path
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function lookup(doc: unknown, tokens: string[]): { exists: boolean; value: unknown } {
  let current = doc;
  for (const token of tokens) {
    const next = child(current, token);
    if (!next.exists) return next;
    current = next.value;
  }
  return { exists: true, value: current };
}

function child(container: unknown, token: string): { exists: boolean; value: unknown } {
  if (Array.isArray(container)) {
    const i = arrayIndex(token, container.length - 1);
    return i === undefined ? { exists: false, value: undefined } : { exists: true, value: container[i] };
  }
  if (isObject(container) && Object.prototype.hasOwnProperty.call(container, token)) {
    return { exists: true, value: container[token] };
  }
  return { exists: false, value: undefined };
}

function arrayIndex(token: string, max: number): number | undefined {
  if (!/^(0|[1-9][0-9]*)$/.test(token)) return undefined;
  const i = Number(token);
  return i <= max ? i : undefined;
}

function getAt(doc: unknown, tokens: string[], path: string): unknown {
  const found = lookup(doc, tokens);
  if (!found.exists) throw patchNotApplicable(`doc is missing path: "${path}"`);
  return found.value;
}

function parentOf(doc: unknown, tokens: string[], path: string): { parent: unknown; last: string } {
  const last = tokens[tokens.length - 1] ?? '';
  const found = lookup(doc, tokens.slice(0, -1));
  if (!found.exists || !(isObject(found.value) || Array.isArray(found.value))) {
    throw patchNotApplicable(`doc is missing path: "${path}"`);
  }
  return { parent: found.value, last };
}

function addAt(doc: unknown, tokens: string[], value: unknown, path: string): unknown {
  if (tokens.length === 0) return value;
  const { parent, last } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) {
    const i = last === '-' ? parent.length : arrayIndex(last, parent.length);
    if (i === undefined) throw patchNotApplicable(`index out of bounds: "${path}"`);
    parent.splice(i, 0, value);
  } else {
    (parent as JsonObject)[last] = value;
  }
  return doc;
}

function removeAt(doc: unknown, tokens: string[], path: string): { doc: unknown; value: unknown } {
  const value = getAt(doc, tokens, path);
  if (tokens.length === 0) return { doc: null, value };
  const { parent, last } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) parent.splice(Number(last), 1);
  else Reflect.deleteProperty(parent as JsonObject, last);
  return { doc, value };
}

// ---------------------------------------------------------------- RFC 7386

/** RFC 7386: objects merge recursively, null deletes, everything else (lists too) replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const result: JsonObject = isObject(target) ? target : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) Reflect.deleteProperty(result, key);
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

// ---------------------------------------------------------------- strategic merge

/**
 * Lists that kube merges by key instead of replacing, by their path with list indices left out.
 * spec.taints and spec.tolerations are NOT here: Kubernetes declares them atomic, so a strategic
 * merge patch replaces them whole, exactly like a merge patch.
 */
const MERGE_KEYS: Record<string, string> = {
  'metadata.ownerReferences': 'uid',
  'status.conditions': 'type',
  'status.addresses': 'type',
  ...containerKeys('spec'),
  ...containerKeys('spec.template.spec'),
};

/** Lists of scalars that strategic merge treats as sets (union). */
const SETS = new Set(['metadata.finalizers']);

function containerKeys(prefix: string): Record<string, string> {
  const keys: Record<string, string> = { [`${prefix}.volumes`]: 'name' };
  for (const list of ['containers', 'initContainers', 'ephemeralContainers']) {
    keys[`${prefix}.${list}`] = 'name';
    keys[`${prefix}.${list}.env`] = 'name';
    keys[`${prefix}.${list}.ports`] = 'containerPort';
    keys[`${prefix}.${list}.volumeMounts`] = 'mountPath';
  }
  return keys;
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

function strategicMerge(target: unknown, patch: unknown, path: string): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  if (patch.$patch === 'replace') return stripDirectives(patch);
  if (patch.$patch === 'delete') return undefined;
  const result: JsonObject = isObject(target) ? target : {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$')) {
      applyDirective(result, key, value);
      continue;
    }
    const merged = value === null ? undefined : mergeField(result[key], value, join(path, key));
    if (merged === undefined) Reflect.deleteProperty(result, key);
    else result[key] = merged;
  }
  return result;
}

function mergeField(current: unknown, value: unknown, path: string): unknown {
  const mergeKey = MERGE_KEYS[path];
  if (Array.isArray(value) && mergeKey !== undefined) return mergeKeyedList(current, value, mergeKey, path);
  if (Array.isArray(value) && SETS.has(path)) return mergeSet(current, value);
  return strategicMerge(current, value, path);
}

/** `$deleteFromPrimitiveList/<key>` removes values; `$setElementOrder/…` and `$retainKeys` are ordering hints. */
function applyDirective(result: JsonObject, key: string, value: unknown): void {
  const prefix = '$deleteFromPrimitiveList/';
  if (!key.startsWith(prefix) || !Array.isArray(value)) return;
  const field = key.slice(prefix.length);
  const list = result[field];
  if (Array.isArray(list)) result[field] = list.filter((x) => !value.some((v) => jsonEqual(v, x)));
}

function stripDirectives(obj: JsonObject): JsonObject {
  const copy = structuredClone(obj);
  for (const key of Object.keys(copy)) if (key.startsWith('$')) Reflect.deleteProperty(copy, key);
  return copy;
}

function mergeSet(current: unknown, value: unknown[]): unknown[] {
  const result = Array.isArray(current) ? [...(current as unknown[])] : [];
  for (const v of value) if (!result.some((x) => jsonEqual(x, v))) result.push(v);
  return result;
}

function mergeKeyedList(current: unknown, patch: unknown[], key: string, path: string): unknown[] {
  if (patch.some((item) => isObject(item) && item.$patch === 'replace' && Object.keys(item).length === 1)) {
    return patch
      .filter((item) => !(isObject(item) && item.$patch === 'replace'))
      .map((i) => structuredClone(i));
  }
  const result = Array.isArray(current) ? (current as unknown[]) : [];
  for (const item of patch) {
    if (!isObject(item)) throw badRequest(`strategic merge patch: list ${path} needs objects with ${key}`);
    const index = result.findIndex((x) => isObject(x) && jsonEqual(x[key], item[key]));
    if (item.$patch === 'delete') {
      if (index >= 0) result.splice(index, 1);
    } else if (index >= 0) {
      result[index] = strategicMerge(result[index], item, path);
    } else {
      result.push(stripDirectives(item));
    }
  }
  return result;
}
