// Turning raw flag values and the environment into a typed Config: default < env < command line,
// every value checked, the first bad one a UsageError naming the flag.
import { budgetText } from './budget.js';
import { InvalidValueError, UsageError, type Config } from './config.js';
import { FLAGS, type Draft, type FlagSpec } from './flags.js';
import { ProxyEnvError, proxySettingsFromEnv, type ProxySettings } from '../http/proxy.js';

/** Raw command-line values by flag name (`end-time`); repeatable flags keep every occurrence. */
export type FlagValues = Readonly<Record<string, readonly string[] | undefined>>;

/**
 * The raw values commander parsed for these flags, from its options by attribute name (`end-time`
 * → `endTime`). A boolean flag given alone (`--force-reboot`) arrives as true: kured's flags mean
 * 'true' then.
 */
export function optionValues(
  opts: Readonly<Record<string, unknown>>,
  flags: readonly FlagSpec[],
): FlagValues {
  const values: Record<string, string[]> = {};
  for (const flag of flags) {
    const raw = opts[flag.name.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase())];
    if (raw === true) values[flag.name] = ['true'];
    else if (Array.isArray(raw)) values[flag.name] = raw.map(String);
  }
  return values;
}

/** The process environment (or a test's stand-in). */
export type Env = Readonly<Record<string, string | undefined>>;

/** A parsed configuration and the warnings it deserves (deprecated flags, ignored inputs). */
export interface ParsedConfig {
  config: Config;
  warnings: string[];
}

function emptyConfig(): Config {
  // Every field is set by its flag's default below; this only gives the object its shape.
  const shape = {
    window: { days: [], startSecond: 0, endSecond: 0, timeZone: 'UTC', schedules: [], blackouts: [] },
  };
  return shape as unknown as Config;
}

/** Where a flag's raw values come from: the command line beats the environment. */
function rawValues(
  flag: FlagSpec,
  values: FlagValues,
  env: Env,
): { raw: string[]; envName?: string } | undefined {
  const cli = values[flag.name];
  if (cli !== undefined && cli.length > 0) return { raw: [...cli] };
  const fromEnv = env[flag.env];
  // As viper (kured) does by default: an empty variable counts as unset.
  if (fromEnv !== undefined && fromEnv !== '') return { raw: [fromEnv], envName: flag.env };
  return undefined;
}

function applyFlag(flag: FlagSpec, raw: readonly string[], draft: Draft, envVar?: string): void {
  try {
    flag.apply(raw, draft);
  } catch (err) {
    const value = err instanceof InvalidValueError ? err.value : raw.join(',');
    throw new UsageError(`--${flag.name}`, value, (err as Error).message, envVar);
  }
}

function defaults(): Draft {
  const draft: Draft = { config: emptyConfig(), slackHookUrl: '' };
  for (const flag of FLAGS) applyFlag(flag, [flag.default], draft);
  return draft;
}

/** --group-concurrency and --group-order sequential need --group-label; the label alone does nothing. */
function checkGroups(config: Config, warnings: string[]): void {
  if (config.groupConcurrency !== undefined && config.groupLabel === '') {
    throw new UsageError('--group-concurrency', budgetText(config.groupConcurrency), 'needs --group-label');
  }
  const sequential = config.groupOrder.kind === 'sequential';
  if (sequential && config.groupLabel === '') {
    throw new UsageError('--group-order', 'sequential', 'needs --group-label (the groups it orders)');
  }
  if (config.groupLabel !== '' && config.groupConcurrency === undefined && !sequential) {
    warnings.push('--group-label has no effect without --group-concurrency or --group-order sequential');
  }
}

/** h:mm:ss of seconds since midnight. */
function clockText(second: number): string {
  const two = (n: number): string => String(n).padStart(2, '0');
  return `${Math.floor(second / 3600)}:${two(Math.floor(second / 60) % 60)}:${two(second % 60)}`;
}

/** A window that can never open is a mistake, not a policy (a pause says "never" on purpose). */
function checkWindow(window: Config['window']): void {
  if (window.schedules.length > 0) return;
  if (window.days.length === 0) {
    throw new UsageError('--reboot-days', '', 'no day is left: the maintenance window would never open');
  }
  if (window.startSecond === window.endSecond) {
    throw new UsageError(
      '--end-time',
      clockText(window.endSecond),
      'equals --start-time: a one-second window that an agent checking every --period would never see open (all day: --start-time 0:00 --end-time 23:59:59)',
    );
  }
}

/** HTTP(S)_PROXY and NO_PROXY; a proxy that is no URL is a usage error naming the variable. */
function proxySettings(env: Env): ProxySettings {
  try {
    return proxySettingsFromEnv(env);
  } catch (err) {
    if (err instanceof ProxyEnvError) throw new UsageError(err.variable, err.value, err.reason);
    throw err;
  }
}

