// --drain-rules FILE: how the drain treats pods that cannot be labelled (an operator's storage
// daemons, a vendor's agents), by namespace and label selector. Parsed once at start-up, before any
// API call: a file that cannot be read or understood is a usage error naming the file and the entry.
import { load, YAMLException } from 'js-yaml';
import { UsageError, type DrainMode, type DrainRule } from './config.js';
import { checkObjectName } from './values.js';
import { formatLabelSelector, parseLabelSelector, type Selector } from '../selector/label-selector.js';

const DRAIN_MODES: readonly DrainMode[] = ['evict', 'skip', 'wait-completed'];

const KEYS = new Set(['namespace', 'selector', 'drain', 'order']);
/** Orders are int32, as Cluster API's MachineDrainRule order is. */
const MAX_ORDER = 2 ** 31 - 1;

/** Is `n` an order (a whole number within int32)? */
export function isOrder(n: number): boolean {
  return Number.isInteger(n) && n >= -MAX_ORDER - 1 && n <= MAX_ORDER;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function field<T>(value: unknown, key: string, check: (v: unknown) => T | undefined, expected: string): T {
  const parsed = check(value);
  if (parsed === undefined) throw new Error(`"${key}" must be ${expected}, not ${JSON.stringify(value)}`);
  return parsed;
}

const asText = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v : undefined);
const asMode = (v: unknown): DrainMode | undefined => DRAIN_MODES.find((m) => m === v);
const asOrder = (v: unknown): number | undefined => (typeof v === 'number' && isOrder(v) ? v : undefined);

function selectorOf(value: unknown): Selector {
  const text = field(value, 'selector', asText, 'a label selector (app=x,tier in (a,b))');
  try {
    return parseLabelSelector(text);
  } catch (err) {
    throw new Error(`"selector" is not a label selector: ${(err as Error).message}`, { cause: err });
  }
}

/** The entry's keys: known ones only, and enough of them to say something. */
function checkShape(value: Record<string, unknown>): void {
  const unknown = Object.keys(value).filter((k) => !KEYS.has(k));
  if (unknown.length > 0)
    throw new Error(`unknown key "${unknown[0] ?? ''}" (known: ${[...KEYS].join(', ')})`);
  if (value.namespace === undefined && value.selector === undefined)
    throw new Error('needs a namespace or a selector: a rule for every pod of the cluster is a mistake');
  if (value.drain === undefined && value.order === undefined) throw new Error('needs drain or order');
}

/** One entry, checked; throws naming what is wrong. */
function ruleOf(value: unknown, entry: number): DrainRule {
  if (!isRecord(value)) throw new Error('must be a mapping with namespace, selector, drain and order');
  checkShape(value);
  const rule: DrainRule = {
    entry,
    selector: value.selector === undefined ? [] : selectorOf(value.selector),
  };
  if (value.namespace !== undefined)
    rule.namespace = checkObjectName(
      field(value.namespace, 'namespace', asText, 'a namespace name'),
      'label',
    );
  if (value.drain !== undefined)
    rule.drain = field(value.drain, 'drain', asMode, `one of ${DRAIN_MODES.join(', ')}`);
  if (value.order !== undefined) rule.order = field(value.order, 'order', asOrder, 'a whole number (int32)');
  return rule;
}

/** The rules of a file's text (YAML, a list of entries); throws one line naming the entry at fault. */
export function parseDrainRules(text: string): DrainRule[] {
  let doc: unknown;
  try {
    doc = load(text);
  } catch (err) {
    if (err instanceof YAMLException) throw new Error(`not YAML: ${err.reason} (line ${err.mark.line + 1})`);
    throw err;
  }
  if (doc === undefined || doc === null) return [];
  if (!Array.isArray(doc)) throw new Error('must be a YAML list of rules (- namespace: …)');
  return doc.map((value: unknown, i) => {
    try {
      return ruleOf(value, i + 1);
    } catch (err) {
      throw new Error(`entry ${i + 1}: ${(err as Error).message}`, { cause: err });
    }
  });
}

/** "entry 2 (namespace rook-ceph, selector app=osd)": how reasons name a rule. */
export function describeRule(rule: DrainRule): string {
  const parts = [
    ...(rule.namespace === undefined ? [] : [`namespace ${rule.namespace}`]),
    ...(rule.selector.length === 0 ? [] : [`selector ${formatLabelSelector(rule.selector)}`]),
  ];
  return `--drain-rules entry ${rule.entry} (${parts.join(', ')})`;
}

/**
 * The configuration with the rules of --drain-rules read through `read`; a file that cannot be read
 * or understood is a UsageError naming --drain-rules and the file (exit status 2, before any API call).
 */
export function withDrainRules<C extends { drainRulesFile: string; drainRules: readonly DrainRule[] }>(
  config: C,
  read: (file: string) => string,
): C {
  const file = config.drainRulesFile;
  if (file === '') return config;
  let text: string;
  try {
    text = read(file);
  } catch (err) {
    throw new UsageError('--drain-rules', file, `cannot read the file: ${(err as Error).message}`);
  }
  try {
    return { ...config, drainRules: parseDrainRules(text) };
  } catch (err) {
    throw new UsageError('--drain-rules', file, (err as Error).message);
  }
}
