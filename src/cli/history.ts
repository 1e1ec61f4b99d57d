// `kured-ts history [NODE...]`: the reboot history each node's agent keeps (src/node/history.ts):
// when each phase happened, how it ended, and whether the boot, the kernel and the OS image changed.
import type { Command } from 'commander';
import { isNotFound } from '../kube/errors.js';
import type { V1Node } from '../kube/kube.js';
import { HISTORY_ANNOTATION, parseHistory, phaseDurations, type HistoryRecord } from '../node/history.js';
import { shortDuration } from '../text/duration.js';
import { formatObject, parseOutput } from './output.js';
import {
  addConnectionOptions,
  commandSignal,
  connectionTarget,
  type ConnectionFlags,
  describeApiError,
  EXIT_FAILURE,
  EXIT_OK,
  type CommandDeps,
  type CommandIo,
  runCommand,
} from './shared.js';
import { formatTable } from './table.js';

export const HISTORY_OUTPUTS = ['table', 'wide', 'json', 'yaml'] as const;
export type HistoryOutput = (typeof HISTORY_OUTPUTS)[number];

/** One record as `-o json` prints it: the node, the record, and its phase durations in seconds. */
export interface HistoryRow extends HistoryRecord {
  node: string;
  durationsSeconds: ReturnType<typeof phaseDurations>;
}

/** One node's records as rows. */
export function recordRows(node: string, records: readonly HistoryRecord[]): HistoryRow[] {
  return records.map((r) => ({ node, ...r, durationsSeconds: phaseDurations(r) }));
}

/** The records of these nodes, by node name then oldest first. */
export function historyRows(nodes: readonly V1Node[]): HistoryRow[] {
  return [...nodes]
    .sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''))
    .flatMap((n) =>
      recordRows(n.metadata?.name ?? '', parseHistory(n.metadata?.annotations?.[HISTORY_ANNOTATION])),
    );
}

/** `a → b`, or `a` when it did not change, or `-` when neither is known. */
function change(before: string, after: string): string {
  if (before === '' && after === '') return '-';
  if (before === after) return `${before} (same)`;
  return `${before || '?'} → ${after || '?'}`;
}

function seconds(value: number | undefined): string {
  return value === undefined ? '-' : shortDuration(value * 1000);
}

const HEADER = ['NODE', 'RESULT', 'ENDED', 'WAIT', 'DRAIN', 'DOWN', 'READY', 'KERNEL'];
const WIDE_HEADER = [...HEADER, 'OS IMAGE', 'BOOT ID', 'REQUIRED', 'LOCKED'];

function cells(r: HistoryRow, wide: boolean): string[] {
  const d = r.durationsSeconds;
  const row = [
    r.node,
    r.result,
    r.endedAt || '-',
    seconds(d.wait),
    seconds(d.drain),
    seconds(d.reboot),
    seconds(d.ready),
    change(r.kernelBefore, r.kernelAfter),
  ];
  if (!wide) return row;
  return [
    ...row,
    change(r.osImageBefore, r.osImageAfter),
    change(r.bootIDBefore, r.bootIDAfter),
    r.requiredAt ?? '-',
    r.lockedAt || '-',
  ];
}

/** The table (or wide) form: one row per record. */
export function formatHistory(rows: readonly HistoryRow[], output: 'table' | 'wide' = 'table'): string[] {
  if (rows.length === 0) return ['no reboot recorded (agents keep the last --history-limit cycles per node)'];
  const wide = output === 'wide';
  return formatTable(
    wide ? WIDE_HEADER : HEADER,
    rows.map((r) => cells(r, wide)),
  );
}

/** The named nodes (each GET; a missing one is an error line), or every node (one list). */
async function readNodes(
  io: CommandIo,
  names: readonly string[],
  signal: AbortSignal,
): Promise<{ nodes: V1Node[]; missing: string[] }> {
  if (names.length === 0) return { nodes: await io.kube.listNodes({}, signal), missing: [] };
  const nodes: V1Node[] = [];
  const missing: string[] = [];
  for (const name of names) {
    try {
      nodes.push(await io.kube.getNode(name, signal));
    } catch (e: unknown) {
      if (!isNotFound(e)) throw e;
      missing.push(name);
    }
  }
  return { nodes, missing };
}

export interface HistoryOptions {
  nodes: readonly string[];
  output: HistoryOutput;
}

/** Prints the history; 1 with one line per node that does not exist, or when the cluster cannot be read. */
export async function runHistory(options: HistoryOptions, io: CommandIo): Promise<number> {
  const err = io.err ?? io.out;
  let read: { nodes: V1Node[]; missing: string[] };
  try {
    read = await readNodes(io, options.nodes, commandSignal(io.timeoutMs));
  } catch (e: unknown) {
    err(describeApiError(e, 'read nodes'));
    return EXIT_FAILURE;
  }
  for (const name of read.missing) err(`node ${name} not found`);
  const rows = historyRows(read.nodes);
  if (options.output === 'json' || options.output === 'yaml') {
    io.out(formatObject({ records: rows }, options.output));
  } else for (const line of formatHistory(rows, options.output)) io.out(line);
  return read.missing.length > 0 ? EXIT_FAILURE : EXIT_OK;
}

interface HistoryFlags extends ConnectionFlags {
  output: string;
}

/** Adds `history` to the program. */
export function registerHistory(program: Command, deps: CommandDeps): Command {
  const cmd = program
    .command('history')
    .argument('[node...]', 'the nodes (default: all)')
    .description('the last reboots of each node: result, phase times, kernel and OS image before and after');
  addConnectionOptions(cmd)
    .option('-o, --output <format>', 'table, wide, json or yaml', 'table')
    .action((nodes: string[], flags: HistoryFlags) =>
      runCommand(deps, {
        what: 'read the reboot history',
        options: () => parseOutput(flags.output, HISTORY_OUTPUTS),
        target: () => connectionTarget({ ...flags }, deps.env),
        run: (output: HistoryOptions['output'], io: CommandIo) => runHistory({ nodes, output }, io),
      }),
    );
  return cmd;
}
