// --silence-matcher: one Alertmanager silence per value, its matchers in Alertmanager's syntax
// (`{node="{{.node}}", severity!="none"}`, braces optional; =, !=, =~, !~; values quoted, or bare as
// amtool allows), `{{.node}}` replaced by the node's name (escaped for a regular expression in =~
// and !~). Matched as Alertmanager matches: a missing label is the empty string, and a regular
// expression is anchored at both ends.

/** One matcher of a silence, as Alertmanager's API v2 has it. */
export interface Matcher {
  name: string;
  value: string;
  isRegex: boolean;
  isEqual: boolean;
}

const NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const NODE = /\{\{\s*\.node\s*\}\}/g;

/** Splits at the commas outside double quotes. */
function parts(text: string): string[] {
  const out: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] ?? '';
    if (c === '\\' && quoted) {
      current += c + (text[++i] ?? '');
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (c === ',' && !quoted) {
      out.push(current);
      current = '';
    } else current += c;
  }
  if (quoted) throw new Error('a quote is not closed');
  out.push(current);
  return out.map((p) => p.trim()).filter((p) => p !== '');
}

/** A value as written: quoted (with \" and \\ escapes) or bare. */
function unquote(text: string): string {
  if (!text.startsWith('"')) return text;
  if (!text.endsWith('"') || text.length < 2) throw new Error(`${text}: the quote is not closed`);
  return text.slice(1, -1).replace(/\\(.)/g, '$1');
}

/** One `name op value`. */
function matcher(text: string): Matcher {
  const m = /^([^=!~\s]+)\s*(=~|!~|!=|=)\s*(.*)$/.exec(text);
  if (m === null) throw new Error(`${text}: not name="value" (or !=, =~, !~)`);
  const [, name = '', op = '', raw = ''] = m;
  if (!NAME.test(name)) throw new Error(`${name}: not a label name`);
  const value = unquote(raw.trim());
  const isRegex = op.includes('~');
  if (isRegex) anchored(value.replace(NODE, 'node'));
  return { name, value, isRegex, isEqual: !op.startsWith('!') };
}

/** Alertmanager's regular expression for `value`: anchored at both ends. */
function anchored(value: string): RegExp {
  try {
    return new RegExp(`^(?:${value})$`);
  } catch (err) {
    throw new Error(`${value}: not a regular expression (${(err as Error).message})`);
  }
}

/** Does `m` match the empty string (a label the alert does not have)? */
function matchesEmpty(m: Matcher): boolean {
  return matchOne(m, '');
}

function matchOne(m: Matcher, value: string): boolean {
  const hit = m.isRegex ? anchored(m.value).test(value) : m.value === value;
  return hit === m.isEqual;
}

/** The matchers of one --silence-matcher value; throws with what is wrong. */
export function parseMatcherSet(text: string): Matcher[] {
  const body = text.trim().replace(/^\{/, '').replace(/\}$/, '');
  const set = parts(body).map(matcher);
  if (set.length === 0) throw new Error('no matcher');
  // Alertmanager refuses a silence whose every matcher matches the empty string: it would silence all
  if (set.every((m) => matchesEmpty({ ...m, value: m.value.replace(NODE, 'node') })))
    throw new Error('every matcher matches an alert without the label: it would silence every alert');
  return set;
}

/** `set` for `node`: {{.node}} replaced (escaped in regular expressions). */
export function forNode(set: readonly Matcher[], node: string): Matcher[] {
  const escaped = node.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return set.map((m) => ({ ...m, value: m.value.replace(NODE, m.isRegex ? escaped : node) }));
}

/** Does the silence of `set` cover an alert with `labels` (Alertmanager's semantics)? */
export function covers(set: readonly Matcher[], labels: Readonly<Record<string, string>>): boolean {
  return set.every((m) => matchOne(m, labels[m.name] ?? ''));
}
