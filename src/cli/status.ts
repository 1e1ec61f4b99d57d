// `kured-ts status`: why is each node (not) rebooting, from what the cluster records: the report
// (the command is status-command.ts, its table status-table.ts).
import { isNotFound, statusMessage } from '../kube/errors.js';
import type { V1DaemonSet, V1Lease, V1Node } from '../kube/kube.js';
import {
  ADVICE_ANNOTATION,
  HOLDER_MAX_CHARS,
  bounded,
  coordinatorLeaseName,
  parseAdvice,
} from '../queue/coordinator-lease.js';
import { TURN_ANNOTATION, parseLapsedTurn, parseTurn, type LapsedTurn, type Turn } from '../queue/turn.js';
import { APPROVAL_ANNOTATION, parseApproval, type Approval } from '../node/approval.js';
import { HISTORY_ANNOTATION, parseHistory, type HistoryRecord } from '../node/history.js';
import {
  QUARANTINE_ANNOTATION,
  QUARANTINE_LABEL,
  parseQuarantine,
  type QuarantineKind,
} from '../node/quarantine.js';
import {
  readDaemonSet,
  readFleetPause,
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
import {
  STATUS_ANNOTATION,
  WANTS_REBOOT,
  isOverdue,
  parseStatus,
  type NodeStatus,
  type Phase,
} from '../node/status.js';

// ---- status ---------------------------------------------------------------------------------------

export interface StatusOptions extends DaemonSetRef {
  /** --lock-annotation (its default: the flag table's). */
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
type StatusOutput = (typeof STATUS_OUTPUTS)[number];

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
  /** The coordinator's turn on this node (it is named for the next free slot), when it has one. */
  turn: Turn | null;
  /** A turn of this node that lapsed unused (it waits behind the others until its agent speaks). */
  lapsedTurn: LapsedTurn | null;
  /** Does this node hold a lock slot? `group`: the --group-label value its slot records. */
  lock: { held: boolean; since: string | null; expired: boolean; group: string | null };
  /** The approval under --require-approval (`kured-ts approve`), when there is one. */
  approval: Approval | null;
  /** The last reboot cycles the agent recorded, oldest first (`kured-ts history`). */
  history: HistoryRecord[];
  /** RFC 3339 time of the last completed reboot, when the cluster records it. */
  lastReboot: string | null;
  /**
   * A view of the agent's that heard nothing from the API server for longer than its staleness bound,
   * as its status last said (its watch is failing or silent); null while its views are current.
   */
  staleView: string | null;
  /**
   * The quarantine (label kured-ts.dev/quarantined), when the node carries it: since when, which kind
   * of failure put it there (null: the record does not say, or there is none) and the pods it names.
   */
  quarantine: { since: string | null; kind: QuarantineKind | null; pods: string[] } | null;
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
  /** The coordinator's Lease, when one exists (no coordinator installed: null). */
  coordinator: CoordinatorReport | null;
  nodes: NodeReport[];
}

/** What the coordinator's Lease says: who leads, since its last renewal, and what it advises. */
interface CoordinatorReport {
  lease: string;
  /** The leader (cut to 128 characters); null when the Lease is released (a standby is expected to take it). */
  holder: string | null;
  /** The leader's wall clock at its last renewal (for people: nobody compares clocks with it). */
  renewTime: string | null;
  /** The nodes it sees and why it gives no turn now, when it says so under its own name; null otherwise. */
  advice: { nodes: number; held: string | null } | null;
  /** Set when the Lease could not be read. */
  error: string | null;
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
): Pick<NodeReport, 'phase' | 'reason' | 'since' | 'staleView'> {
  return {
    phase: status?.phase ?? null,
    reason: status?.reason ?? '',
    since: status?.since ? status.since : null,
    staleView: status?.staleView ?? null,
  };
}

/** The turn annotation as the report shows it: a turn, or one that lapsed unused. */
function turnsOf(text: string | undefined): Pick<NodeReport, 'turn' | 'lapsedTurn'> {
  return { turn: parseTurn(text) ?? null, lapsedTurn: parseLapsedTurn(text) ?? null };
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
    ...turnsOf(annotations[TURN_ANNOTATION]),
    lock: lockOf(
      lock.entries.find((e) => e.nodeID === name),
      ttlMs,
      nowMs,
    ),
    lastReboot: lastRebootOf(status),
    approval: approvalOf(annotations[APPROVAL_ANNOTATION]),
    history: parseHistory(annotations[HISTORY_ANNOTATION]),
    quarantine: quarantineOf(node),
    ...flagsOf(node),
    kured: kuredAnnotations(annotations),
  };
}

function quarantineOf(node: V1Node): NodeReport['quarantine'] {
  const meta = node.metadata ?? {};
  if (meta.labels?.[QUARANTINE_LABEL] === undefined) return null;
  const record = parseQuarantine(meta.annotations?.[QUARANTINE_ANNOTATION]);
  if (record === undefined) return { since: null, kind: null, pods: [] };
  return { since: record.since, kind: record.kind ?? null, pods: record.pods.map((p) => p.pod) };
}

function flagsOf(node: V1Node): Pick<NodeReport, 'paused' | 'unschedulable'> {
  return {
    paused: node.metadata?.annotations?.[NODE_PAUSE_ANNOTATION] === 'true',
    unschedulable: node.spec?.unschedulable === true,
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
  /** The coordinator's Lease, or why it could not be read; undefined: there is none. */
  coordinator?: V1Lease | { error: string };
}

function coordinatorReport(lease: string, read: StatusInputs['coordinator']): CoordinatorReport | null {
  if (read === undefined) return null;
  if ('error' in read) return { lease, holder: null, renewTime: null, advice: null, error: read.error };
  const spec = read.spec ?? {};
  const holder = spec.holderIdentity ?? '';
  return {
    lease,
    holder: holder === '' ? null : bounded(holder, HOLDER_MAX_CHARS),
    renewTime: spec.renewTime ?? null,
    advice: adviceOf(read, holder),
    error: null,
  };
}

/** The advice on the Lease, when its holder published it (another's, or an old leader's, is none). */
function adviceOf(lease: V1Lease, holder: string): CoordinatorReport['advice'] {
  const advice = parseAdvice(lease.metadata?.annotations?.[ADVICE_ANNOTATION]);
  if (advice === undefined || advice.by !== holder || holder === '') return null;
  return { nodes: advice.nodes, held: advice.held?.reason ?? null };
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
    coordinator: coordinatorReport(
      `${options.dsNamespace}/${coordinatorLeaseName(options.dsName)}`,
      inputs.coordinator,
    ),
    nodes: rows,
  };
}

/** Reads the DaemonSet, the nodes and the coordinator's Lease (three GETs, nothing written). */
export async function readStatusInputs(
  options: DaemonSetRef,
  kube: CommandIo['kube'],
  signal?: AbortSignal,
): Promise<StatusInputs> {
  const ds = await readDaemonSet(kube, options, signal);
  const nodes = await kube.listNodes({}, signal);
  const coordinator = await kube
    .getLease(options.dsNamespace, coordinatorLeaseName(options.dsName), signal)
    .catch((err: unknown) => (isNotFound(err) ? undefined : { error: statusMessage(err) }));
  return { ds, nodes, ...(coordinator === undefined ? {} : { coordinator }) };
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
