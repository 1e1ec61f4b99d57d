// The `kured-ts.dev/status` annotation: why a node is (not) rebooting, readable with kubectl. The one
// codec of it: the agent writes it, `kured-ts status` and `check` read it.
import { parseShutdown, type ShutdownSettings } from '../host/shutdown.js';
import { WAVE_ID } from './wave.js';

/** Phases of the status annotation (DESIGN §4). */
export type Phase =
  | 'idle'
  | 'pending'
  | 'outside-window'
  | 'blocked'
  | 'awaiting-approval'
  | 'waiting-for-lock'
  | 'draining'
  /** Drained, held before the reboot while an external worker's annotation stands (--hold-after-drain-annotation). */
  | 'held-after-drain'
  /** Drained, waiting until the volumes of its evicted pods are detached and unmounted (--volume-detach-timeout). */
  | 'waiting-for-volumes'
  | 'rebooting'
  | 'verifying'
  | 'completed'
  | 'failed';

export const PHASES: readonly Phase[] = [
  'idle',
  'pending',
  'outside-window',
  'blocked',
  'awaiting-approval',
  'waiting-for-lock',
  'draining',
  'held-after-drain',
  'waiting-for-volumes',
  'rebooting',
  'verifying',
  'completed',
  'failed',
];

/** Phases in which a reboot is still wanted: all but the two that mean none is. */
export const WANTS_REBOOT: ReadonlySet<Phase> = new Set<Phase>(
  PHASES.filter((phase) => phase !== 'idle' && phase !== 'completed'),
);

export const STATUS_ANNOTATION = 'kured-ts.dev/status';

/** The value of the status annotation. */
export interface NodeStatus {
  phase: Phase;
  reason: string;
  /** RFC 3339 time the phase began. */
  since: string;
  bootID: string;
  /** RFC 3339 time the last reboot was verified (bootID changed, node Ready). */
  lastReboot?: string;
  /** RFC 3339 time the agent first saw the reboot required; kept until the reboot is done. */
  requiredSince?: string;
  /** RFC 3339 time the reboot is due (requiredSince + --reboot-deadline); past it, the node is overdue. */
  due?: string;
  /**
   * RFC 3339 time of the agent's last question to the FleetLock server that said its group is full: a
   * node with its turn at the lock says so each time it asks, and the coordinator keeps its turn while
   * it does (it is alive, waiting on another cluster) instead of passing it to a node the server
   * refuses too.
   */
  fleetLockAsked?: string;
  /**
   * The agent's own admission policy that denies one of its requests (phase failed: a configuration
   * error, in the reason); `kured-ts check` shows it. Absent otherwise.
   */
  deniedBy?: string;
  /**
   * Graceful node shutdown on this host as the agent read it at start (src/host/shutdown.ts): what
   * the reboot does to the pods the drain leaves. Absent when the agent did not read it.
   */
  shutdown?: ShutdownSettings;
  /** The node's wave (src/node/wave.ts), when a wave is tracked: the reboots it is part of. */
  wave?: string;
  /**
   * A view of the agent's (its Node, its pods, the lock) that has heard nothing from the API server
   * for longer than its staleness bound, in words; absent while every view is current. The agent
   * then asks the API server itself; this says why it costs more and what is broken.
   */
  staleView?: string;
}

/** The status as read: every field checked; `phase` absent when unknown, `reason` says why when unreadable. */
export type ReadStatus = Partial<NodeStatus> & { reason: string };

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** Reads the annotation's value; undefined when absent, a reason when it is not ours to read. */
export function parseStatus(raw: string | undefined): ReadStatus | undefined {
  if (raw === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { reason: `unreadable status annotation: ${raw.slice(0, 60)}` };
  }
  if (typeof parsed !== 'object' || parsed === null) {
    return { reason: `unreadable status annotation: ${raw.slice(0, 60)}` };
  }
  const s = parsed as Record<string, unknown>;
  const phase = PHASES.find((p) => p === s.phase);
  return {
    ...(phase !== undefined ? { phase } : {}),
    reason: text(s.reason),
    since: text(s.since),
    bootID: text(s.bootID),
    ...optionalFields(s),
  };
}

