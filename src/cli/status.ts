// `kured-ts status`: why is each node (not) rebooting, from what the cluster records.
import type { Command } from 'commander';
import { parseDuration } from '../config/values.js';
import type { V1DaemonSet, V1Node } from '../kube/kube.js';
import { errorText } from '../text/error-text.js';
import {
  EXIT_FAILURE,
  EXIT_OK,
  EXIT_USAGE,
  addClusterOptions,
  clusterOptions,
  commandIo,
  commandSignal,
  describeApiError,
  nonEmpty,
  readDaemonSet,
  readFleetPause,
  type ClusterFlags,
  type CommandDeps,
  type CommandIo,
  type DaemonSetRef,
  type FleetPause,
} from './shared.js';
import {
  entriesOf,
  isExpired,
  LockFormatError,
  parseLockAnnotation,
  type LockEntry,
} from '../lock/kured-lock-format.js';
import {
  NODE_PAUSE_ANNOTATION,
  KURED_IN_PROGRESS_ANNOTATION,
  KURED_REBOOT_NEEDED_ANNOTATION,
} from '../node/node.js';
import { STATUS_ANNOTATION, WANTS_REBOOT, parseStatus, type NodeStatus, type Phase } from '../node/status.js';

// ---- status ---------------------------------------------------------------------------------------

export interface StatusOptions extends DaemonSetRef {
  /** --lock-annotation. Default weave.works/kured-node-lock. */
  lockAnnotation: string;
  /** --lock-ttl in ms (entries without their own TTL expire after it); 0 = never. */
  lockTtlMs: number;
  /** `table` (default) or `json`. */
  output: 'table' | 'json';
}

/** One node's row, as `-o json` prints it. */
export interface NodeReport {
  node: string;
  /** true/false from the status annotation (or kured's in-progress annotation); null = unknown. */
  rebootRequired: boolean | null;
  phase: Phase | null;
  reason: string;
  /** RFC 3339 start of the phase. */
  since: string | null;
  bootID: string;
  /** Does this node hold a lock slot? */
  lock: { held: boolean; since: string | null; expired: boolean };
  /** RFC 3339 time of the last completed reboot, when the cluster records it. */
  lastReboot: string | null;
  /** Per-node opt-out (`kured-ts.dev/reboot-paused=true`). */
  paused: boolean;
  unschedulable: boolean;
  /** kured's --annotate-nodes annotations, when present. */
  kured: { rebootInProgress: string | null; mostRecentRebootNeeded: string | null };
}

/** The whole answer of `status -o json`. */
export interface StatusReport {
  daemonSet: string;
  pause: FleetPause | null;
  lock: {
    /** Nodes holding slots (expired ones included, marked in the node rows). */
    holders: string[];
    /** Slots (1 for kured's single form). */
    maxOwners: number;
    /** Set when the annotation cannot be parsed (agents treat it as held). */
    error: string | null;
  };
  nodes: NodeReport[];
}

interface LockView {
  entries: LockEntry[];
  maxOwners: number;
  error: string | null;
}

function readLock(ds: V1DaemonSet, annotation: string): LockView {
  const raw = ds.metadata?.annotations?.[annotation];
  if (raw === undefined || raw === '') return { entries: [], maxOwners: 1, error: null };
  try {
    const value = parseLockAnnotation(raw);
    return {
      entries: entriesOf(value),
      maxOwners: value.form === 'single' ? 1 : value.maxOwners,
      error: null,
    };
  } catch (err: unknown) {
    const message = err instanceof LockFormatError ? err.message : String(err);
    return { entries: [], maxOwners: 1, error: `unreadable lock annotation: ${message}` };
  }
}

function rebootRequired(phase: Phase | undefined, kuredInProgress: string | undefined): boolean | null {
  if (phase !== undefined) return WANTS_REBOOT.has(phase);
  return kuredInProgress !== undefined ? true : null;
}

function lastRebootOf(status: Partial<NodeStatus> | undefined): string | null {
  if (status?.lastReboot !== undefined && status.lastReboot !== '') return status.lastReboot;
  return status?.phase === 'completed' && status.since ? status.since : null;
}

function lockOf(entry: LockEntry | undefined, ttlMs: number, nowMs: number): NodeReport['lock'] {
  if (entry === undefined) return { held: false, since: null, expired: false };
  return {
    held: true,
    since: entry.created !== '' ? entry.created : null,
    expired: isExpired(entry, ttlMs, nowMs),
  };
}

function statusFields(
  status: Partial<NodeStatus> | undefined,
): Pick<NodeReport, 'phase' | 'reason' | 'since'> {
  return {
    phase: status?.phase ?? null,
    reason: status?.reason ?? '',
    since: status?.since ? status.since : null,
  };
}

function nodeReport(node: V1Node, lock: LockView, ttlMs: number, nowMs: number): NodeReport {
  const name = node.metadata?.name ?? '';
  const annotations = node.metadata?.annotations ?? {};
  const status = parseStatus(annotations[STATUS_ANNOTATION]);
  return {
    node: name,
    rebootRequired: rebootRequired(status?.phase, annotations[KURED_IN_PROGRESS_ANNOTATION]),
    ...statusFields(status),
    bootID: node.status?.nodeInfo?.bootID ?? '',
    lock: lockOf(
      lock.entries.find((e) => e.nodeID === name),
      ttlMs,
      nowMs,
    ),
    lastReboot: lastRebootOf(status),
    paused: annotations[NODE_PAUSE_ANNOTATION] === 'true',
    unschedulable: node.spec?.unschedulable === true,
    kured: kuredAnnotations(annotations),
  };
}

