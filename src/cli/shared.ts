// What the commands share: exit statuses, their I/O, the connection to the cluster, the DaemonSet
// they address, and one-line API errors.
import { Option, type Command } from 'commander';
import { FLAGS, shownDefault, type FlagSpec } from '../config/flags.js';
import { optionValues, parseFlags, parseGivenFlags, type Env } from '../config/parse.js';
import type { Logger, LogFormat } from '../log/logger.js';
import { FLEET_PAUSE_ANNOTATION, parseFleetPause, type FleetPause } from '../pause/fleet-pause.js';
import { SystemClock, type Clock } from '../clock/clock.js';
import { existsSync, readFileSync } from 'node:fs';
import { UsageError } from '../config/config.js';
import { connectKube } from '../kube/client.js';
import { missingKubeconfig } from '../kube/default-config.js';
import { OutputFormatError } from './output.js';
import { isNotFound, isTimeout, statusCode, statusMessage } from '../kube/errors.js';
import type { Kube, V1DaemonSet } from '../kube/kube.js';
import { errorText } from '../text/error-text.js';
import { discoverDaemonSet, type DaemonSetRef, type Discovery } from './discover.js';

/** What a command talks to; injected so that tests run it against the fake API server. */
export interface CommandIo {
  kube: Kube;
  /** One line of normal output (stdout). */
  out: (line: string) => void;
  /** One line of error output (stderr). Default `out`. */
  err?: (line: string) => void;
  clock: Clock;
  /** Bound on the whole command's API calls. Default COMMAND_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Ends a long-running command (status --watch). */
  signal?: AbortSignal;
}

/** What src/cli/cli.ts hands to register<Name>: the only place that knows the process. */
export interface CommandDeps {
  /** The process environment (KURED_* and KUBECONFIG are read through it). */
  env: Readonly<Record<string, string | undefined>>;
  out: (line: string) => void;
  err: (line: string) => void;
  /** Receives the command's exit code (cli.ts ends the process with it). */
  exit: (code: number) => void;
  /** Default connectKube (--kubeconfig, else KUBECONFIG / ~/.kube/config / in-cluster). */
  connect?: (target: KubeTarget) => Kube;
  /** Is stdout a terminal (status --watch redraws the table there)? Default false. */
  isTTY?: boolean;
  /**
   * For a long-running command (status --watch): from then on SIGINT/SIGTERM abort the returned
   * signal, and the command ends cleanly, instead of ending the process at once.
   */
  interrupted?: () => AbortSignal;
  /** All of standard input (a command given the file `-`). */
  stdin?: () => Promise<string>;
  /** Does a file exist (the no-kubeconfig check)? Default fs.existsSync. */
  exists?: (path: string) => boolean;
  /** Default the system clock. */
  clock?: Clock;
}

/** Where the DaemonSet carrying the lock and the pause lives (same flags as the agent). */
export type { DaemonSetRef } from './discover.js';

/**
 * Exit statuses of every command (README, Commands): 0 ok; 1 a runtime failure (the cluster could
 * not be read or written, the agent could not start); 2 bad usage (nothing was started); 3 `check`:
 * the agent would not start (or continue) a reboot now.
 */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
export const EXIT_HELD_BACK = 3;

export { FLEET_PAUSE_ANNOTATION, type FleetPause } from '../pause/fleet-pause.js';

/** Reads the fleet pause; a value that is not our JSON still pauses (the agents treat it so). */
export function readFleetPause(ds: V1DaemonSet): FleetPause | undefined {
  const pause = parseFleetPause(ds.metadata?.annotations?.[FLEET_PAUSE_ANNOTATION]);
  if (pause?.unreadable === undefined) return pause;
  return { reason: `unreadable pause annotation: ${pause.unreadable}`, by: '', since: '' };
}

/** One clear line for a failed API call. */
export function describeApiError(err: unknown, what: string): string {
  if (err instanceof DaemonSetMissing) return err.message;
  const code = statusCode(err);
  if (isTimeout(err)) {
    return `cannot reach the Kubernetes API (${what}): no answer in time`;
  }
  if (code === undefined) return `cannot reach the Kubernetes API (${what}): ${errorText(err)}`;
  if (code === 401 || code === 403) return `not allowed to ${what}: ${statusMessage(err)}`;
  return `cannot ${what}: ${statusMessage(err)}`;
}

