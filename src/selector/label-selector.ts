// Label selectors as Kubernetes defines them: parsed once into requirements, matched purely.

type Operator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';

/** One requirement of a selector; all requirements of a selector must hold (AND). */
interface Requirement {
  key: string;
  operator: Operator;
  /** Values for In/NotIn; empty for Exists/DoesNotExist. */
  values: string[];
}

/** A parsed selector: the AND of its requirements. An empty selector matches everything. */
export type Selector = readonly Requirement[];

/** The structured form used by PDBs, Deployments etc. (`spec.selector`). */
export interface LabelSelectorObject {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

const KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

/** Splits on commas that are not inside parentheses. */
function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      terms.push(current);
      current = '';
    } else current += ch;
  }
  terms.push(current);
  return terms.map((t) => t.trim());
}

function checkKey(key: string, term: string): string {
  if (!KEY.test(key)) throw new Error(`invalid label key "${key}" in "${term}"`);
  return key;
}

function checkValue(value: string, term: string): string {
  if (!VALUE.test(value) || value.length > 63) throw new Error(`invalid label value "${value}" in "${term}"`);
  return value;
}

function parseTerm(term: string): Requirement {
  const set = /^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term);
  if (set) {
    const values = (set[3] ?? '').split(',').map((v) => checkValue(v.trim(), term));
    return { key: checkKey(set[1] ?? '', term), operator: set[2] === 'in' ? 'In' : 'NotIn', values };
  }
  const eq = /^([^!=\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(term);
  if (eq) {
    const value = checkValue(eq[3] ?? '', term);
    return { key: checkKey(eq[1] ?? '', term), operator: eq[2] === '!=' ? 'NotIn' : 'In', values: [value] };
  }
  if (term.startsWith('!'))
    return { key: checkKey(term.slice(1).trim(), term), operator: 'DoesNotExist', values: [] };
  return { key: checkKey(term, term), operator: 'Exists', values: [] };
}

/**
 * Parses a selector string (`app=web,tier!=db`, `env in (a,b)`, `!legacy`, `gpu`).
 * Throws an Error naming the bad term. The empty string is the empty selector.
 */
export function parseLabelSelector(text: string): Selector {
  if (text.trim() === '') return [];
  return splitTerms(text).map((term) => {
    if (term === '') throw new Error(`empty term in label selector "${text}"`);
    return parseTerm(term);
  });
}

/** Converts `spec.selector` of a PDB or workload. Unknown operators throw. */
export function fromLabelSelectorObject(obj: LabelSelectorObject): Selector {
  const reqs: Requirement[] = Object.entries(obj.matchLabels ?? {}).map(([key, value]) => ({
    key,
    operator: 'In',
    values: [value],
  }));
  for (const e of obj.matchExpressions ?? []) {
    if (!['In', 'NotIn', 'Exists', 'DoesNotExist'].includes(e.operator)) {
      throw new Error(`unknown label selector operator "${e.operator}"`);
    }
    reqs.push({ key: e.key, operator: e.operator as Operator, values: e.values ?? [] });
  }
  return reqs;
}

/** True when every requirement holds for these labels. */
export function matches(selector: Selector, labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {};
  return selector.every((r) => {
    const has = Object.prototype.hasOwnProperty.call(l, r.key);
    const value = l[r.key];
    switch (r.operator) {
      case 'Exists':
        return has;
      case 'DoesNotExist':
        return !has;
      case 'In':
        return has && value !== undefined && r.values.includes(value);
      case 'NotIn':
        return !has || value === undefined || !r.values.includes(value);
    }
  });
}

/** Renders a selector back to its string form (for `labelSelector=` query parameters). */
export function formatLabelSelector(selector: Selector): string {
  return selector
    .map((r) => {
      switch (r.operator) {
        case 'Exists':
          return r.key;
        case 'DoesNotExist':
          return `!${r.key}`;
        case 'In':
          return r.values.length === 1
            ? `${r.key}=${r.values[0] ?? ''}`
            : `${r.key} in (${r.values.join(',')})`;
        case 'NotIn':
          return r.values.length === 1
            ? `${r.key}!=${r.values[0] ?? ''}`
            : `${r.key} notin (${r.values.join(',')})`;
      }
    })
    .join(',');
}
