// The process-facing body of both entry points (src/cli/cli.ts, src/cli/kubectl-plugin.ts): the only
// code that reads process.env, process.argv and the standard streams. The entries decide the exit.
import { existsSync } from 'node:fs';
import { missingKubeconfig } from '../kube/default-config.js';
import { EXIT_FAILURE, type CommandDeps } from './shared.js';
import { createLogger } from '../log/logger.js';
import { runCli, type AgentRunner, type CliIo, type CommandRegistrar, type LazyCommand } from './program.js';
import packageJson from '../../package.json' with { type: 'json' };

// The agent and every subcommand are imported when they run, not at start: the bundle then
// evaluates only what the chosen command needs (the agent never loads the simulator).

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
  const missing = config.kubeconfig === '' ? missingKubeconfig(process.env, existsSync) : undefined;
  if (missing !== undefined) {
    log.error('cannot start', { error: missing });
    return Promise.resolve(EXIT_FAILURE);
  }
  const controller = new AbortController();
  const stop = (signal: NodeJS.Signals): void => {
    log.info('stopping', { signal });
    controller.abort(new Error(`received ${signal}`));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return import('../agent/run.js').then(({ runAgent }) =>
    runAgent(config, log, { signal: controller.signal, version: io.version }),
  );
};

/**
 * What the operator commands get: line output, the environment, and where to put their status.
 * Ctrl-C ends a command at once (exit 130), unless it asked to end cleanly (`interrupted`).
 */
function deps(exit: (code: number) => void): CommandDeps {
  const interrupt = new AbortController();
  let graceful = false;
  const onSignal = (): void => {
    if (graceful) interrupt.abort();
    else process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return {
    env: process.env,
    out: (line) => process.stdout.write(line + '\n'),
    err: (line) => process.stderr.write(line + '\n'),
    exit,
    isTTY: process.stdout.isTTY,
    stdin: async () => {
      let text = '';
      for await (const chunk of process.stdin) text += String(chunk);
      return text;
    },
    interrupted: () => {
      graceful = true;
      return interrupt.signal;
    },
  };
}

type OperatorRegister = (program: Parameters<CommandRegistrar>[0], deps: CommandDeps) => unknown;

/** An operator command whose module loads when it runs. */
function operatorCommand(description: string, load: () => Promise<OperatorRegister>): LazyCommand {
  return {
    description,
    load: async () => {
      const register = await load();
      return (program, exit) => {
        register(program, deps(exit));
      };
    },
  };
}

/** How the program was invoked: as `kured-ts`, or as the kubectl plugin (`kubectl kured-ts`). */
export type Invocation = 'kured-ts' | 'kubectl-plugin';

/** Runs the command line of this process; resolves to the exit status. */
export function main(invocation: Invocation): Promise<number> {
  return runCli(process.argv.slice(2), io, {
    asKubectlPlugin: invocation === 'kubectl-plugin',
    runAgent: agent,
    commands: {
      status: operatorCommand(
        'per node: reboot required, phase, reason, lock holder, last reboot',
        async () => (await import('./status-command.js')).registerStatus,
      ),
      history: operatorCommand(
        'the last reboots of each node: result, phase times, kernel and OS image before and after',
        async () => (await import('./history.js')).registerHistory,
      ),
      approve: operatorCommand(
        'approve the next reboot of nodes waiting under --require-approval',
        async () => (await import('./approve.js')).registerApprove,
      ),
      reboot: operatorCommand(
        'ask one node to reboot (no sentinel needed), through the lock, the PDBs and the drain; --now past the window and blockers',
        async () => (await import('./reboot.js')).registerReboot,
      ),
      pause: operatorCommand(
        'pause reboots fleet-wide: agents stop before taking the lock and say so',
        async () => (await import('./pause.js')).registerPause,
      ),
      resume: operatorCommand(
        'lift the fleet-wide pause',
        async () => (await import('./resume.js')).registerResume,
      ),
      unlock: operatorCommand(
        "remove lock entries that hold the fleet back: kured's manual lock, entries no node is using, or named nodes'",
        async () => (await import('./unlock.js')).registerUnlock,
      ),
      check: operatorCommand(
        'dry run: the decision the agent on NODE would take now, and why (changes nothing)',
        async () => (await import('./check-command.js')).registerCheck,
      ),
      coordinator: operatorCommand(
        "keep the lock's queue for the agents (the chart's Deployment): names the next node for each freed slot",
        async () => (await import('./coordinator.js')).registerCoordinator,
      ),
      'migrate-values': operatorCommand(
        'print kured-ts chart values for a kured chart values file, and what cannot be carried over',
        async () => (await import('./migrate-values.js')).registerMigrateValues,
      ),
      simulate: {
        description: 'run a simulated cluster in this process with real kured-ts agents, then report',
        load: async () => {
          const { registerSimulate } = await import('./simulate-command.js');
          return (program, exit) => {
            registerSimulate(program, {
              stdout: (text) => process.stdout.write(text),
              stderr: (text) => process.stderr.write(text),
              isTTY: process.stdout.isTTY,
              columns: process.stdout.columns,
              exit,
            });
          };
        },
      },
    },
  });
}
