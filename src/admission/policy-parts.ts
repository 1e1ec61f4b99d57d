// The pieces every admission policy of kured-ts is built of (agent-policy.ts, restart-policy.ts,
// coordinator-policy.ts): the spec as the API has it, placeholders for an installation's values, and
// the CEL phrases they share.

/** One CEL expression with a name (variables, match conditions). */
export interface NamedExpression {
  name: string;
  expression: string;
}

/** A validation as the API has it. */
export interface Validation {
  expression: string;
  messageExpression: string;
  reason: 'Forbidden';
}

/** The spec of a ValidatingAdmissionPolicy, as far as kured-ts uses it. */
export interface PolicySpec {
  failurePolicy: 'Fail' | 'Ignore';
  /** The kind of the binding's parameter object; absent: the policy takes none. */
  paramKind?: { apiVersion: string; kind: string };
  matchConstraints: {
    resourceRules: {
      apiGroups: string[];
      apiVersions: string[];
      operations: string[];
      resources: string[];
      /** Only objects of these names (kube matches the request's name); absent = every name. */
      resourceNames?: string[];
    }[];
  };
  matchConditions: NamedExpression[];
  variables: NamedExpression[];
  validations: Validation[];
}

/** `a` and `b` (CEL paths) are both absent, or both present and equal. */
export function sameAs(a: string, b: string): string {
  return `(has(${a}) == has(${b}) && (!has(${a}) || ${a} == ${b}))`;
}

/** `has(object.F) == has(oldObject.F) && (!has(object.F) || object.F == oldObject.F)`: F unchanged. */
export function same(field: string): string {
  return sameAs(`object.${field}`, `oldObject.${field}`);
}

/** Where value `key` goes in the shipped file: the chart replaces it with its value. */
export function placeholder(key: string): string {
  return `__KURED_TS_${key}__`;
}

/** Is `key` in the comma-separated list `list` (a CEL string expression)? */
export function listed(list: string, key: string): string {
  return `(',' + ${list} + ',').contains(',' + ${key} + ',')`;
}

/**
 * Every key of map F is unchanged, except keys in the `writable` list (added, changed or removed
 * freely) and keys in the `removable` list (may only disappear).
 */
export function mapUnchangedExcept(field: string, writable: string, removable?: string): string {
  // `writable` and `removable` are CEL string expressions of comma-separated keys
  const now = `object.${field}`;
  const before = `oldObject.${field}`;
  const kept = (m: string, other: string, k: string): string =>
    `(has(${other}) && ${k} in ${other} && ${other}[${k}] == ${m}[${k}])`;
  const mayGo = removable === undefined ? '' : ` || ${listed(removable, 'k')}`;
  return [
    `(!has(${now}) || ${now}.all(k, ${listed(writable, 'k')} || ${kept(now, before, 'k')}))`,
    `(!has(${before}) || ${before}.all(k, ${listed(writable, 'k')}${mayGo} || (has(${now}) && k in ${now})))`,
  ].join(' && ');
}

/** Metadata the agent (and the coordinator) never write, on either object. */
export const OTHER_METADATA = ['ownerReferences', 'finalizers'];

/**
 * `text` as a single-quoted CEL string literal. A regular expression's backslashes are doubled:
 * `\{` is an invalid escape in CEL, and kube-apiserver refuses the whole policy for one.
 */
export function celString(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** A rule of a validation: what is forbidden is what `expression` does not hold. */
export function forbid(expression: string, messageExpression: string): Validation {
  return { expression, messageExpression, reason: 'Forbidden' };
}

/** `specs` with every placeholder replaced by its value, as the chart renders them. */
export function withValues<K extends string>(
  specs: Record<K, PolicySpec>,
  values: Readonly<Record<string, string>>,
): Record<K, PolicySpec> {
  let text = JSON.stringify(specs);
  for (const [key, v] of Object.entries(values)) {
    if (/['"\\]/.test(v))
      throw new Error(`admission policy value ${key} may hold no quote or backslash: ${v}`);
    text = text.split(placeholder(key)).join(v);
  }
  return JSON.parse(text) as Record<K, PolicySpec>;
}
