// The command-line program: commander options generated from FLAGS, subcommands, exit codes.
// No process globals here: src/cli/cli.ts passes the environment and the output streams in, and
// turns the returned exit code into the process's fate.
import { Command, CommanderError, Help } from 'commander';
import { UsageError, type Config } from '../config/config.js';
import { withDrainRules } from '../config/drain-rules.js';
import { FLAGS } from '../config/flags.js';
import { optionValues, parseConfigWithWarnings, requireNodeId } from '../config/parse.js';
import type { Logger } from '../log/logger.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, addFlags, readText, type CliIo } from './shared.js';
import { addWindowCommand } from './window.js';
import { errorText } from '../text/error-text.js';

export type { CliIo } from './shared.js';

/** Runs the agent with a valid configuration; resolves to the exit status. */
export type AgentRunner = (config: Config, io: CliIo, log: Logger) => Promise<number>;

/**
 * Adds one subcommand to the program (each src/cli/<name>.ts exports one); its action hands
 * its exit status to `exit` (the process ends with it once the action has finished).
 */
export type CommandRegistrar = (program: Command, exit: (code: number) => void) => void;

/** The commands besides the agent and `window`, each in src/cli/<name>.ts, loaded when it runs. */
const COMMANDS = [
  'status',
  'history',
  'approve',
  'reboot',
  'pause',
  'resume',
  'unlock',
  'cleanup',
  'check',
  'coordinator',
  'simulate',
  'migrate-values',
] as const;
type CommandName = (typeof COMMANDS)[number];

/**
 * A subcommand whose module is loaded only when it runs: `kured-ts --help` and the agent then never
 * evaluate the simulator or the operator commands (memory on every node).
 */
export interface LazyCommand {
  description: string;
  load(): Promise<CommandRegistrar>;
}

export interface ProgramOptions {
  /** The agent, given a valid configuration. */
  runAgent: AgentRunner;
  /** The other commands (tests register fewer), registered at once or loaded when used. */
  commands: Partial<Record<CommandName, CommandRegistrar | LazyCommand>>;
  /**
   * Invoked as `kubectl kured-ts`: named so in help and errors, without the agent (it runs in the
   * DaemonSet); with no command, the help. Default false.
   */
  asKubectlPlugin?: boolean;
}

/** Commander prints suggestions on a second line; our contract is one line per error. */
function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim() + '\n';
}

interface State {
  code: number;
}

/** The bare command line (no flag, no KURED_NODE_ID): the agent, started by hand by mistake. */
const BARE_HINT =
  'kured-ts with no command runs the agent, which the DaemonSet starts on every node; `kured-ts --help` lists the commands';

async function agentAction(command: Command, io: CliIo, run: AgentRunner, state: State): Promise<void> {
  const parsed = parseConfigWithWarnings(optionValues(command.opts(), FLAGS), io.env);
  const warnings = parsed.warnings;
  const config = withDrainRules(parsed.config, readText);
  if (config.nodeId.trim() === '' && Object.keys(command.opts()).length === 0) {
    throw new UsageError('--node-id', '', `required (set --node-id or KURED_NODE_ID); ${BARE_HINT}`);
  }
  requireNodeId(config);
  const log = io.createLogger(config.logFormat);
  for (const warning of warnings) log.warn('configuration warning', { warning });
  state.code = await run(config, io, log);
}

function addAgentCommand(program: Command, io: CliIo, options: ProgramOptions, state: State): void {
  const run = options.runAgent;
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
      const real = configured(new Command(program.name()), io);
      register(real, (code) => {
        state.code = code;
      });
      await real.parseAsync([name, ...args], { from: 'user' });
    });
}

function addCommands(program: Command, io: CliIo, options: ProgramOptions, state: State): void {
  for (const name of COMMANDS) {
    const register = options.commands[name];
    if (register === undefined) continue;
    if (typeof register === 'function') {
      register(program, (code) => {
        state.code = code;
      });
    } else addLazyCommand(program, name, register, { io, state });
  }
}

/** The kubectl plugin's root: the help, or a usage error for a word that is not a command. */
function addPluginRoot(program: Command): void {
  program.action((_opts, command: Command) => {
    const [word] = command.args;
    if (word === 'agent') {
      command.error(
        'error: the agent runs in the kured-ts DaemonSet, not as a kubectl plugin (run it as kured-ts agent)',
        { exitCode: EXIT_USAGE },
      );
    }
    if (word !== undefined) command.error(`error: unknown command '${word}'`, { exitCode: EXIT_USAGE });
    command.help();
  });
}

/**
 * The root's help with its commands before its options: the agent's ~70 flags would otherwise
 * push the commands an operator looks for off the screen. Subcommands keep commander's order.
 */
function commandsFirst(cmd: Command, helper: Help): string {
  const text = Help.prototype.formatHelp.call(helper, cmd, helper);
  if (cmd.parent !== null) return text;
  const options = text.indexOf('\nOptions:\n');
  const commands = text.indexOf('\nCommands:\n');
  if (options < 0 || commands < options) return text;
  return `${text.slice(0, options)}${text.slice(commands).trimEnd()}\n${text.slice(options, commands)}\n`;
}

/** Builds the commander program; `state.code` receives the exit status of the action that ran. */
export function buildProgram(io: CliIo, options: ProgramOptions, state: State): Command {
  const plugin = options.asKubectlPlugin === true;
  const program = configured(new Command(plugin ? 'kubectl kured-ts' : 'kured-ts'), io)
    .description(
      plugin
        ? 'kured-ts operator commands: reboot status and history, dry-run checks, approval, fleet pause and resume, simulation'
        : 'Kubernetes reboot coordination daemon: a TypeScript successor to kured',
    )
    .version(io.version, '-V, --version')
    .configureHelp({ formatHelp: commandsFirst })
    // The root has an action (the agent), so commander would not add `help <command>` by itself.
    .helpCommand(true);
  if (plugin) addPluginRoot(program);
  else addAgentCommand(program, io, options, state);
  addWindowCommand(program, io, (code) => {
    state.code = code;
  });
  addCommands(program, io, options, state);
  // Set last so that subcommands do not inherit it: the root reports stray words itself.
  program.allowExcessArguments();
  return program;
}

/**
 * Runs the command line (`argv` without node and script) and resolves to the exit status:
 * 0 ok, 1 failure, 2 bad usage (one line on stderr naming the flag and the value).
 */
export async function runCli(argv: readonly string[], io: CliIo, options: ProgramOptions): Promise<number> {
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
    io.stderr(oneLine(`error: ${errorText(err)}`));
    return EXIT_FAILURE;
  }
}
