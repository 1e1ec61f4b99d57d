// `kured-ts resume`: lifts the fleet pause set by `kured-ts pause`.
import type { Command } from 'commander';
import {
  addClusterOptions,
  clusterOptions,
  commandSignal,
  describeApiError,
  EXIT_FAILURE,
  EXIT_OK,
  FLEET_PAUSE_ANNOTATION,
  readDaemonSet,
  readFleetPause,
  type ClusterFlags,
  type CommandDeps,
  type CommandIo,
  type DaemonSetRef,
  runCommand,
} from './shared.js';

export type ResumeOptions = DaemonSetRef;

/** Removes the pause annotation (merge patch: null deletes that key only). Resuming a running fleet is fine. */
export async function runResume(options: ResumeOptions, io: CommandIo): Promise<number> {
  const err = io.err ?? io.out;
  const signal = commandSignal(io.timeoutMs);
  const ref = `${options.dsNamespace}/${options.dsName}`;
  try {
    const before = readFleetPause(await readDaemonSet(io.kube, options, signal));
    if (!before) {
      io.out('fleet is not paused: nothing to do');
      return EXIT_OK;
    }
    await io.kube.mergePatchDaemonSet(
      options.dsNamespace,
      options.dsName,
      { metadata: { annotations: { [FLEET_PAUSE_ANNOTATION]: null } } },
      signal,
    );
    io.out(
      `fleet resumed (was paused by ${before.by || 'unknown'} since ${before.since || 'unknown'}: ${before.reason})`,
    );
    return EXIT_OK;
  } catch (e: unknown) {
    err(describeApiError(e, `resume the fleet (DaemonSet ${ref})`));
    return EXIT_FAILURE;
  }
}

/** Adds `resume` to the program. */
export function registerResume(program: Command, deps: CommandDeps): Command {
  const cmd = program.command('resume').description('lift the fleet-wide pause');
  addClusterOptions(cmd).action((flags: ClusterFlags) =>
    runCommand(deps, {
      what: 'resume the fleet',
      options: () => clusterOptions({ ...flags }, deps.env),
      cluster: (options) => options,
      run: (_options, io, ref) => runResume(ref, io),
    }),
  );
  return cmd;
}