/** The DaemonSet named by --ds-namespace/--ds-name does not exist. */
class DaemonSetMissing extends Error {
  override readonly name = 'DaemonSetMissing';
}

/** Reads our DaemonSet; a 404 becomes DaemonSetMissing naming the flags. */
export async function readDaemonSet(
  kube: Kube,
  ref: DaemonSetRef,
  signal?: AbortSignal,
): Promise<V1DaemonSet> {
  try {
    return await kube.getDaemonSet(ref.dsNamespace, ref.dsName, signal);
  } catch (err: unknown) {
    if (isNotFound(err)) {
      throw new DaemonSetMissing(
        `DaemonSet ${ref.dsNamespace}/${ref.dsName} not found (set --ds-namespace and --ds-name)`,
        { cause: err },
      );
    }
    throw err;
  }
}

/**
 * Bounds a whole command (each request has its own deadline too): a command retrying against a
 * black-holed API server ends with a clear error instead of hanging.
 */
const COMMAND_TIMEOUT_MS = 30_000;

/** The signal every API call of a command uses. */
export function commandSignal(timeoutMs = COMMAND_TIMEOUT_MS): AbortSignal {
  return AbortSignal.timeout(timeoutMs);
}

/** Which cluster a command talks to: kubectl's --kubeconfig and --context. */
export interface KubeTarget {
  /** '' = KUBECONFIG, ~/.kube/config or in-cluster. */
  kubeconfig: string;
  /** '' = the kubeconfig's current-context. */
  context: string;
}

/** The agent flag every command that connects takes: the kubeconfig. */
const CONNECTION_FLAGS = agentFlags('kubeconfig');
/** The agent flags every command that addresses the lock DaemonSet takes. */
const DAEMONSET_FLAGS = agentFlags('ds-namespace', 'ds-name');

/** kubectl's connection flags: --kubeconfig (from the flag table) and --context. */
export function addConnectionOptions(cmd: Command): Command {
  return addFlags(cmd, CONNECTION_FLAGS).option(
    '--context <name>',
    'kubeconfig context to use (default: its current-context)',
  );
}

/**
 * The connection flags and the lock DaemonSet's (--ds-namespace, -n for short, and --ds-name, from
 * the flag table: the agent's variables, parsers and errors). Without --ds-name or KURED_DS_NAME the
 * DaemonSet is found among the chart's (resolveDaemonSet), so the help says so.
 */
export function addClusterOptions(cmd: Command): Command {
  addConnectionOptions(cmd).option(
    '-n, --namespace <namespace>',
    'namespace of the kured-ts DaemonSet (same as --ds-namespace)',
  );
  return addFlags(cmd, DAEMONSET_FLAGS, {
    'ds-namespace': 'the namespace of the one kured-ts DaemonSet found, else kube-system',
    'ds-name': 'the kured-ts DaemonSet found (in -n, else in any namespace), else kured',
  });
}

/** addConnectionOptions' flags as commander gives them (agent flags raw, as lists). */
export interface ConnectionFlags {
  kubeconfig?: string[];
  context?: string;
}

/** addClusterOptions' flags as commander gives them (agent flags raw, as lists). */
export interface ClusterFlags extends ConnectionFlags {
  namespace?: string;
  dsNamespace?: string[];
  dsName?: string[];
}

/** The cluster of addConnectionOptions' flags: command line, then KURED_KUBECONFIG. */
export function connectionTarget(opts: Readonly<Record<string, unknown>>, env: Env): KubeTarget {
  const names = CONNECTION_FLAGS.map((f) => f.name);
  const { kubeconfig } = parseFlags(names, optionValues(opts, CONNECTION_FLAGS), env);
  return { kubeconfig, context: textOption(opts.context) ?? '' };
}

