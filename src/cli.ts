// The entry point: the only place that reads process.env and decides the process's exit status.
import { runAgent } from './agent/run.js';
import { registerCheck } from './commands/check.js';
import { registerPause } from './commands/pause.js';
import { registerResume } from './commands/resume.js';
import { registerSimulate } from './commands/simulate.js';
import { registerStatus, type CommandDeps } from './commands/status.js';
import { createLogger } from './log/logger.js';
import { runCli, type AgentRunner, type CliIo, type CommandRegistrar } from './program.js';
import packageJson from '../package.json' with { type: 'json' };

const io: CliIo = {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  now: () => new Date(),
  version: packageJson.version,
  createLogger: (format) => createLogger(format),
};

/** The daemon: SIGTERM/SIGINT abort its signal, it finishes or abandons its step safely and exits 0. */
const agent: AgentRunner = (config, _io, log) => {
  const controller = new AbortController();
  const stop = (signal: NodeJS.Signals): void => {
    log.info('stopping', { signal });
    controller.abort(new Error(`received ${signal}`));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return runAgent(config, log, { signal: controller.signal });
};

/** What the operator commands get: line output, the environment, and where to put their status. */
function deps(exit: (code: number) => void): CommandDeps {
  return {
    env: process.env,
    out: (line) => process.stdout.write(line + '\n'),
    err: (line) => process.stderr.write(line + '\n'),
    exit,
  };
}

const operatorCommand =
  (register: (program: Parameters<CommandRegistrar>[0], deps: CommandDeps) => unknown): CommandRegistrar =>
  (program, exit) => {
    register(program, deps(exit));
  };

const code = await runCli(process.argv.slice(2), io, {
  runAgent: agent,
  commands: {
    status: operatorCommand(registerStatus),
    pause: operatorCommand(registerPause),
    resume: operatorCommand(registerResume),
    check: operatorCommand(registerCheck),
    simulate: (program, exit) => {
      registerSimulate(program, {
        stdout: (text) => process.stdout.write(text),
        stderr: (text) => process.stderr.write(text),
        isTTY: process.stdout.isTTY,
        columns: process.stdout.columns,
        exit,
      });
    },
  },
});
// Let buffered output reach the pipes before leaving.
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