function kuredAnnotations(annotations: Record<string, string>): NodeReport['kured'] {
  return {
    rebootInProgress: annotations[KURED_IN_PROGRESS_ANNOTATION] ?? null,
    mostRecentRebootNeeded: annotations[KURED_REBOOT_NEEDED_ANNOTATION] ?? null,
  };
}

/** Reads the nodes and the DaemonSet (two GETs, nothing written) into a StatusReport. */
export async function collectStatus(
  options: Omit<StatusOptions, 'output'>,
  io: Pick<CommandIo, 'kube' | 'clock'>,
  signal?: AbortSignal,
): Promise<StatusReport> {
  const ds = await readDaemonSet(io.kube, options, signal);
  const nodes = await io.kube.listNodes({}, signal);
  const lock = readLock(ds, options.lockAnnotation);
  const nowMs = io.clock.now().getTime();
  const rows = nodes
    .map((n) => nodeReport(n, lock, options.lockTtlMs, nowMs))
    .sort((a, b) => a.node.localeCompare(b.node));
  return {
    daemonSet: `${options.dsNamespace}/${options.dsName}`,
    pause: readFleetPause(ds) ?? null,
    lock: { holders: lock.entries.map((e) => e.nodeID), maxOwners: lock.maxOwners, error: lock.error },
    nodes: rows,
  };
}

const yesNo = (value: boolean | null): string => (value === null ? '?' : value ? 'yes' : 'no');

function lockCell(row: NodeReport): string {
  if (!row.lock.held) return '-';
  return row.lock.expired ? 'held (expired)' : 'held';
}

function reasonCell(row: NodeReport): string {
  const parts: string[] = [];
  if (row.paused) parts.push('[node paused]');
  if (row.phase === null && row.kured.rebootInProgress !== null) {
    parts.push(`kured reboot in progress since ${row.kured.rebootInProgress}`);
  }
  if (row.reason !== '') parts.push(row.reason);
  return parts.length > 0 ? parts.join(' ') : '-';
}

/** Left-aligned columns separated by three spaces, as kubectl prints. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('   ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

/** Longer reasons are cut in the table (`-o json` has them whole). */
const REASON_WIDTH = 60;

function truncate(value: string, width: number): string {
  return value.length <= width ? value : value.slice(0, width - 1) + '…';
}

/** The human form of a report: header lines for the fleet, then one row per node. */
export function formatStatus(report: StatusReport): string[] {
  const lines: string[] = [];
  if (report.pause) {
    const by = report.pause.by !== '' ? ` by ${report.pause.by}` : '';
    const since = report.pause.since !== '' ? ` since ${report.pause.since}` : '';
    lines.push(`Fleet PAUSED${by}${since}: ${report.pause.reason}`);
  }
  if (report.lock.error !== null) lines.push(`Lock: ${report.lock.error} (agents treat it as held)`);
  const known = new Set(report.nodes.map((n) => n.node));
  const strangers = report.lock.holders.filter((h) => !known.has(h));
  if (strangers.length > 0) lines.push(`Lock also held by: ${strangers.join(', ')} (not a node)`);
  const rows = report.nodes.map((r) => [
    r.node,
    yesNo(r.rebootRequired),
    r.phase ?? '-',
    truncate(reasonCell(r), REASON_WIDTH),
    lockCell(r),
    r.lastReboot ?? '-',
  ]);
  lines.push(...formatTable(['NODE', 'REBOOT', 'PHASE', 'REASON', 'LOCK', 'LAST REBOOT'], rows));
  return lines;
}

/** `kured-ts status`: prints the table (or JSON); 0, or 1 with one line when the cluster cannot be read. */
export async function runStatus(options: StatusOptions, io: CommandIo): Promise<number> {
  const err = io.err ?? io.out;
  let report: StatusReport;
  try {
    report = await collectStatus(options, io, commandSignal(io.timeoutMs));
  } catch (e: unknown) {
    err(describeApiError(e, 'read node status'));
    return EXIT_FAILURE;
  }
  if (options.output === 'json') io.out(JSON.stringify(report, null, 2));
  else for (const line of formatStatus(report)) io.out(line);
  return EXIT_OK;
}

/** Adds `status` to the program. */
export function registerStatus(program: Command, deps: CommandDeps): Command {
  const cmd = program
    .command('status')
    .description(
      'show, per node, whether a reboot is required, its phase and reason, the lock and the last reboot',
    );
  addClusterOptions(cmd)
    .option('--lock-annotation <key>', 'lock annotation key (env KURED_LOCK_ANNOTATION)')
    .option('--lock-ttl <duration>', 'lock TTL, to mark expired slots (env KURED_LOCK_TTL)')
    .option('-o, --output <format>', 'table or json', 'table')
    .action(async (flags: ClusterFlags & { lockAnnotation?: string; lockTtl?: string; output: string }) => {
      if (flags.output !== 'table' && flags.output !== 'json') {
        deps.err(`invalid value for -o/--output: ${flags.output} (table or json)`);
        deps.exit(EXIT_USAGE);
        return;
      }
      const cluster = clusterOptions(flags, deps.env);
      const io = commandIo(deps, cluster.kubeconfig);
      if (!io) return;
      const lockAnnotation =
        flags.lockAnnotation ?? nonEmpty(deps.env.KURED_LOCK_ANNOTATION) ?? 'weave.works/kured-node-lock';
      let lockTtlMs: number;
      try {
        lockTtlMs = parseDuration(flags.lockTtl ?? nonEmpty(deps.env.KURED_LOCK_TTL) ?? '0');
      } catch (e: unknown) {
        deps.err(`invalid value for --lock-ttl: ${errorText(e)}`);
        deps.exit(EXIT_USAGE);
        return;
      }
      deps.exit(await runStatus({ ...cluster, lockAnnotation, lockTtlMs, output: flags.output }, io));
    });
  return cmd;
}
