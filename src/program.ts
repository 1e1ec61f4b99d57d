// The command-line program: commander options generated from FLAGS, subcommands, exit codes.
// No process globals here: src/cli.ts passes the environment and the output streams in, and
// turns the returned exit code into the process's fate.
import { Command, CommanderError, Option } from 'commander';
import { redactConfig, UsageError, type Config } from './config.js';
import {
  FLAGS,
  optionValues,
  parseConfigWithWarnings,
  parseWindowConfig,
  requireNodeId,
  shownDefault,
  type Env,
  type FlagSpec,
} from './flags.js';
import type { Logger, LogFormat } from './log/logger.js';
import { createWindow } from './window/index.js';
import { HORIZON_MS } from './window/scan.js';
import { ZoneClock } from './window/zone.js';

/** Exit statuses: 2 = bad usage (nothing was started), 1 = failure or not implemented. */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

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

/** Runs the agent with a valid configuration; resolves to the exit status. */
export type AgentRunner = (config: Config, io: CliIo, log: Logger) => Promise<number>;

/**
 * Adds one subcommand to the program (each src/commands/<name>.ts exports one); its action hands
 * its exit status to `exit` (the process ends with it once the action has finished).
 */
export type CommandRegistrar = (program: Command, exit: (code: number) => void) => void;

/** Subcommands that other modules provide; until they do, an honest stub stands in. */
export const PLUGGABLE_COMMANDS = ['status', 'pause', 'resume', 'check', 'simulate'] as const;
export type PluggableCommand = (typeof PLUGGABLE_COMMANDS)[number];

const STUB_DESCRIPTIONS: Record<PluggableCommand, string> = {
  status: 'table of nodes: reboot required, phase, reason, lock holder, last reboot',
  pause: 'pause reboots fleet-wide (--reason TEXT)',
  resume: 'resume reboots fleet-wide',
  check: 'dry run for one node (--node NAME): the decision the agent would take',
  simulate: 'run a simulated cluster with real agents and report',
};

/**
 * A subcommand whose module is loaded only when it runs: `kured-ts --help` and the agent then never
 * evaluate the simulator or the operator commands (memory on every node).
 */
export interface LazyCommand {
  description: string;
  load(): Promise<CommandRegistrar>;
}

export interface ProgramOptions {
  /** The agent; default: a stub that validates, logs the configuration and fails honestly. */
  runAgent?: AgentRunner;
  /** Real implementations of pluggable subcommands, registered at once or loaded when used. */
  commands?: Partial<Record<PluggableCommand, CommandRegistrar | LazyCommand>>;
}

/** The agent until src/agent/run.ts exists. */
export const stubAgent: AgentRunner = (_config, io) => {
  io.stderr('agent: not implemented yet\n');
  return Promise.resolve(EXIT_FAILURE);
};

/** Commander prints suggestions on a second line; our contract is one line per error. */
function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim() + '\n';
}

function optionFor(flag: FlagSpec): Option {
  const repeat = flag.repeatable ? ', repeatable' : '';
  const option = new Option(
    `--${flag.name} ${flag.valueName}`,
    `${flag.description} (default: ${shownDefault(flag)}; env ${flag.env}${repeat})`,
  );
  // Values stay raw strings here: parseConfig applies precedence and parses them, so env values
  // and command-line values get the same checks and the same error messages.
  option.argParser((value: string, previous: unknown): string[] =>
    flag.repeatable && Array.isArray(previous) ? [...(previous as string[]), value] : [value],
  );
  return option;
}

function addFlags(command: Command, flags: readonly FlagSpec[]): Command {
  for (const flag of flags) command.addOption(optionFor(flag));
  return command;
}

interface State {
  code: number;
}

async function agentAction(command: Command, io: CliIo, run: AgentRunner, state: State): Promise<void> {
  const { config, warnings } = parseConfigWithWarnings(optionValues(command.opts(), FLAGS), io.env);
  requireNodeId(config);
  const log = io.createLogger(config.logFormat);
  for (const warning of warnings) log.warn('configuration warning', { warning });
  log.info('effective configuration', {
    version: io.version,
    window: createWindow(config.window).describe(),
    config: redactConfig(config),
  });
  state.code = await run(config, io, log);
}

/** Parses `--at`: an ISO-8601 instant with an explicit zone, so that it cannot be misread. */
export function parseInstant(text: string): Date {
  const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i;
  const at = new Date(text);
  if (!iso.test(text) || Number.isNaN(at.getTime())) {
    throw new UsageError('--at', text, 'expected an ISO-8601 instant with a zone, e.g. 2026-11-23T09:30:00Z');
  }
  return at;
}

function inWords(ms: number): string {
  const minutes = Math.round(ms / 60_000);
  const d = Math.floor(minutes / 1440);
  const h = Math.floor((minutes % 1440) / 60);
  const m = minutes % 60;
  const parts = [d > 0 ? `${d}d` : '', h > 0 ? `${h}h` : '', `${m}m`].filter((p) => p !== '');
  return ms < 60_000 ? `${Math.round(ms / 1000)}s` : parts.join(' ');
}