/** --blocking-query asks --prometheus-url. */
function checkQueries(config: Config): void {
  if (config.blockingQueries.length > 0 && config.prometheusUrl === '') {
    throw new UsageError('--blocking-query', config.blockingQueries[0] ?? '', 'needs --prometheus-url');
  }
}

/** Cross-flag rules, checked after every flag is parsed. */
function finish(draft: Draft, given: ReadonlySet<string>, warnings: string[]): Config {
  const config = draft.config;
  checkWindow(config.window);
  if (config.rebootMethod === 'command' && config.rebootCommand.length === 0) {
    throw new UsageError('--reboot-command', '', 'must not be empty with --reboot-method command');
  }
  checkGroups(config, warnings);
  checkQueries(config);
  if (draft.slackHookUrl !== '') {
    if (config.notifyUrl === '') config.notifyUrl = draft.slackHookUrl;
    else warnings.push('both --notify-url and --slack-hook-url are set: using --notify-url only');
  }
  for (const flag of FLAGS) {
    if (flag.deprecated !== undefined && given.has(flag.name)) {
      warnings.push(`--${flag.name} is deprecated: ${flag.deprecated}`);
    }
  }
  return config;
}

/** The defaults, then each of `flags` given on the command line or in the environment; which were given. */
function applyGiven(
  flags: readonly FlagSpec[],
  values: FlagValues,
  env: Env,
): { draft: Draft; given: Set<string> } {
  const draft = defaults();
  const given = new Set<string>();
  for (const flag of flags) {
    const source = rawValues(flag, values, env);
    if (source === undefined) continue;
    given.add(flag.name);
    applyFlag(flag, source.raw, draft, source.envName);
  }
  return { draft, given };
}

function parseWith(flags: readonly FlagSpec[], values: FlagValues, env: Env): ParsedConfig {
  const { draft, given } = applyGiven(flags, values, env);
  const warnings: string[] = [];
  draft.config.proxy = proxySettings(env);
  return { config: finish(draft, given, warnings), warnings };
}

/**
 * Turns raw flag values and the environment into a typed Config: default < env < command line.
 * Pure. Throws a UsageError naming the flag and the value for the first bad input. It does not
 * require --node-id (only the agent does: see requireNodeId).
 */
export function parseConfigWithWarnings(values: FlagValues, env: Env): ParsedConfig {
  const parsed = parseWith(FLAGS, values, env);
  return { ...parsed, warnings: [...unknownEnv(env), ...parsed.warnings] };
}

/** KURED_* variables that are no setting of kured-ts (a typo is otherwise silently ignored). */
function unknownEnv(env: Env): string[] {
  const known = new Set(FLAGS.map((f) => f.env));
  const unknown = Object.keys(env)
    .filter((name) => name.startsWith('KURED_') && !known.has(name))
    .sort();
  if (unknown.length === 0) return [];
  const named = unknown.map((name) => {
    const near = [...known].find((k) => editDistance(k, name) <= 2);
    return near === undefined ? name : `${name} (${near}?)`;
  });
  return [`ignored: ${named.join(', ')}: no kured-ts setting has that environment variable`];
}

/** Levenshtein distance, for "did you mean". */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row.push(Math.min((previous[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost));
    }
    previous = row;
  }
  return previous[b.length] ?? 0;
}

/** parseConfigWithWarnings without the warnings. */
export function parseConfig(values: FlagValues, env: Env): Config {
  return parseConfigWithWarnings(values, env).config;
}

/** The built-in defaults, exactly as an empty command line and environment give them. */
export function defaultConfig(): Config {
  return parseConfig({}, {});
}

/**
 * Only the agent flags `names` (for operator commands that share a few, e.g. status's --lock-ttl):
 * default < KURED_* env < command line, each value through the flag's own parser, a UsageError naming
 * the flag (and the variable) when one is bad. The rest keep their defaults; nothing else is checked.
 */
export function parseFlags(names: readonly string[], values: FlagValues, env: Env): Config {
  return parseGivenFlags(names, values, env).config;
}

/** parseFlags, and which of `names` were given (on the command line or in the environment). */
export function parseGivenFlags(
  names: readonly string[],
  values: FlagValues,
  env: Env,
): { config: Config; given: ReadonlySet<string> } {
  const { draft, given } = applyGiven(
    FLAGS.filter((f) => names.includes(f.name)),
    values,
    env,
  );
  return { config: draft.config, given };
}

/** Only the window flags (for `kured-ts window`); the rest keep their defaults. */
export function parseWindowConfig(values: FlagValues, env: Env): Config['window'] {
  return parseWith(
    FLAGS.filter((f) => f.window === true),
    values,
    env,
  ).config.window;
}

/** The agent cannot run without knowing its node. */
export function requireNodeId(config: Config): void {
  if (config.nodeId.trim() === '') {
    throw new UsageError('--node-id', config.nodeId, 'required (set --node-id or KURED_NODE_ID)');
  }
}
