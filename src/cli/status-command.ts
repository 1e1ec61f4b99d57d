// `kured-ts status [NODE...] [-w]`: the command, its options, and its human output.
import type { Command } from 'commander';
import { optionValues, parseFlags } from '../config/parse.js';
import { formatHistory, recordRows } from './history.js';
import { formatObject, parseOutput } from './output.js';
import {
  EXIT_FAILURE,
  EXIT_OK,
  addClusterOptions,
  addFlags,
  agentFlags,
  clusterOptions,
  commandSignal,
  describeApiError,
  type ClusterFlags,
  type CommandDeps,
  type CommandIo,
  type KubeTarget,
  runCommand,
} from './shared.js';
import { STATUS_OUTPUTS, collectStatus, type StatusOptions, type StatusReport } from './status.js';
import { formatStatus } from './status-table.js';

/** The table, then (for nodes named on the command line) each one's reboot history. */
function humanStatus(report: StatusReport, options: StatusOptions & { output: 'table' | 'wide' }): string[] {
  const lines = formatStatus(report, options.output);
  for (const row of (options.nodes ?? []).length > 0 ? report.nodes : []) {
    lines.push(
      '',
      `Reboot history of ${row.node}:`,
      ...formatHistory(recordRows(row.node, row.history), options.output),
    );
  }
  return lines;
}

/**
 * `kured-ts status [NODE...]`: prints the table (or JSON); 1 with one line when the cluster cannot be
 * read, or per named node that does not exist.
 */
export async function runStatus(options: StatusOptions, io: CommandIo): Promise<number> {
  const err = io.err ?? io.out;
  let report: StatusReport;
  try {
    report = await collectStatus(options, io, commandSignal(io.timeoutMs));
  } catch (e: unknown) {
    err(describeApiError(e, 'read node status'));
    return EXIT_FAILURE;
  }
  const found = new Set(report.nodes.map((n) => n.node));
  const missing = (options.nodes ?? []).filter((n) => !found.has(n));
  for (const name of missing) err(`node ${name} not found`);
  const output = options.output;
  if (output === 'json' || output === 'yaml') io.out(formatObject(report, output));
  else for (const line of humanStatus(report, { ...options, output })) io.out(line);
  return missing.length > 0 ? EXIT_FAILURE : EXIT_OK;
}

interface StatusFlags extends ClusterFlags {
  /** --lock-annotation and --lock-ttl, raw (addFlags). */
  lockAnnotation?: string[];
  lockTtl?: string[];
  output: string;
  watch?: boolean;
}

/** The flags, then KURED_* environment, then defaults; UsageError or OutputFormatError when bad. */
function statusOptions(
  nodes: readonly string[],
  flags: StatusFlags,
  env: CommandDeps['env'],
): StatusOptions & KubeTarget {
  const output = parseOutput(flags.output, STATUS_OUTPUTS);
  const cluster = clusterOptions({ ...flags }, env);
  const { lockAnnotation, lockTtlMs } = parseFlags(
    LOCK_FLAGS.map((f) => f.name),
    optionValues({ ...flags }, LOCK_FLAGS),
    env,
  );
  return { ...cluster, lockAnnotation, lockTtlMs, output, nodes };
}

/** The agent flags status shares: which lock to read, and when its slots count as expired. */
const LOCK_FLAGS = agentFlags('lock-annotation', 'lock-ttl');

/** Adds `status` to the program. */
export function registerStatus(program: Command, deps: CommandDeps): Command {
  const cmd = program
    .command('status')
    .argument('[node...]', 'only these nodes, with their reboot history (default: all)')
    .description(
      'show, per node, whether a reboot is required, its phase and reason, the lock and the last reboot',
    );
  addFlags(addClusterOptions(cmd), LOCK_FLAGS)
    .option('-o, --output <format>', 'table, wide, json or yaml', 'table')
    .option('-w, --watch', 'after the first listing, print what changes as it changes (until Ctrl-C)')
    .action((nodes: string[], flags: StatusFlags) =>
      runCommand(deps, {
        what: 'read node status',
        options: () => statusOptions(nodes, flags, deps.env),
        cluster: (options) => options,
        run: async (options, io, ref) => {
          const found = { ...options, ...ref };
          if (flags.watch !== true) return runStatus(found, io);
          const { watchStatus } = await import('./status-watch.js');
          const signal = deps.interrupted?.();
          return watchStatus(found, { ...io, isTTY: deps.isTTY ?? false, signal });
        },
      }),
    );
  return cmd;
}