/** The lines `kured-ts window` prints. Pure. */
export function describeWindow(windowConfig: Config['window'], at: Date): string[] {
  const window = createWindow(windowConfig);
  const { inside, change } = window.next(at);
  const verb = inside ? 'closes' : 'opens';
  const lines = [inside ? 'inside' : 'outside', `window: ${window.describe()}`];
  if (change === undefined) {
    lines.push(`${verb}: not within ${HORIZON_MS / 86_400_000} days`);
  } else {
    const local = new ZoneClock(windowConfig.timeZone).local(change).text;
    lines.push(
      `${verb}: ${local} ${windowConfig.timeZone} (${change.toISOString()}), in ${inWords(change.getTime() - at.getTime())}`,
    );
  }
  return lines;
}

function windowAction(command: Command, io: CliIo): void {
  const windowFlags = FLAGS.filter((f) => f.window === true);
  const config = parseWindowConfig(optionValues(command.opts(), windowFlags), io.env);
  const atText = command.getOptionValue('at') as string | undefined;
  const at = atText === undefined ? io.now() : parseInstant(atText);
  io.stdout(describeWindow(config, at).join('\n') + '\n');
}

function addAgentCommand(program: Command, io: CliIo, options: ProgramOptions, state: State): void {
  const run = options.runAgent ?? stubAgent;
  addFlags(program, FLAGS).action(async (_opts, command: Command) => {
    // Without a subcommand, the root is the agent; a stray word is a mistyped command.
    const [word] = command.args;
    if (word !== undefined) command.error(`error: unknown command '${word}'`, { exitCode: EXIT_USAGE });
    await agentAction(command, io, run, state);
  });
  addFlags(program.command('agent').description('run the reboot agent (the default command)'), FLAGS).action(
    async (_opts, command: Command) => agentAction(command, io, run, state),
  );
}

function addWindowCommand(program: Command, io: CliIo): void {
  const command = program
    .command('window')
    .description('is a maintenance window open now (or --at), and when does it next open or close')
    .addOption(new Option('--at <instant>', 'ISO-8601 instant to evaluate (default: now)'));
  addFlags(
    command,
    FLAGS.filter((f) => f.window === true),
  ).action((_opts, cmd: Command) => {
    windowAction(cmd, io);
  });
}

/** The program's settings for a command parsed on its own (output, errors, positional options). */
function configured(command: Command, io: CliIo): Command {
  return command
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({
      writeOut: (text) => {
        io.stdout(text);
      },
      writeErr: (text) => {
        io.stderr(text);
      },
      outputError: (text, write) => {
        write(oneLine(text));
      },
    });
}

/**
 * Registers a stand-in that passes everything after its name to the real command, loaded on use.
 * Its help (`kured-ts NAME --help`) is the real command's, since --help is passed through too.
 */
function addLazyCommand(
  program: Command,
  name: string,
  lazy: LazyCommand,
  ctx: { io: CliIo; state: State },
): void {
  const { io, state } = ctx;
  program
    .command(name)
    .description(lazy.description)
    .usage('[options]')
    .helpOption(false)
    .passThroughOptions()
    .allowUnknownOption()
    .allowExcessArguments()
    .action(async (_opts, command: Command) => {
      const args = command.args;
      const register = await lazy.load();
      const real = configured(new Command('kured-ts'), io);
      register(real, (code) => {
        state.code = code;
      });
      await real.parseAsync([name, ...args], { from: 'user' });
    });
}

function addPluggableCommands(program: Command, io: CliIo, options: ProgramOptions, state: State): void {
  for (const name of PLUGGABLE_COMMANDS) {
    const register = options.commands?.[name];
    if (typeof register === 'function') {
      register(program, (code) => {
        state.code = code;
      });
      continue;
    }
    if (register !== undefined) {
      addLazyCommand(program, name, register, { io, state });
      continue;
    }
    program
      .command(name)
      .description(`${STUB_DESCRIPTIONS[name]} (not implemented yet)`)
      .allowUnknownOption()
      .allowExcessArguments()
      .action(() => {
        io.stderr(`${name}: not implemented yet\n`);
        state.code = EXIT_FAILURE;
      });
  }
}

/** Builds the commander program; `state.code` receives the exit status of the action that ran. */
export function buildProgram(io: CliIo, options: ProgramOptions, state: State): Command {
  const program = configured(new Command('kured-ts'), io)
    .description('Kubernetes reboot coordination daemon: a TypeScript successor to kured')
    .version(io.version, '-V, --version')
    // The root has an action (the agent), so commander would not add `help <command>` by itself.
    .helpCommand(true);
  addAgentCommand(program, io, options, state);
  addWindowCommand(program, io);
  addPluggableCommands(program, io, options, state);
  // Set last so that subcommands do not inherit it: the root reports stray words itself.
  program.allowExcessArguments();
  return program;
}

/**
 * Runs the command line (`argv` without node and script) and resolves to the exit status:
 * 0 ok, 1 failure, 2 bad usage (one line on stderr naming the flag and the value).
 */
export async function runCli(
  argv: readonly string[],
  io: CliIo,
  options: ProgramOptions = {},
): Promise<number> {
  const state: State = { code: EXIT_OK };
  const program = buildProgram(io, options, state);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return state.code;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    if (err instanceof UsageError) {
      io.stderr(oneLine(`error: ${err.message}`));
      return EXIT_USAGE;
    }
    io.stderr(oneLine(`error: ${err instanceof Error ? err.message : String(err)}`));
    return EXIT_FAILURE;
  }
}
