// Label and field selectors of list and watch requests, parsed once per request.
import { matches, parseLabelSelector, type Selector } from '../../selector/label-selector.js';
import { isObject } from './json.js';
import type { ResourceDef, StoredObject } from './resources.js';
import { badRequest } from './status.js';

/** One field requirement: `field=value` or `field!=value`. */
interface FieldRequirement {
  field: string;
  /** The field's path, split once. */
  path: readonly string[];
  value: string;
  equal: boolean;
}

/** A request's filter: both selectors must match. */
export interface ObjectFilter {
  labels: Selector;
  fields: readonly FieldRequirement[];
  /** Set when the watch URL names one object (`.../pods/NAME?watch=true`). */
  name?: string;
}

const ALWAYS = ['metadata.name', 'metadata.namespace'];

/** Parses `labelSelector` and `fieldSelector`; a bad selector is a 400 as in kube. */
export function parseFilter(def: ResourceDef, query: URLSearchParams): ObjectFilter {
  let labels: Selector;
  try {
    labels = parseLabelSelector(query.get('labelSelector') ?? '');
  } catch (err) {
    throw badRequest(`unable to parse requirement: ${(err as Error).message}`);
  }
  return { labels, fields: parseFieldSelector(def, query.get('fieldSelector') ?? '') };
}

function parseFieldSelector(def: ResourceDef, text: string): FieldRequirement[] {
  if (text.trim() === '') return [];
  return text.split(',').map((term) => {
    const m = /^\s*([^!=\s]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(term);
    if (!m) throw badRequest(`invalid selector: '${text}'; can't understand '${term}'`);
    const field = m[1] ?? '';
    if (!ALWAYS.includes(field) && !def.fields.includes(field)) {
      throw badRequest(`field label not supported: ${field}`);
    }
    return { field, path: field.split('.'), value: m[3] ?? '', equal: m[2] !== '!=' };
  });
}

/** Field values compare as kube renders them: strings, booleans as "true"/"false", absent as "". */
function fieldValue(obj: StoredObject, r: FieldRequirement): string {
  let v: unknown = obj;
  for (const part of r.path) v = isObject(v) ? v[part] : undefined;
  if (v === undefined || v === null) return r.field === 'spec.unschedulable' ? 'false' : '';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/**
 * The one value `field` must equal for an object to pass (an equality requirement on it, or the
 * name a watch URL names); undefined when the filter allows any. Lets the server look objects up by
 * an index, as kube's watch cache does for a pod's node and an object's name.
 */
export function requiredValue(filter: ObjectFilter, field: string): string | undefined {
  if (field === 'metadata.name' && filter.name !== undefined) return filter.name;
  return filter.fields.find((r) => r.field === field && r.equal)?.value;
}

/** True when the object passes the filter. */
export function passes(filter: ObjectFilter, obj: StoredObject): boolean {
  if (filter.name !== undefined && obj.metadata.name !== filter.name) return false;
  if (!matches(filter.labels, obj.metadata.labels)) return false;
  return filter.fields.every((r) => (fieldValue(obj, r) === r.value) === r.equal);
}
