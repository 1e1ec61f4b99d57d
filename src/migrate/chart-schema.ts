// The check `helm install` makes of a values file, made by migrate-values on its own output: the
// values merged over the chart's defaults as Helm merges them, then the chart's JSON schema
// (draft-07, checked with ajv as Helm checks it with its own validator).
import { Ajv } from 'ajv';
import { CHART_DEFAULT_VALUES, CHART_VALUES_SCHEMA } from './chart-values.generated.js';

type Json = Record<string, unknown>;

function isMap(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Helm's coalescing of user values over chart defaults: maps merge key by key, anything else
 * (lists included) replaces, and null removes the default.
 */
function coalesce(defaults: Json, values: Json): Json {
  const keys = new Set([...Object.keys(defaults), ...Object.keys(values)]);
  const out: Json = {};
  for (const key of keys) {
    const base = defaults[key];
    const value = key in values ? values[key] : base;
    if (value === null) continue;
    out[key] = isMap(value) && isMap(base) && value !== base ? coalesce(base, value) : value;
  }
  return out;
}

let validate: ReturnType<Ajv['compile']> | undefined;

/**
 * What the chart's schema says against these values once merged over its defaults, one line per
 * problem (`at '/configuration/period': must match pattern …`); [] when `helm install` would accept them.
 */
export function chartSchemaErrors(values: Json): string[] {
  // ajv knows draft-07 as http://json-schema.org/draft-07/schema#; the chart names it with https
  validate ??= new Ajv({ allErrors: true, strict: false }).compile(
    Object.fromEntries(Object.entries(CHART_VALUES_SCHEMA).filter(([key]) => key !== '$schema')),
  );
  if (validate(coalesce(CHART_DEFAULT_VALUES, values))) return [];
  // one line per place, its messages joined (an anyOf reports each branch)
  const byPath = new Map<string, Set<string>>();
  for (const e of validate.errors ?? []) {
    const extra = e.keyword === 'additionalProperties' ? ` '${String(e.params.additionalProperty)}'` : '';
    const path = e.instancePath === '' ? '/' : e.instancePath;
    const messages = byPath.get(path) ?? new Set<string>();
    messages.add(`${e.message ?? e.keyword}${extra}`);
    byPath.set(path, messages);
  }
  return [...byPath].map(([path, messages]) => `at '${path}': ${[...messages].join('; ')}`);
}
