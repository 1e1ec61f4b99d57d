// kured's Helm chart values (kubereboot/charts, chart 2.x to 6.x) as kured-ts chart values: one rule
// per kured key, each value of a flag checked by kured-ts's own flag parser, and a note for every
// key that is not carried over and why. Pure: `kured-ts migrate-values` reads and prints; the
// chart README's migration table is rendered from the same rules (npm run docs).
import { valuesKey as camel, type FlagSpec } from '../config/flags.js';
import { PROXY_VARIABLES } from '../http/proxy.js';
import {
  CHART_FLAGS,
  FLAG_BY_KEY,
  KURED_CHART_RULES,
  POLICY_FLAGS,
  equal,
  isObject,
  kebab,
  type Converted,
  type NoteKind,
  type Json,
  type Rule,
} from './kured-chart-rules.js';

export { memoryBytes } from './kured-chart-rules.js';
import { proposeAlertFilter } from './alert-filter.js';
import { parseConfig } from '../config/parse.js';
import { errorText } from '../text/error-text.js';

/** A key that was not carried over (or carried with a change of behaviour), and why. */
interface MigrationNote {
  /** The key in kured's values (`configuration.startTime`, `extraArgs.period`). */
  key: string;
  why: string;
  /**
   * `lost`: what the user set has no effect in kured-ts and nothing replaces it (an unknown key, a
   * flag kured-ts lacks, a value its parser refuses); `refused`: left out by design, the note names
   * what replaces it (kured's image, PodSecurityPolicy, a flag the chart sets); `changed`: carried,
   * with a difference worth knowing; `proposed`: not set in kured, a value to add (an alert filter).
   */
  kind: NoteKind;
}

export type { NoteKind } from './kured-chart-rules.js';

export interface Migration {
  /** kured-ts chart values. */
  values: Record<string, unknown>;
  notes: MigrationNote[];
  /** How many kured keys were carried over. */
  carried: number;
}

/** Where kured's DaemonSet is, so that kured-ts shares its lock during the switch. */
export interface KuredLock {
  /** The kured DaemonSet's name (its Helm release's fullname). */
  dsName: string;
  dsNamespace: string;
}

const RULE_BY_KEY = new Map(KURED_CHART_RULES.map((r) => [r.kured, r]));

/** "", null, [] and {}: kured's chart uses them for "not set", so kured-ts's defaults stay. */
function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null || value === '') return true;
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === 'object' && Object.keys(value).length === 0;
}

/** Sets `path` (dots) in `target`, making the objects on the way. */
function setPath(target: Json, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (!isObject(next)) node[part] = {};
    node = node[part] as Json;
  }
  node[parts[parts.length - 1] ?? ''] = value;
}

/** Keys whose whole value one rule handles (not looked into). */
const WHOLE = new Set([...RULE_BY_KEY.keys(), 'extraArgs', 'extraEnvVars']);

/**
 * kured's values as dotted paths: every `configuration.<key>`, the keys a rule takes whole, and the
 * leaves of everything else.
 */
function flatten(values: Json, prefix = ''): [string, unknown][] {
  const out: [string, unknown][] = [];
  for (const [key, value] of Object.entries(values)) {
    const path = prefix === '' ? key : `${prefix}.${key}`;
    if (path === 'configuration' && isObject(value)) {
      for (const [flag, v] of Object.entries(value)) out.push([`configuration.${flag}`, v]);
    } else if (!WHOLE.has(path) && isObject(value)) out.push(...flatten(value, path));
    else out.push([path, value]);
  }
  return out;
}

/** A flag value as kured-ts's parser takes it: lists item by item, everything else as text. */
function rawValues(value: unknown): string[] {
  if (Array.isArray(value)) return value.map((v) => String(v));
  return [typeof value === 'string' ? value : JSON.stringify(value)];
}

/** undefined when kured-ts accepts `value` for the flag, else why not. */
function refusal(flag: FlagSpec, value: unknown): string | undefined {
  try {
    parseConfig({ [flag.name]: rawValues(value) }, {});
    return undefined;
  } catch (err) {
    return errorText(err);
  }
}

/** Variables kured-ts reads besides KURED_* (any case, as Go reads them). */
const HONOURED_ENV = new Set<string>([...PROXY_VARIABLES, 'NODE_EXTRA_CA_CERTS']);

/**
 * The names of the variables kured-ts does not read; SSL_CERT_FILE is not among them when it is
 * carried over as NODE_EXTRA_CA_CERTS (`caCarried`: it gets a note of its own).
 */
function unreadEnv(envs: readonly unknown[], caCarried: boolean): string[] {
  return envs
    .map((env) => (isObject(env) && typeof env.name === 'string' ? env.name : ''))
    .filter((name) => !(name === 'SSL_CERT_FILE' && caCarried))
    .filter((name) => !name.startsWith('KURED_') && !HONOURED_ENV.has(name.toUpperCase()));
}

