// `kured-ts pause --reason TEXT`: stops the whole fleet before it takes the lock (DESIGN §4).
import { userInfo, hostname } from 'node:os';
import type { Command } from 'commander';
import { formatFleetPause } from '../pause/fleet-pause.js';
import {
  addClusterOptions,
  clusterOptions,
  commandSignal,
  describeApiError,
  EXIT_FAILURE,
  EXIT_OK,
  EXIT_USAGE,
  FLEET_PAUSE_ANNOTATION,
  readDaemonSet,
  readFleetPause,
  type ClusterFlags,
  type CommandDeps,
  type CommandIo,
  type DaemonSetRef,
  type FleetPause,
  runCommand,
} from './shared.js';

export interface PauseOptions extends DaemonSetRef {
  /** Why (shown by `status` and in the agents' blocked reason). Required, non-empty. */
  reason: string;
  /** Who paused. Default (CLI) user@host. */
  by: string;
}

/**
 * Writes the pause annotation as a merge patch of that one key (nothing else on the DaemonSet is
 * touched, so it never reverts a concurrent change). Pausing a paused fleet replaces reason, by and since.
 */
export async function runPause(options: PauseOptions, io: CommandIo): Promise<number> {
  const err = io.err ?? io.out;
  const reason = options.reason.trim();
  if (reason === '') {
    err('--reason must not be empty: say why the fleet is paused');
    return EXIT_USAGE;
  }
  const signal = commandSignal(io.timeoutMs);
  const pause: FleetPause = { reason, by: options.by, since: io.clock.now().toISOString() };
  const ref = `${options.dsNamespace}/${options.dsName}`;
  try {
    const before = readFleetPause(await readDaemonSet(io.kube, options, signal));
    await io.kube.mergePatchDaemonSet(
      options.dsNamespace,
      options.dsName,
      { metadata: { annotations: { [FLEET_PAUSE_ANNOTATION]: formatFleetPause(pause) } } },
      signal,
    );
    if (before)
      io.out(
        `fleet was already paused by ${before.by || 'unknown'} since ${before.since || 'unknown'}: ${before.reason}`,
      );
  } catch (e: unknown) {
    err(describeApiError(e, `pause the fleet (DaemonSet ${ref})`));
    return EXIT_FAILURE;
  }
  io.out(`fleet paused by ${pause.by} at ${pause.since}: ${reason}`);
  io.out('agents will not take the lock until `kured-ts resume`; reboots already under way finish');
  return EXIT_OK;
}

/** user@host of whoever runs the command. */
export function defaultPausedBy(): string {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry (e.g. an arbitrary UID in a container): keep 'unknown'
  }
  return `${user}@${hostname()}`;
}

/** Adds `pause` to the program. */
export function registerPause(program: Command, deps: CommandDeps): Command {
  const cmd = program
    .command('pause')
    .description('pause reboots fleet-wide: agents stop before taking the lock and say so');
  addClusterOptions(cmd)
    .requiredOption('--reason <text>', "why the fleet is paused (shown by status and in the agents' reason)")
    .option('--by <name>', 'who pauses (default: user@host)')
    .action((flags: ClusterFlags & { reason: string; by?: string }) =>
      runCommand(deps, {
        what: 'pause the fleet',
        options: () => clusterOptions({ ...flags }, deps.env),
        cluster: (options) => options,
        run: (_options, io, ref) =>
          runPause({ ...ref, reason: flags.reason, by: flags.by ?? defaultPausedBy() }, io),
      }),
    );
  return cmd;
}
