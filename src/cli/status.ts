// `kured-ts status`: why is each node (not) rebooting, from what the cluster records.
import type { Command } from 'commander';
import { parseDuration } from '../config/values.js';
import type { V1DaemonSet, V1Node } from '../kube/kube.js';
import { errorText } from '../text/error-text.js';
import { UsageError } from '../config/config.js';
import { formatObject, parseOutput } from './output.js';
import { formatTable } from './table.js';
import { formatHistory, recordRows } from './history.js';
import { APPROVAL_ANNOTATION, parseApproval, type Approval } from '../node/approval.js';
import { HISTORY_ANNOTATION, parseHistory, type HistoryRecord } from '../node/history.js';
import {
  EXIT_FAILURE,
  EXIT_OK,
  addClusterOptions,
  clusterOptions,
  resolveDaemonSet,
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
  type KubeTarget,
  usage,
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
import {
  STATUS_ANNOTATION,
  WANTS_REBOOT,
  isOverdue,
  parseStatus,
  type NodeStatus,
  type Phase,
} from '../node/status.js';
import { shortDuration } from '../text/duration.js';

// ---- status ---------------------------------------------------------------------------------------

export interface StatusOptions extends DaemonSetRef {
  /** --lock-annotation. Default weave.works/kured-node-lock. */
  lockAnnotation: string;
  /** --lock-ttl in ms (entries without their own TTL expire after it); 0 = never. */
  lockTtlMs: number;
  /** `table` (default), `wide`, `json` or `yaml`. */
  output: StatusOutput;
  /** Only these nodes (and, in the table, their reboot history); empty = every node. */
  nodes?: readonly string[];
}

/** The -o values `status` accepts. */
export const STATUS_OUTPUTS = ['table', 'wide', 'json', 'yaml'] as const;
export type StatusOutput = (typeof STATUS_OUTPUTS)[number];

/** One node's row, as `-o json` prints it. */
export interface NodeReport {
  node: string;
  /** true/false from the status annotation (or kured's in-progress annotation); null = unknown. */
  rebootRequired: boolean | null;
  phase: Phase | null;
  reason: string;
  /** RFC 3339 start of the phase. */
  since: string | null;
  /**
   * The reboot need, as the agent records it: since when (RFC 3339), for how long at the time of the
   * report (ms), when it is due under --reboot-deadline, and whether that has passed.
   */
  need: { since: string; forMs: number; due: string | null; overdue: boolean } | null;
  bootID: string;
  /** Does this node hold a lock slot? `group`: the --group-label value its slot records. */
  lock: { held: boolean; since: string | null; expired: boolean; group: string | null };
  /** The approval under --require-approval (`kured-ts approve`), when there is one. */
  approval: Approval | null;
  /** The last reboot cycles the agent recorded, oldest first (`kured-ts history`). */
  history: HistoryRecord[];
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
  if (entry === undefined) return { held: false, since: null, expired: false, group: null };
  const group = entry.metadata.group;
  return {
    held: true,
    since: entry.created !== '' ? entry.created : null,
    expired: isExpired(entry, ttlMs, nowMs),
    group: typeof group === 'string' ? group : null,
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
    need: needOf(status, nowMs),
    bootID: node.status?.nodeInfo?.bootID ?? '',
    lock: lockOf(
      lock.entries.find((e) => e.nodeID === name),
      ttlMs,
      nowMs,
    ),
    lastReboot: lastRebootOf(status),
    approval: approvalOf(annotations[APPROVAL_ANNOTATION]),
    history: parseHistory(annotations[HISTORY_ANNOTATION]),
    paused: annotations[NODE_PAUSE_ANNOTATION] === 'true',
    unschedulable: node.spec?.unschedulable === true,
    kured: kuredAnnotations(annotations),
  };
}

function needOf(status: Partial<NodeStatus> | undefined, nowMs: number): NodeReport['need'] {
  if (status?.requiredSince === undefined || !WANTS_REBOOT.has(status.phase ?? 'idle')) return null;
  return {
    since: status.requiredSince,
    forMs: Math.max(0, nowMs - Date.parse(status.requiredSince)),
    due: status.due ?? null,
    overdue: isOverdue(status, new Date(nowMs)),
  };
}

function approvalOf(raw: string | undefined): Approval | null {
  const parsed = parseApproval(raw);
  return parsed === undefined || 'error' in parsed ? null : parsed;
}

function kuredAnnotations(annotations: Record<string, string>): NodeReport['kured'] {
  return {
    rebootInProgress: annotations[KURED_IN_PROGRESS_ANNOTATION] ?? null,
    mostRecentRebootNeeded: annotations[KURED_REBOOT_NEEDED_ANNOTATION] ?? null,
  };
}

/** What `status` reads: the lock's DaemonSet and the nodes. */
export interface StatusInputs {
  ds: V1DaemonSet;
  nodes: readonly V1Node[];
}

/** The report for what was read, at `nowMs` (expired lock slots are judged then). */
export function buildStatus(
  options: Omit<StatusOptions, 'output'>,
  inputs: StatusInputs,
  nowMs: number,
): StatusReport {
  const lock = readLock(inputs.ds, options.lockAnnotation);
  const only = new Set(options.nodes ?? []);
  const rows = inputs.nodes
    .filter((n) => only.size === 0 || only.has(n.metadata?.name ?? ''))
    .map((n) => nodeReport(n, lock, options.lockTtlMs, nowMs))
    .sort((a, b) => a.node.localeCompare(b.node));
  return {
    daemonSet: `${options.dsNamespace}/${options.dsName}`,
    pause: readFleetPause(inputs.ds) ?? null,
    lock: { holders: lock.entries.map((e) => e.nodeID), maxOwners: lock.maxOwners, error: lock.error },
    nodes: rows,
  };
}

/** Reads the DaemonSet and the nodes (two GETs, nothing written). */
export async function readStatusInputs(
  options: DaemonSetRef,
  kube: CommandIo['kube'],
  signal?: AbortSignal,
): Promise<StatusInputs> {
  const ds = await readDaemonSet(kube, options, signal);
  const nodes = await kube.listNodes({}, signal);
  return { ds, nodes };
}

/** Reads the nodes and the DaemonSet (two GETs, nothing written) into a StatusReport. */
export async function collectStatus(
  options: Omit<StatusOptions, 'output'>,
  io: Pick<CommandIo, 'kube' | 'clock'>,
  signal?: AbortSignal,
): Promise<StatusReport> {
  const inputs = await readStatusInputs(options, io.kube, signal);
  return buildStatus(options, inputs, io.clock.now().getTime());
}

const yesNo = (value: boolean | null): string => (value === null ? '?' : value ? 'yes' : 'no');

function lockCell(row: NodeReport): string {
  if (!row.lock.held) return '-';
  return row.lock.expired ? 'held (expired)' : 'held';
}

/** `-o wide`: the slot's group too. */
function wideLockCell(row: NodeReport): string {
  const cell = lockCell(row);
  return row.lock.group === null ? cell : `${cell} [${row.lock.group || 'no group label'}]`;
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

/** Longer reasons are cut in the table (`-o json` has them whole). */
const REASON_WIDTH = 60;

function truncate(value: string, width: number): string {
  return value.length <= width ? value : value.slice(0, width - 1) + '…';
}

/** The lines above the table: the fleet pause, an unreadable lock, lock holders that are not nodes. */
export function fleetLines(report: StatusReport): string[] {
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
  const waiting = report.nodes.filter((n) => n.phase === 'awaiting-approval').map((n) => n.node);
  if (waiting.length > 0) {
    lines.push(`Awaiting approval: ${waiting.join(', ')} (kured-ts approve NODE..., or --all)`);
  }
  return lines;
}

const TABLE_HEADER = ['NODE', 'REBOOT', 'PHASE', 'AGE', 'OVERDUE', 'REASON', 'LOCK', 'LAST REBOOT'];
/** `-o wide`: the reason whole, and what the table leaves out. */
const WIDE_HEADER = [
  'NODE',
  'REBOOT',
  'PHASE',
  'SINCE',
  'AGE',
  'DUE',
  'LOCK',
  'LOCK SINCE',
  'SCHEDULABLE',
  'PAUSED',
  'LAST REBOOT',
  'BOOT ID',
  'REASON',
];

/** How long the reboot has been required. */
function ageCell(r: NodeReport): string {
  return r.need === null ? '-' : shortDuration(r.need.forMs);
}

/** `yes` past --reboot-deadline, `no` before it, `-` without one. */
function overdueCell(r: NodeReport): string {
  if (r.need === null || r.need.due === null) return '-';
  return r.need.overdue ? 'yes' : 'no';
}

/** The header of the table or wide form. */
export function statusHeader(output: 'table' | 'wide'): string[] {
  return output === 'wide' ? WIDE_HEADER : TABLE_HEADER;
}

/** One node's cells in the table or wide form. */
export function statusCells(r: NodeReport, output: 'table' | 'wide'): string[] {
  return output === 'table' ? tableCells(r) : wideCells(r);
}

function tableCells(r: NodeReport): string[] {
  return [
    r.node,
    yesNo(r.rebootRequired),
    r.phase ?? '-',
    ageCell(r),
    overdueCell(r),
    truncate(reasonCell(r), REASON_WIDTH),
    lockCell(r),
    r.lastReboot ?? '-',
  ];
}

function wideCells(r: NodeReport): string[] {
  return [
    r.node,
    yesNo(r.rebootRequired),
    r.phase ?? '-',
    r.since ?? '-',
    ageCell(r),
    r.need?.due ?? '-',
    wideLockCell(r),
    r.lock.since ?? '-',
    yesNo(!r.unschedulable),
    yesNo(r.paused),
    r.lastReboot ?? '-',
    r.bootID !== '' ? r.bootID : '-',
    reasonCell(r),
  ];
}

/** The human form of a report: header lines for the fleet, then one row per node. */
export function formatStatus(report: StatusReport, output: 'table' | 'wide' = 'table'): string[] {
  const rows = report.nodes.map((r) => statusCells(r, output));
  return [...fleetLines(report), ...formatTable(statusHeader(output), rows)];
}

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
  lockAnnotation?: string;
  lockTtl?: string;
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
  const cluster = clusterOptions(flags, env);
  const lockAnnotation =
    flags.lockAnnotation ?? nonEmpty(env.KURED_LOCK_ANNOTATION) ?? 'weave.works/kured-node-lock';
  const ttl = flags.lockTtl ?? nonEmpty(env.KURED_LOCK_TTL) ?? '0';
  let lockTtlMs: number;
  try {
    lockTtlMs = parseDuration(ttl);
  } catch (e: unknown) {
    throw new UsageError(
      '--lock-ttl',
      ttl,
      errorText(e),
      flags.lockTtl === undefined ? 'KURED_LOCK_TTL' : undefined,
    );
  }
  return { ...cluster, lockAnnotation, lockTtlMs, output, nodes };
}

/** Adds `status` to the program. */
export function registerStatus(program: Command, deps: CommandDeps): Command {
  const cmd = program
    .command('status')
    .argument('[node...]', 'only these nodes, with their reboot history (default: all)')
    .description(
      'show, per node, whether a reboot is required, its phase and reason, the lock and the last reboot',
    );
  addClusterOptions(cmd)
    .option('--lock-annotation <key>', 'lock annotation key (env KURED_LOCK_ANNOTATION)')
    .option('--lock-ttl <duration>', 'lock TTL, to mark expired slots (env KURED_LOCK_TTL)')
    .option('-o, --output <format>', 'table, wide, json or yaml', 'table')
    .option('-w, --watch', 'after the first listing, print what changes as it changes (until Ctrl-C)')
    .action(async (nodes: string[], flags: StatusFlags) => {
      const options = usage(deps, () => statusOptions(nodes, flags, deps.env));
      const io = options && commandIo(deps, options);
      const ref = options && io && (await resolveDaemonSet(deps, io, options));
      if (!options || !io || !ref) return;
      const found = { ...options, ...ref };
      if (flags.watch !== true) {
        deps.exit(await runStatus(found, io));
        return;
      }
      const { watchStatus } = await import('./status-watch.js');
      const signal = deps.interrupted?.();
      deps.exit(await watchStatus(found, { ...io, isTTY: deps.isTTY ?? false, signal }));
    });
  return cmd;
}
