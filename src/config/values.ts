// Parsers of single flag values (pure): Go durations, shell-quoted command lines, Kubernetes names
// and labels, URLs. Each throws an Error saying what is wrong; parse.ts names the flag.
import { InvalidValueError } from './config.js';
import type { Budget } from './budget.js';

const DURATION_UNITS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * Parses a Go duration (`time.ParseDuration`): `1h30m`, `90s`, `500ms`, `1.5h`, `-1s`, `0`.
 * Returns milliseconds (sub-millisecond units give fractions). Throws an Error with the reason.
 */
export function parseDuration(text: string): number {
  const match = /^([-+]?)(.*)$/.exec(text.trim());
  const sign = match?.[1] === '-' ? -1 : 1;
  const body = match?.[2] ?? '';
  if (body === '0') return 0;
  if (body === '') throw new Error(`expected ${DURATION_EXAMPLE}`);
  return sign * sumDurationTerms(body);
}

const DURATION_EXAMPLE = 'a duration such as 90s, 1h30m or 500ms';

function sumDurationTerms(body: string): number {
  const term = /(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;
  let total = 0;
  for (let pos = 0; pos < body.length; pos = term.lastIndex) {
    term.lastIndex = pos;
    const t = term.exec(body);
    if (!t) {
      const reason = /^[\d.]+$/.test(body.slice(pos)) ? 'missing unit' : 'unknown unit or syntax';
      throw new Error(`${reason} (expected ${DURATION_EXAMPLE})`);
    }
    total += Number(t[1]) * (DURATION_UNITS[t[2] ?? ''] ?? 0);
  }
  return total;
}

/**
 * Splits a command line into argv like a POSIX shell (and like kured's shlex): blanks separate
 * words, single quotes keep everything literally, double quotes allow `\"` and `\\`, a backslash
 * outside quotes escapes the next character. No expansion of variables or globs. Unterminated
 * quotes throw.
 */
export function splitCommand(text: string): string[] {
  const segment = /(\s+)|'([^']*)'|"((?:\\[\s\S]|[^"\\])*)"|\\([\s\S])|([^\s'"\\]+)/y;
  const words: string[] = [];
  let word: string | undefined;
  for (let pos = 0; pos < text.length; pos = segment.lastIndex) {
    segment.lastIndex = pos;
    const m = segment.exec(text);
    if (!m)
      throw new Error(`unterminated ${text.charAt(pos) === '\\' ? 'escape' : text.charAt(pos) + ' quote'}`);
    if (m[1] !== undefined) {
      if (word !== undefined) words.push(word);
      word = undefined;
      continue;
    }
    word = (word ?? '') + segmentText(m);
  }
  if (word !== undefined) words.push(word);
  return words;
}

/** The text a matched segment adds to the word: quotes removed, escapes resolved. */
function segmentText(m: RegExpExecArray): string {
  const doubleQuoted = m[3]?.replace(/\\(["\\$`])/g, '$1');
  return m[2] ?? doubleQuoted ?? m[4] ?? m[5] ?? '';
}

const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Checks a qualified name (label, annotation, taint key or condition type): `[prefix/]name`. */
export function checkQualifiedName(key: string): string {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = key.slice(slash + 1);
  if (!LABEL_NAME.test(name) || name.length > 63) {
    throw new InvalidValueError(
      key,
      `"${name}" is not a valid name (alphanumerics, '-', '_', '.', at most 63)`,
    );
  }
  if (prefix !== undefined && (!DNS_SUBDOMAIN.test(prefix) || prefix.length > 253)) {
    throw new InvalidValueError(key, `prefix "${prefix}" is not a DNS subdomain`);
  }
  return key;
}

/** Checks a Kubernetes object name: `subdomain` (DNS-1123 subdomain) or `label` (namespaces). */
export function checkObjectName(name: string, kind: 'subdomain' | 'label'): string {
  const ok =
    kind === 'label'
      ? DNS_LABEL.test(name) && name.length <= 63
      : DNS_SUBDOMAIN.test(name) && name.length <= 253;
  if (!ok) throw new Error(`not a valid DNS-1123 ${kind} (lower-case alphanumerics and '-')`);
  return name;
}

/** A hook's template: a CronJob's name, short enough for the Job's suffix (52 characters, as CronJobs). */
export function hookTemplateName(name: string): string {
  checkObjectName(name, 'label');
  if (name.length > 52) throw new Error('a CronJob name is at most 52 characters');
  return name;
}

/**
 * Parses `key=value` node labels (each value may hold a comma-separated list, like kured's string
 * slice). A label without `=` is an error (kured panics on it); the value may be empty.
 */
export function parseLabels(values: readonly string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const item of values.flatMap((v) => v.split(',')).map((v) => v.trim())) {
    if (item === '') continue;
    const eq = item.indexOf('=');
    if (eq < 0) throw new InvalidValueError(item, 'expected key=value');
    const key = checkQualifiedName(item.slice(0, eq));
    const value = item.slice(eq + 1);
    if (value !== '' && (!LABEL_NAME.test(value) || value.length > 63)) {
      throw new InvalidValueError(item, `"${value}" is not a valid label value`);
    }
    labels[key] = value;
  }
  return labels;
}

/** Checks a URL (WHATWG parser); `schemes` limits the allowed protocols when given. */
export function checkUrl(text: string, schemes?: readonly string[]): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error('not a valid URL');
  }
  const scheme = url.protocol.replace(/:$/, '');
  if (schemes && !schemes.includes(scheme)) throw new Error(`scheme must be ${schemes.join(' or ')}`);
  return text;
}

/** --max-unhealthy-nodes: '' (off), N, or N% of the nodes. */
export function unhealthyLimit(value: string): Budget | undefined {
  const text = value.trim();
  if (text === '') return undefined;
  const m = /^(\d+)(%)?$/.exec(text);
  if (!m) throw new Error('expected a number of nodes (2) or a percentage of them (10%)');
  const n = Number(m[1]);
  if (m[2] !== undefined && n > 100) throw new Error('a percentage must be 0-100');
  return m[2] === undefined ? { count: n } : { percent: n };
}

/**
 * --concurrency, --group-concurrency: N (at least `min`), or N% (1-100) of the nodes it applies to,
 * resolved by the lock for the fleet as it is at each decision (src/capacity/budget.ts).
 */
export function share(min: number): (value: string) => Budget {
  return (value) => {
    const m = /^\s*(\d+)%\s*$/.exec(value);
    if (m === null) return { count: integer(min)(value) };
    const percent = Number(m[1]);
    if (percent < 1 || percent > 100) throw new Error('a percentage must be 1-100');
    return { percent };
  };
}

/** A duration (parseDuration) that must not be negative, nor 0 when `min` is 'positive'. */
export function duration(min: 'positive' | 'non-negative'): (value: string) => number {
  return (value) => {
    const ms = parseDuration(value);
    if (ms < 0) throw new Error('must not be negative');
    if (min === 'positive' && ms === 0) throw new Error('must be greater than 0');
    return ms;
  };
}

/** A decimal integer (digits only: no 1e3, no 0x10, no 2.0) within [min, max]. */
export function integer(min: number, max = Number.MAX_SAFE_INTEGER): (value: string) => number {
  return (value) => {
    if (!/^[-+]?\d+$/.test(value.trim())) throw new Error('expected an integer');
    const n = Number(value);
    if (n < min || n > max) {
      throw new Error(max === Number.MAX_SAFE_INTEGER ? `must be at least ${min}` : `must be ${min}-${max}`);
    }
    return n;
  };
}