/** A ValidatingAdmissionPolicy's name (an object name: at most 253 characters). */
const POLICY_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** The optional fields of a parsed status, each only when it reads as what it says. */
function optionalFields(s: Record<string, unknown>): Partial<NodeStatus> {
  return {
    ...(typeof s.lastReboot === 'string' ? { lastReboot: s.lastReboot } : {}),
    ...(isTime(s.requiredSince) ? { requiredSince: s.requiredSince } : {}),
    ...(isTime(s.due) ? { due: s.due } : {}),
    ...(isTime(s.fleetLockAsked) ? { fleetLockAsked: s.fleetLockAsked } : {}),
    ...(typeof s.deniedBy === 'string' && POLICY_NAME.test(s.deniedBy) ? { deniedBy: s.deniedBy } : {}),
    ...shutdownOf(s.shutdown),
    ...(typeof s.wave === 'string' && WAVE_ID.test(s.wave) ? { wave: s.wave } : {}),
    ...(typeof s.staleView === 'string' ? { staleView: bounded(s.staleView, STALE_VIEW_MAX_CHARS) } : {}),
  };
}

function shutdownOf(value: unknown): { shutdown?: ShutdownSettings } {
  const shutdown = parseShutdown(value);
  return shutdown === undefined ? {} : { shutdown };
}

/** An RFC 3339 time Date can read (a garbled one is dropped, not trusted). */
function isTime(value: unknown): value is string {
  return typeof value === 'string' && !Number.isNaN(Date.parse(value));
}

/** Is the node past its reboot deadline at `now`? */
export function isOverdue(status: Partial<NodeStatus> | undefined, now: Date): boolean {
  return status?.due !== undefined && now.getTime() > Date.parse(status.due);
}

/** The annotation's value, fields in a fixed order. */
/**
 * The longest reason a status carries: a reason may quote what other writers wrote (the coordinator's
 * advice, a lock's holders, an API error), and every agent writes its status on its own Node.
 */
const STATUS_REASON_MAX_CHARS = 1024;

/** The longest staleView a status carries (it quotes an API error). */
const STALE_VIEW_MAX_CHARS = 256;

/** `text` cut to at most `max` characters. */
function bounded(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** `reason` as a status carries it: at most STATUS_REASON_MAX_CHARS. */
function boundedReason(reason: string): string {
  return bounded(reason, STATUS_REASON_MAX_CHARS);
}

export function formatStatus(status: NodeStatus): string {
  return JSON.stringify({
    phase: status.phase,
    reason: boundedReason(status.reason),
    since: status.since,
    bootID: status.bootID,
    ...(status.lastReboot === undefined ? {} : { lastReboot: status.lastReboot }),
    ...(status.requiredSince === undefined ? {} : { requiredSince: status.requiredSince }),
    ...(status.due === undefined ? {} : { due: status.due }),
    ...(status.fleetLockAsked === undefined ? {} : { fleetLockAsked: status.fleetLockAsked }),
    ...(status.deniedBy === undefined ? {} : { deniedBy: status.deniedBy }),
    ...(status.shutdown === undefined ? {} : { shutdown: status.shutdown }),
    ...(status.wave === undefined ? {} : { wave: status.wave }),
    ...(status.staleView === undefined ? {} : { staleView: bounded(status.staleView, STALE_VIEW_MAX_CHARS) }),
  });
}

/**
 * Two statuses say the same (all but `since`, which a rewrite would only move): no write needed. A
 * new fleetLockAsked is news (the coordinator reads the agent's life from it).
 */
export function sameStatus(a: Partial<NodeStatus> | undefined, b: Partial<NodeStatus> | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  const reasons = boundedReason(a.reason ?? '') === boundedReason(b.reason ?? '');
  const shutdown = JSON.stringify(a.shutdown) === JSON.stringify(b.shutdown);
  return (
    (a.bootID ?? '') === (b.bootID ?? '') && reasons && shutdown && COMPARED.every((key) => a[key] === b[key])
  );
}

/** The fields sameStatus compares as they are (bootID and the reason aside: absent reads as '', a reason as written). */
const COMPARED = [
  'phase',
  'lastReboot',
  'requiredSince',
  'due',
  'fleetLockAsked',
  'deniedBy',
  'wave',
  'staleView',
] as const;