/** Go's SSL_CERT_FILE (a private CA for Prometheus or a webhook) as Node's NODE_EXTRA_CA_CERTS. */
function caCerts(envs: unknown[]): unknown[] {
  const byName = (name: string): Json | undefined =>
    envs.find((e): e is Json => isObject(e) && e.name === name);
  const sslCertFile = byName('SSL_CERT_FILE');
  if (sslCertFile === undefined || byName('NODE_EXTRA_CA_CERTS') !== undefined) return [];
  return [{ ...sslCertFile, name: 'NODE_EXTRA_CA_CERTS' }];
}

class Migrator {
  readonly values: Json = {};
  readonly notes: MigrationNote[] = [];
  carried = 0;

  note(key: string, why: string, kind: NoteKind): void {
    this.notes.push({ key, why, kind });
  }

  put(path: string, value: unknown): void {
    setPath(this.values, path, value);
    this.carried++;
  }

  /** A flag of kured's that the kured-ts chart sets itself (refused), or that kured-ts lacks (lost). */
  private unknownFlag(key: string, name: string): void {
    if (CHART_FLAGS.has(name)) this.note(key, `--${name}: the chart sets it itself`, 'refused');
    else this.note(key, `--${name}: kured-ts has no such flag`, 'lost');
  }

  /** `configuration.<key>` or an extraArgs flag: checked by the flag's own parser. */
  flag(key: string, name: string, value: unknown): void {
    const flag = FLAG_BY_KEY.get(camel(name));
    if (flag === undefined) {
      this.unknownFlag(key, name);
      return;
    }
    const why = refusal(flag, value);
    if (why !== undefined) {
      this.note(key, `refused by kured-ts, not carried over: ${why}`, 'lost');
      return;
    }
    if (typeof value === 'string' && value.includes('{{'))
      this.note(
        key,
        'carried as written: the kured-ts chart does not expand Helm templates (tpl) in it',
        'changed',
      );
    this.put(`configuration.${camel(flag.name)}`, value);
  }

  /**
   * kured's extraArgs map stays a map (the chart renders it last, "" as a bare flag, so it wins as in
   * kured), each value checked by the flag's parser; the flags the chart renders its admission
   * policy and RBAC from move to their configuration key, which the chart requires.
   */
  extraArgs(value: unknown): void {
    if (!isObject(value)) {
      this.note('extraArgs', 'expected a map of flag name to value', 'lost');
      return;
    }
    for (const [name, arg] of Object.entries(value)) {
      const bare = name.replace(/^-+/, '');
      const flagName = bare.includes('-') ? bare : kebab(bare);
      const key = `extraArgs.${name}`;
      if (POLICY_FLAGS.has(flagName)) {
        this.flag(key, flagName, arg);
        continue;
      }
      const flag = FLAG_BY_KEY.get(camel(flagName));
      if (flag === undefined) {
        this.unknownFlag(key, flagName);
        continue;
      }
      // "" is kured's bare flag: `--force-reboot` means true
      const why = refusal(flag, arg === '' && flag.type === 'boolean' ? 'true' : arg);
      if (why !== undefined) this.note(key, `refused by kured-ts, not carried over: ${why}`, 'lost');
      else this.put(`extraArgs.${flagName}`, arg);
    }
  }

  extraEnvVars(value: unknown): void {
    if (!Array.isArray(value)) {
      this.note('extraEnvVars', 'expected a list of environment variables', 'lost');
      return;
    }
    const envs = value as unknown[];
    const added = caCerts(envs);
    for (const name of unreadEnv(envs, added.length > 0))
      this.note(
        `extraEnvVars.${name || '?'}`,
        'carried; kured-ts itself reads only KURED_* variables, HTTP(S)_PROXY, NO_PROXY and NODE_EXTRA_CA_CERTS',
        'changed',
      );
    this.put('extraEnvVars', [...envs, ...added]);
    if (added.length > 0)
      this.note(
        'extraEnvVars.SSL_CERT_FILE',
        'carried, and NODE_EXTRA_CA_CERTS added with the same file: Node reads its extra CAs from there (added to the system CAs, where SSL_CERT_FILE replaces them in Go)',
        'changed',
      );
  }

  rule(rule: Rule, key: string, value: unknown): void {
    // kured's default, under a key that has a default of its own in kured-ts: nothing to carry or say
    const isKuredDefault = rule.kuredDefault !== undefined && equal(value, rule.kuredDefault);
    if (isKuredDefault) return;
    if (rule.to === undefined) {
      this.note(key, rule.why, 'refused');
      return;
    }
    if (rule.convert) {
      this.converted(rule.convert(value), key);
      return;
    }
    this.put(rule.to, value);
  }

