// The patch formats, as kube-apiserver applies them: RFC 6902 JSON patch (add, remove, replace,
// test) and RFC 7386 merge patch, which kured-ts sends; and strategic merge patch, which kubectl
// cordon, annotate and label send (the third-party writers the tests play). Server-side apply and
// the JSON patch ops move and copy are refused with 415 or 400 (src/sim/README.md).
import { isObject, jsonEqual, type JsonObject } from './json.js';
import { badRequest, patchNotApplicable } from './status.js';

export const JSON_PATCH = 'application/json-patch+json';
export const MERGE_PATCH = 'application/merge-patch+json';

/** Applies a patch body (already parsed JSON) of the given content type to a copy of `target`. */
export function applyPatch(contentType: string, target: JsonObject, patch: unknown): JsonObject {
  switch (contentType) {
    case JSON_PATCH:
      return applyJsonPatch(target, patch);
    case MERGE_PATCH:
      return asObject(mergePatch(structuredClone(target), patch));
    case STRATEGIC_MERGE_PATCH:
      return asObject(strategicMerge(structuredClone(target), patch));
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
  value?: unknown;
}

const OPS = ['add', 'remove', 'replace', 'test'];

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
    default:
      return test(doc, op);
  }
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
function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const result: JsonObject = isObject(target) ? target : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) Reflect.deleteProperty(result, key);
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

// ---------------------------------------------------------------- strategic merge

export const STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json';

/**
 * Lists that kube merges by key instead of replacing, by their path with list indices left out
 * (the patchMergeKey of their Go types). spec.taints and spec.tolerations are NOT here: Kubernetes
 * declares them atomic, so a strategic merge patch replaces them whole, exactly like a merge patch.
 */
const MERGE_KEYS: Record<string, string> = {
  'status.conditions': 'type',
  'status.addresses': 'type',
  'spec.template.spec.containers': 'name',
  'spec.template.spec.initContainers': 'name',
  'spec.template.spec.volumes': 'name',
  'spec.containers': 'name',
  'metadata.ownerReferences': 'uid',
};

/** Directives kubectl adds that do not change the result for the objects we serve. */
function isIgnoredDirective(key: string): boolean {
  return key.startsWith('$setElementOrder/') || key === '$retainKeys';
}

/**
 * A list merged by `key`: the patch's elements first, in its order (each merged into its
 * namesake), then the elements only the server had, as kube-apiserver orders them; an element
 * with `$patch: delete` removes its namesake.
 */
function mergeList(target: unknown, patch: unknown[], key: string, path: string): unknown[] {
  const before: unknown[] = Array.isArray(target) ? structuredClone(target) : [];
  const keyOf = (e: unknown): unknown => (isObject(e) ? e[key] : undefined);
  const patched: unknown[] = [];
  for (const item of patch) {
    if (!isObject(item) || typeof item[key] !== 'string') {
      throw badRequest(`${path}: every element of a strategic merge patch needs its merge key "${key}"`);
    }
    if (item.$patch === 'delete') continue;
    patched.push(
      strategicMerge(
        before.find((e) => keyOf(e) === item[key]),
        item,
        path,
      ),
    );
  }
  const named = new Set(patch.map(keyOf));
  return [...patched, ...before.filter((e) => !named.has(keyOf(e)))];
}

/**
 * Kubernetes' strategic merge patch, for the objects this server stores: a merge patch, except
 * that the lists in MERGE_KEYS merge element by element ($patch: delete removes one), and
 * kubectl's $setElementOrder / $retainKeys directives are accepted. Other directives answer 400.
 */
function strategicMerge(target: unknown, patch: unknown, path = ''): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const result: JsonObject = isObject(target) ? target : {};
  for (const [key, value] of Object.entries(patch)) {
    if (isDirective(key, path)) continue;
    const here = path === '' ? key : `${path}.${key}`;
    if (value === null) Reflect.deleteProperty(result, key);
    else result[key] = mergeField(result[key], value, here);
  }
  return result;
}

/** A directive to skip (kubectl's ordering hints, an element's $patch); others answer 400. */
function isDirective(key: string, path: string): boolean {
  if (!key.startsWith('$')) return false;
  if (isIgnoredDirective(key) || (key === '$patch' && path !== '')) return true;
  throw badRequest(`strategic merge patch directive ${key} is not supported by the fake API server`);
}

function mergeField(target: unknown, value: unknown, path: string): unknown {
  const mergeKey = MERGE_KEYS[path];
  if (mergeKey !== undefined && Array.isArray(value)) return mergeList(target, value, mergeKey, path);
  return strategicMerge(target, value, path);
}
