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
  type FleetPause,
  runCommand,
} from './shared.js';
import type { V1DaemonSet } from '../kube/kube.js';
import { isWaveHalt } from '../pause/fleet-pause.js';
import { WAVE_RESUMED_ANNOTATION, formatWaveResume, parseWaveResume } from '../node/wave.js';
import { defaultPausedBy } from './pause.js';

export interface ResumeOptions extends DaemonSetRef {
  /** Who resumes (recorded with a halted wave's acknowledged failures). Default user@host. */
  by?: string;
}

/**
 * The annotations a resume writes besides lifting the pause: for a wave halted by its failure budget
 * (a pause by kured-ts), its failed nodes acknowledged, so that they no longer count against the
 * budget and the wave goes on (with those of an earlier resume of the same wave).
 */
function acknowledged(before: FleetPause, ds: V1DaemonSet, by: string, at: Date): Record<string, string> {
  if (!isWaveHalt(before) || before.wave === undefined) return {};
  const earlier = parseWaveResume(ds.metadata?.annotations?.[WAVE_RESUMED_ANNOTATION]);
  const kept = earlier?.wave === before.wave ? earlier.nodes : [];
  const nodes = [...new Set([...kept, ...(before.failed ?? [])])].sort();
  const resume = { wave: before.wave, nodes, by, at: at.toISOString() };
  return { [WAVE_RESUMED_ANNOTATION]: formatWaveResume(resume) };
}

/** What resume says it lifted: the pause, and for a halted wave that it goes on. */
function resumedLines(before: FleetPause): string[] {
  const lines = [
    `fleet resumed (was paused by ${before.by || 'unknown'} since ${before.since || 'unknown'}: ${before.reason})`,
  ];
  if (isWaveHalt(before))
    lines.push(
      `wave ${before.wave ?? '?'} goes on; its failures so far (${(before.failed ?? []).join(', ')}) no longer count against --max-failures`,
    );
  return lines;
}

/**
 * Removes the pause annotation (merge patch: null deletes that key only; guarded by the DaemonSet's
 * resourceVersion when it acknowledges a halted wave's failures). Resuming a running fleet is fine.
 */
export async function runResume(options: ResumeOptions, io: CommandIo): Promise<number> {
  const err = io.err ?? io.out;
  const signal = commandSignal(io.timeoutMs);
  const ref = `${options.dsNamespace}/${options.dsName}`;
  try {
    const ds = await readDaemonSet(io.kube, options, signal);
    const before = readFleetPause(ds);
    if (!before) {
      io.out('fleet is not paused: nothing to do');
      return EXIT_OK;
    }
    const acks = acknowledged(before, ds, options.by ?? defaultPausedBy(), io.clock.now());
    const guard = Object.keys(acks).length === 0 ? {} : { resourceVersion: ds.metadata?.resourceVersion };
    await io.kube.mergePatchDaemonSet(
      options.dsNamespace,
      options.dsName,
      { metadata: { ...guard, annotations: { [FLEET_PAUSE_ANNOTATION]: null, ...acks } } },
      signal,
    );
    for (const line of resumedLines(before)) io.out(line);
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