  private converted({ set, note, kind }: Converted, key: string): void {
    for (const [path, v] of set) setPath(this.values, path, v);
    if (set.length > 0) this.carried++;
    if (note !== undefined) this.note(key, note, kind ?? 'changed');
  }

  key(key: string, value: unknown): void {
    if (key === 'extraArgs') this.extraArgs(value);
    else if (key === 'extraEnvVars') this.extraEnvVars(value);
    else {
      const rule = RULE_BY_KEY.get(key);
      if (rule !== undefined) this.rule(rule, key, value);
      else if (key.startsWith('configuration.'))
        this.flag(key, kebab(key.slice('configuration.'.length)), value);
      else this.note(key, 'not a key of the kured chart that kured-ts knows', 'lost');
    }
  }
}

/** kured's taint is off unless set; kured-ts's chart taints by default: say so when that changes. */
function taintNote(values: Json): MigrationNote | undefined {
  const configuration = isObject(values.configuration) ? values.configuration : {};
  const taint = configuration.preferNoScheduleTaint;
  if (!isEmpty(taint)) return undefined;
  return {
    key: 'configuration.preferNoScheduleTaint',
    kind: 'changed',
    why:
      'unset in kured (no taint); the kured-ts chart taints a node PreferNoSchedule (weave.works/kured-node-reboot) ' +
      'as soon as it needs a reboot: set it to "" to keep kured\'s behaviour',
  };
}

/**
 * kured never takes a node out of the cloud load balancers; kured-ts does by default (issue 44), and
 * the migration keeps that default (one cordon no longer does it since Kubernetes 1.19): say so.
 */
const LB_NOTE: MigrationNote = {
  key: 'configuration.excludeFromLb',
  kind: 'changed',
  why:
    'not in kured; kept at the kured-ts default (true): before its drain a node is labelled ' +
    'node.kubernetes.io/exclude-from-external-load-balancers, and where a Service of type LoadBalancer exists ' +
    "the drain starts lbDrainWait (2m) later: set it to false to keep kured's behaviour",
};

/** The alert filter to add where kured asked Prometheus without ignoring the alerts that always fire. */
function alertFilterNote(values: Json): MigrationNote | undefined {
  const proposal = proposeAlertFilter(values);
  if (proposal === undefined) return undefined;
  return {
    key: 'configuration.alertFilterRegexp',
    kind: 'proposed',
    why:
      `the Prometheus blocker counts ${proposal.missed.join(', ')}, which would hold every node ` +
      "(Watchdog and InfoInhibitor fire by design in kube-prometheus-stack, the kured-ts chart's own KuredTs* " +
      `alerts fire because reboots wait): add alertFilterRegexp: '${proposal.regexp}' (docs/integrations.md)`,
  };
}

/** Migrates kured chart values; `lock` makes kured-ts share kured's lock (its DaemonSet). */
export function migrateKuredValues(input: unknown, lock?: KuredLock): Migration {
  if (!isObject(input)) {
    return { values: {}, notes: [{ key: '(file)', why: 'not a map of values', kind: 'lost' }], carried: 0 };
  }
  const m = new Migrator();
  for (const [key, value] of flatten(input)) if (!isEmpty(value)) m.key(key, value);
  if (lock) {
    setPath(m.values, 'configuration.dsName', lock.dsName);
    setPath(m.values, 'configuration.dsNamespace', lock.dsNamespace);
  }
  const taint = taintNote(input);
  const filter = alertFilterNote(m.values);
  const notes = [...m.notes, ...(taint ? [taint] : []), LB_NOTE, ...(filter ? [filter] : [])];
  return { values: m.values, notes, carried: m.carried };
}

/** kured's DaemonSet name for a Helm release of its chart (the chart's fullname rule). */
export function kuredDaemonSetName(release: string): string {
  return release.includes('kured') ? release : `${release}-kured`;
}

/** The markdown table of the mapping for charts/kured-ts/README.md. */
export function renderMigrationTable(): string {
  const rows: string[][] = [
    [
      '`configuration.<flag>` (every kured flag)',
      '`configuration.<flag>`',
      'same key; each value checked by the kured-ts flag parser',
    ],
    ['`extraArgs.<flag>`', '`configuration.<flag>`', 'flags kured-ts knows; the others are listed'],
    ['`extraEnvVars`', '`extraEnv`', 'as is; kured-ts reads only `KURED_*` variables'],
    ...KURED_CHART_RULES.map((r) => [
      `\`${r.kured}\``,
      r.to === undefined ? '-' : `\`${r.to}\``,
      r.to === undefined ? `not carried over: ${r.why}` : r.why,
    ]),
  ];
  const line = (cells: string[]): string => `| ${cells.join(' | ')} |`;
  return [
    line(['kured chart', 'kured-ts chart', 'note']),
    line(['---', '---', '---']),
    ...rows.map(line),
  ].join('\n');
}