/** A string option as commander gives it; undefined when absent. */
function textOption(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * Where the lock DaemonSet is to be found when the operator did not name it (no --ds-name, no
 * KURED_DS_NAME): among the chart's DaemonSets in `namespace` (-n), or in every namespace.
 */
interface DiscoverScope {
  namespace: string | undefined;
}

/** The resolved cluster flags; `discover` when the DaemonSet is to be found (resolveDaemonSet). */
export type ClusterOptions = DaemonSetRef & KubeTarget & { discover?: DiscoverScope };

/**
 * Resolves addClusterOptions' flags (commander's raw options) as the agent does: command line, then
 * KURED_* environment, then the flag table's default; a bad name is a usage error naming the flag.
 */
export function clusterOptions(opts: Readonly<Record<string, unknown>>, env: Env): ClusterOptions {
  const flags = [...CONNECTION_FLAGS, ...DAEMONSET_FLAGS];
  const values = { ...optionValues(opts, flags) };
  const short = textOption(opts.namespace);
  if (short !== undefined) {
    const long = values['ds-namespace']?.at(-1);
    if (long !== undefined && long !== short) {
      throw new UsageError('-n/--namespace', short, `disagrees with --ds-namespace ${long}`);
    }
    values['ds-namespace'] = [short];
  }
  const parsed = parseGivenFlags(
    flags.map((f) => f.name),
    values,
    env,
  );
  const { config, given } = parsed;
  return {
    kubeconfig: config.kubeconfig,
    context: textOption(opts.context) ?? '',
    dsNamespace: config.dsNamespace,
    dsName: config.dsName,
    ...(given.has('ds-name')
      ? {}
      : { discover: { namespace: given.has('ds-namespace') ? config.dsNamespace : undefined } }),
  };
}

/**
 * The DaemonSet a command addresses: as named, or the lock DaemonSet of the chart's agents
 * (discover.ts), or kured's default when no chart DaemonSet is found. Several locks among the
 * chart's DaemonSets: one line naming them, exit 2, undefined.
 */
async function resolveDaemonSet(
  deps: CommandDeps,
  io: CommandIo,
  options: ClusterOptions,
): Promise<DaemonSetRef | undefined> {
  const fallback = { dsNamespace: options.dsNamespace, dsName: options.dsName };
  if (options.discover === undefined) return fallback;
  let found: Discovery;
  try {
    found = await discoverDaemonSet(io.kube, options.discover.namespace, commandSignal(io.timeoutMs));
  } catch {
    return fallback; // no right to list DaemonSets: try kured's default, whose errors say what to set
  }
  if (found.kind === 'found') return found.ref;
  if (found.kind === 'none') return fallback;
  deps.err(
    `several kured-ts DaemonSets use different locks: ${found.candidates.join('; ')}; choose one with -n NAMESPACE --ds-name NAME`,
  );
  deps.exit(EXIT_USAGE);
  return undefined;
}

/**
 * Connects and builds the CommandIo for a register<Name> action. No cluster configured at all, or a
 * kubeconfig that cannot be loaded, is one line and exit 1.
 */
export function commandIo(deps: CommandDeps, target: KubeTarget): CommandIo | undefined {
  let problem: string | undefined;
  if (deps.connect === undefined && target.kubeconfig === '') {
    problem = missingKubeconfig(deps.env, deps.exists ?? existsSync);
  }
  if (problem === undefined) {
    try {
      const kube = (deps.connect ?? ((t: KubeTarget) => connectKube(t)))(target);
      return { kube, out: deps.out, err: deps.err, clock: deps.clock ?? new SystemClock() };
    } catch (err: unknown) {
      problem = `cannot load the Kubernetes configuration: ${errorText(err)}`;
    }
  }
  deps.err(problem);
  deps.exit(EXIT_FAILURE);
  return undefined;
}

/** Bad usage of a command beyond one flag's value (flags that exclude each other, none given): its line. */
/** A text file, read at start-up (--drain-rules); throws what the file system says. */
export function readText(file: string): string {
  return readFileSync(file, 'utf8');
}

export class CommandUsageError extends Error {
  override readonly name = 'CommandUsageError';
}

function isUsageError(err: unknown): err is Error {
  return err instanceof UsageError || err instanceof OutputFormatError || err instanceof CommandUsageError;
}

/** A usage error is one line and exit 2; anything else is thrown on. */
function usageFailed(deps: CommandDeps, err: unknown): void {
  if (!isUsageError(err)) throw err;
  deps.err(err.message);
  deps.exit(EXIT_USAGE);
}

/** Runs `parse` over the command's flags; a usage error is one line and exit 2. */
export function usage<T>(deps: CommandDeps, parse: () => T): T | undefined {
  try {
    return parse();
  } catch (err: unknown) {
    usageFailed(deps, err);
    return undefined;
  }
}

/** An operator command that reads or writes the cluster, as runCommand runs it. */
interface CommandPlan<O> {
  /** The command's options from its flags; throws a usage error (one line, exit 2). */
  options: () => O;
  /** What the command does, for the one line an API error it let through becomes (exit 1). */
  what: string;
}

/** A command that addresses the lock DaemonSet (named, or found among the chart's). */
export interface ClusterCommand<O> extends CommandPlan<O> {
  cluster: (options: O) => ClusterOptions;
  run: (options: O, io: CommandIo, ref: DaemonSetRef) => Promise<number>;
}

/** A command that only connects. */
export interface ConnectedCommand<O> extends CommandPlan<O> {
  target: (options: O) => KubeTarget;
  run: (options: O, io: CommandIo) => Promise<number>;
}

/**
 * The one way an operator command runs: its options (a usage error: one line, exit 2), the
 * connection (none configured, or a kubeconfig that cannot be loaded: one line, exit 1), the lock
 * DaemonSet for a ClusterCommand (several candidates: one line, exit 2), then the command, whose
 * status ends the process; an API error it lets through is one line naming what it did, exit 1.
 */
export async function runCommand<O>(
  deps: CommandDeps,
  plan: ClusterCommand<O> | ConnectedCommand<O>,
): Promise<void> {
  const options = usage(deps, plan.options);
  if (options === undefined) return;
  const target = 'cluster' in plan ? plan.cluster(options) : plan.target(options);
  const io = commandIo(deps, target);
  if (io === undefined) return;
  let code: number;
  try {
    if ('cluster' in plan) {
      const ref = await resolveDaemonSet(deps, io, target as ClusterOptions);
      if (ref === undefined) return;
      code = await plan.run(options, io, ref);
    } else code = await plan.run(options, io);
  } catch (err: unknown) {
    if (isUsageError(err)) {
      usageFailed(deps, err);
      return;
    }
    deps.err(describeApiError(err, plan.what));
    code = EXIT_FAILURE;
  }
  deps.exit(code);
}

/** What the program may touch. */
export interface CliIo {
  env: Env;
  /** Writes text to stdout as is (no newline added). */
  stdout(text: string): void;
  /** Writes text to stderr as is. */
  stderr(text: string): void;
  now(): Date;
  version: string;
  createLogger(format: LogFormat): Logger;
}

function optionFor(flag: FlagSpec, shown: string): Option {
  const repeat = flag.repeatable ? ', repeatable' : '';
  const option = new Option(
    `--${flag.name} ${flag.valueName}`,
    `${flag.description} (default: ${shown}; env ${flag.env}${repeat})`,
  );
  // Values stay raw strings here: parseConfig applies precedence and parses them, so env values
  // and command-line values get the same checks and the same error messages.
  option.argParser((value: string, previous: unknown): string[] =>
    flag.repeatable && Array.isArray(previous) ? [...(previous as string[]), value] : [value],
  );
  return option;
}

/**
 * Adds these agent flags to a command, as raw strings, with the meaning, default and variable the
 * flag table gives them: read them back with optionValues and parse them with parseConfig or
 * parseFlags, so that precedence, parsing, errors and defaults are the agent's.
 */
export function addFlags(
  command: Command,
  flags: readonly FlagSpec[],
  /** What the help shows as a flag's default where a command's differs from the agent's. */
  shown: Readonly<Record<string, string>> = {},
): Command {
  for (const flag of flags) command.addOption(optionFor(flag, shown[flag.name] ?? shownDefault(flag)));
  return command;
}

/** The flag table's entries for these names (for operator commands that share a few agent flags). */
export function agentFlags(...names: string[]): FlagSpec[] {
  return FLAGS.filter((f) => names.includes(f.name));
}
