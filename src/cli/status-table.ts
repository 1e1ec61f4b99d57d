// The table and wide forms of `kured-ts status` (and of `status --watch`): one row per node.
import { formatTable } from './table.js';
import type { NodeReport, StatusReport } from './status.js';
import { shortDuration } from '../text/duration.js';
import { QUARANTINE_KINDS } from '../node/quarantine.js';

const yesNo = (value: boolean | null): string => (value === null ? '?' : value ? 'yes' : 'no');

function lockCell(row: NodeReport): string {
  if (!row.lock.held) return row.turn !== null ? 'its turn' : row.lapsedTurn !== null ? 'turn lapsed' : '-';
  return row.lock.expired ? 'held (expired)' : 'held';
}

/** `-o wide`: the slot's group too. */
function wideLockCell(row: NodeReport): string {
  const cell = lockCell(row);
  return row.lock.group === null ? cell : `${cell} [${row.lock.group || 'no group label'}]`;
}

/** `[quarantined for …]` when the node is and its reason does not say so already. */
function quarantineNote(row: NodeReport): string | undefined {
  const q = row.quarantine;
  if (q === null || row.reason.includes('quarantined')) return undefined;
  return q.kind === null ? '[quarantined]' : `[quarantined for ${QUARANTINE_KINDS[q.kind]}]`;
}

function reasonCell(row: NodeReport): string {
  const parts: string[] = [];
  if (row.paused) parts.push('[node paused]');
  const quarantined = quarantineNote(row);
  if (quarantined !== undefined) parts.push(quarantined);
  if (row.phase === null && row.kured.rebootInProgress !== null) {
    parts.push(`kured reboot in progress since ${row.kured.rebootInProgress}`);
  }
  if (row.staleView !== null) parts.push(`[agent's view stale: ${row.staleView}]`);
  if (row.reason !== '') parts.push(row.reason);
  return parts.length > 0 ? parts.join(' ') : '-';
}

/** Longer reasons are cut in the table (`-o json` has them whole). */
const REASON_WIDTH = 60;

function truncate(value: string, width: number): string {
  return value.length <= width ? value : value.slice(0, width - 1) + '…';
}

/** Who keeps the lock's queue, as its Lease says; nothing when no coordinator is installed. */
function coordinatorLine(c: StatusReport['coordinator']): string | undefined {
  if (c === null) return undefined;
  if (c.error !== null) return `Coordinator: cannot read Lease ${c.lease}: ${c.error}`;
  if (c.holder === null)
    return `Coordinator: none leading (Lease ${c.lease} released; agents go first come if no standby takes it within 30s)`;
  const held = c.advice?.held == null ? '' : `; no turn now: ${c.advice.held}`;
  return `Coordinator: ${c.holder} (Lease ${c.lease}, renewed ${c.renewTime ?? '?'}${held})`;
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
  const coordinator = coordinatorLine(report.coordinator);
  if (coordinator !== undefined) lines.push(coordinator);
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
