// The process-facing body of both entry points (src/cli/cli.ts, src/cli/kubectl-plugin.ts): the only
// code that reads process.env, process.argv and the standard streams, all through one Host, so that
// tests run the very program in-process with a host of their own. The entries decide the exit.
import { existsSync } from 'node:fs';
import { missingKubeconfig } from '../kube/default-config.js';
import { EXIT_FAILURE, type CommandDeps } from './shared.js';
import { createLogger } from '../log/logger.js';
import { runCli, type AgentRunner, type CliIo, type CommandRegistrar, type LazyCommand } from './program.js';
import packageJson from '../../package.json' with { type: 'json' };

// The agent and every subcommand are imported when they run, not at start: the bundle then
// evaluates only what the chosen command needs (the agent never loads the simulator).

/** The process as the program sees it: this process (processHost), or a test's. */
export interface Host {
  /** The arguments after node and the script. */
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
  stdout: { write(text: string): unknown; readonly isTTY?: boolean; readonly columns?: number };
  stderr: { write(text: string): unknown };
  stdin: AsyncIterable<unknown> | Iterable<unknown>;
  /** Calls `handler` at the next SIGTERM and the next SIGINT. */
  onSignals(handler: (signal: NodeJS.Signals) => void): void;
  /** Ends the process at once with `code`. */
  exit(code: number): void;
}

/** This process. */
function processHost(): Host {
  return {
    argv: process.argv.slice(2),
    env: process.env,
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    onSignals: (handler) => {
      process.once('SIGTERM', handler);
      process.once('SIGINT', handler);
    },
    exit: (code) => process.exit(code),
  };
}

function cliIo(host: Host): CliIo {
  return {
    env: host.env,
    stdout: (text) => host.stdout.write(text),
    stderr: (text) => host.stderr.write(text),
    now: () => new Date(),
    version: packageJson.version,
    createLogger: (format) => createLogger(format),
  };
}

/** The daemon: SIGTERM/SIGINT abort its signal, it finishes or abandons its step safely and exits 0. */
function agentRunner(host: Host): AgentRunner {
  return (config, _io, log) => {
    const missing = config.kubeconfig === '' ? missingKubeconfig(host.env, existsSync) : undefined;
    if (missing !== undefined) {
      log.error('cannot start', { error: missing });
      return Promise.resolve(EXIT_FAILURE);
    }
    const controller = new AbortController();
    host.onSignals((signal) => {
      log.info('stopping', { signal });
      controller.abort(new Error(`received ${signal}`));
    });
    return import('../agent/run.js').then(({ runAgent }) =>
      runAgent(config, log, { signal: controller.signal, version: packageJson.version }),
    );
  };
}

/**
 * What the operator commands get: line output, the environment, and where to put their status.
 * Ctrl-C ends a command at once (exit 130), unless it asked to end cleanly (`interrupted`).
 */
function deps(host: Host, exit: (code: number) => void): CommandDeps {
  const interrupt = new AbortController();
  let graceful = false;
  host.onSignals(() => {
    if (graceful) interrupt.abort();
    else host.exit(130);
  });
  return {
    env: host.env,
    out: (line) => host.stdout.write(line + '\n'),
    err: (line) => host.stderr.write(line + '\n'),
    exit,
    isTTY: host.stdout.isTTY,
    stdin: async () => {
      let text = '';
      for await (const chunk of host.stdin) text += String(chunk);
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
function operatorCommand(
  host: Host,
  description: string,
  load: () => Promise<OperatorRegister>,
): LazyCommand {
  return {
    description,
    load: async () => {
      const register = await load();
      return (program, exit) => {
        register(program, deps(host, exit));
      };
    },
  };
}

/** How the program was invoked: as `kured-ts`, or as the kubectl plugin (`kubectl kured-ts`). */
export type Invocation = 'kured-ts' | 'kubectl-plugin';

/** Runs the command line of this process (or of `host`); resolves to the exit status. */
export function main(invocation: Invocation, host: Host = processHost()): Promise<number> {
  return runCli(host.argv, cliIo(host), {
    asKubectlPlugin: invocation === 'kubectl-plugin',
    runAgent: agentRunner(host),
    commands: {
      status: operatorCommand(
        host,
        'per node: reboot required, phase, reason, lock holder, last reboot',
        async () => (await import('./status-command.js')).registerStatus,
      ),
      history: operatorCommand(
        host,
        'the last reboots of each node: result, phase times, kernel and OS image before and after',
        async () => (await import('./history.js')).registerHistory,
      ),
      approve: operatorCommand(
        host,
        'approve the next reboot of nodes waiting under --require-approval',
        async () => (await import('./approve.js')).registerApprove,
      ),
      reboot: operatorCommand(
        host,
        'ask one node to reboot (no sentinel needed), through the lock, the PDBs and the drain; --now past the window and blockers',
        async () => (await import('./reboot.js')).registerReboot,
      ),
      pause: operatorCommand(
        host,
        'pause reboots fleet-wide: agents stop before taking the lock and say so',
        async () => (await import('./pause.js')).registerPause,
      ),
      resume: operatorCommand(
        host,
        'lift the fleet-wide pause',
        async () => (await import('./resume.js')).registerResume,
      ),
      unlock: operatorCommand(
        host,
        "remove lock entries that hold the fleet back: kured's manual lock, entries no node is using, or named nodes'",
        async () => (await import('./unlock.js')).registerUnlock,
      ),
      cleanup: operatorCommand(
        host,
        "after `helm uninstall kured-ts`: take kured-ts's labels and annotations off the nodes and the lock's DaemonSet",
        async () => (await import('./cleanup.js')).registerCleanup,
      ),
      check: operatorCommand(
        host,
        'dry run: the decision the agent on NODE would take now, and why (changes nothing)',
        async () => (await import('./check-command.js')).registerCheck,
      ),
      coordinator: operatorCommand(
        host,
        "keep the lock's queue for the agents (the chart's Deployment): names the next node for each freed slot",
        async () => (await import('./coordinator.js')).registerCoordinator,
      ),
      'migrate-values': operatorCommand(
        host,
        'print kured-ts chart values for a kured chart values file, and what cannot be carried over',
        async () => (await import('./migrate-values.js')).registerMigrateValues,
      ),
      simulate: {
        description: 'run a simulated cluster in this process with real kured-ts agents, then report',
        load: async () => {
          const { registerSimulate } = await import('./simulate-command.js');
          return (program, exit) => {
            registerSimulate(program, {
              stdout: (text) => host.stdout.write(text),
              stderr: (text) => host.stderr.write(text),
              isTTY: host.stdout.isTTY === true,
              columns: host.stdout.columns,
              exit,
            });
          };
        },
      },
    },
  });
}
