// The outcome of one agent decision, and everything derived from it: status, Events, metrics, log.
import { isDeepStrictEqual } from 'node:util';
import type { RebootResult } from '../metrics/agent-metrics.js';
import type { EventReason } from '../events/events.js';
import type { FleetGate } from '../capacity/gates.js';
import type { LockWait, Refusal } from '../lock/lock.js';
import type { Phase } from '../node/status.js';

/** Kinds that carry only a reason. */
type PlainKind =
  | 'idle'
  | 'sentinel-error'
  | 'pending'
  | 'outside-window'
  | 'awaiting-approval'
  | 'draining'
  | 'held-after-drain'
  | 'waiting-for-volumes'
  | 'drain-failed'
  | 'quarantined'
  | 'reboot-loop'
  | 'aborted'
  | 'rebooting'
  | 'holding'
  | 'failed'
  | 'lock-lost'
  | 'released'
  | 'error';

/**
 * What a tick decided. Stable names: tests, logs and the simulator match on them. Progress kinds
 * ('pending', 'draining', 'held-after-drain', 'waiting-for-volumes') are reported in the middle of a
 * tick; the rest end one.
 */
export type Outcome =
  | { kind: PlainKind; reason: string }
  /** A blocker said no. */
  | { kind: 'blocked'; reason: string; blocker: string }
  | Misconfigured
  /**
   * Rebooted, not ready yet. `timeoutAt`: when --post-reboot-timeout passes (ms since the epoch,
   * this host's clock), so that the wait for readiness ends by then, whatever it waits on.
   */
  | { kind: 'verifying'; reason: string; timeoutAt?: number }
  /**
   * Every slot is taken; `holders` are the nodes that take them. `fleetLock`: the FleetLock server
   * (--fleetlock-url) gave no slot; no in-cluster lock change ends this wait. `fleetLockFull`: it
   * said its group is full (failed_lock), which it says to every node of the cluster alike, and the
   * coordinator's queue is on: the status records the question, and the coordinator keeps this
   * node's turn while it goes on asking.
   */
  | {
      kind: 'waiting-for-lock';
      reason: string;
      holders: string[];
      /** The fleet gate that holds this node back (room.ts), when one does: kured_ts_blocked says it. */
      gate?: FleetGate;
      /** How to wait for the next try, as the lock said (default: for a slot). */
      wait?: LockWait;
      fleetLock?: true;
      fleetLockFull?: true;
    }
  /**
   * The cycle ended after the reboot: ready ('completed') or past --post-reboot-timeout in release
   * mode ('timed-out'). `uncordoned`: we lifted our cordon; `durationMs`: the cycle's start (the
   * slot taken) to the slot released, for kured_ts_reboot_duration_seconds.
   */
  | { kind: 'completed' | 'timed-out'; reason: string; uncordoned: boolean; durationMs: number };

/**
 * The agent's own admission policy denied one of its requests: a configuration error (the policy and
 * the agent run with different values), not a block to wait out. `policy` names it, `options` the
 * flags it is rendered from (src/admission/own-denial.ts).
 */
export interface Misconfigured {
  kind: 'misconfigured';
  reason: string;
  policy: string;
  options: string[];
}

export type OutcomeKind = Outcome['kind'];

/** How one kind shows up outside the agent. */
export interface Effects {
  /** Status annotation phase; undefined = no status write. */
  phase?: Phase;
  /** Events to record, in order. */
  events: { reason: EventReason; type: 'Normal' | 'Warning' }[];
  level: 'debug' | 'info' | 'warn' | 'error';
  /** The stable log message (users grep it). */
  message: string;
  /** kured_ts_lock_held after this outcome; undefined = unknown. */
  lockHeld?: boolean;
  /** kured_ts_reboots_total{result} once when this kind is first reached. */
  rebootResult?: RebootResult;
  /**
   * The failure notification this kind sends (--notify-events; once per node and period: the notice
   * filter), with the outcome's reason after the kind's text.
   */
  notify?: 'drain-failed' | 'quarantined' | 'reboot-failed' | 'not-back';
  /**
   * Reported once: the same outcome again (same kind and reason, after nothing but progress) is
   * logged at debug level and records no Event; its status stands as written.
   */
  once?: true;
}

const normal = (reason: EventReason): { reason: EventReason; type: 'Normal' } => ({ reason, type: 'Normal' });
const warning = (reason: EventReason): { reason: EventReason; type: 'Warning' } => ({
  reason,
  type: 'Warning',
});

const EFFECTS: Record<OutcomeKind, Effects> = {
  idle: { phase: 'idle', events: [], level: 'info', message: 'reboot not required', lockHeld: false },
  'sentinel-error': {
    phase: 'idle',
    events: [],
    level: 'warn',
    message: 'reboot sentinel failed; treating as not required',
    lockHeld: false,
  },
  pending: { events: [normal('RebootRequired')], level: 'info', message: 'reboot required' },
  'outside-window': {
    phase: 'outside-window',
    events: [],
    level: 'info',
    message: 'outside maintenance window',
    lockHeld: false,
  },
  blocked: {
    phase: 'blocked',
    events: [normal('RebootBlocked')],
    level: 'info',
    message: 'reboot blocked',
    lockHeld: false,
  },
  misconfigured: {
    phase: 'failed',
    events: [warning('ConfigurationError')],
    level: 'error',
    message: 'configuration error: the admission policy of kured-ts denies the agent',
    once: true,
  },
  'awaiting-approval': {
    phase: 'awaiting-approval',
    events: [normal('AwaitingApproval')],
    level: 'info',
    message: 'waiting for approval',
    lockHeld: false,
  },
  'waiting-for-lock': {
    phase: 'waiting-for-lock',
    events: [],
    level: 'info',
    message: 'waiting for lock',
    lockHeld: false,
  },
  draining: {
    phase: 'draining',
    events: [normal('LockAcquired'), normal('Draining')],
    level: 'info',
    message: 'lock acquired; draining node',
    lockHeld: true,
  },
  'held-after-drain': {
    phase: 'held-after-drain',
    events: [normal('RebootHeld')],
    level: 'info',
    message: 'drained; reboot held while a hold annotation stands',
    lockHeld: true,
  },
  'waiting-for-volumes': {
    phase: 'waiting-for-volumes',
    events: [normal('WaitingForVolumes')],
    level: 'info',
    message: 'drained; waiting for the volumes of the evicted pods to detach',
    lockHeld: true,
  },
  'drain-failed': {
    phase: 'failed',
    events: [warning('DrainFailed')],
    level: 'warn',
    message: 'drain failed; lock released',
    lockHeld: false,
    rebootResult: 'failed',
    notify: 'drain-failed',
  },
  quarantined: {
    phase: 'blocked',
    events: [warning('DrainFailed')],
    level: 'warn',
    message: 'drain failed; node quarantined; lock released',
    lockHeld: false,
    rebootResult: 'failed',
    notify: 'quarantined',
  },
  'reboot-loop': {
    phase: 'blocked',
    events: [warning('RebootLoop')],
    level: 'error',
    message: 'reboot loop: the need survived its reboots; node quarantined; lock released',
    lockHeld: false,
    rebootResult: 'reboot-loop',
  },
  aborted: {
    phase: 'pending',
    events: [warning('RebootAborted')],
    level: 'warn',
    message: 'reboot aborted',
    lockHeld: false,
    rebootResult: 'aborted',
  },
  rebooting: {
    phase: 'rebooting',
    events: [normal('Rebooting')],
    level: 'info',
    message: 'rebooting node',
    lockHeld: true,
  },
  verifying: {
    phase: 'verifying',
    events: [normal('RebootVerified')],
    level: 'info',
    message: 'reboot verified; waiting for readiness',
    lockHeld: true,
  },
  completed: {
    phase: 'completed',
    events: [normal('RebootVerified'), normal('RebootCompleted')],
    level: 'info',
    message: 'reboot completed; lock released',
    lockHeld: false,
    rebootResult: 'success',
  },
  'timed-out': {
    phase: 'failed',
    events: [warning('RebootFailed')],
    level: 'warn',
    message: 'post-reboot readiness timed out; lock released',
    lockHeld: false,
    rebootResult: 'timeout',
    notify: 'not-back',
  },
  holding: {
    phase: 'failed',
    events: [warning('RebootFailed')],
    level: 'warn',
    message: 'post-reboot readiness timed out; holding lock',
    lockHeld: true,
    rebootResult: 'timeout',
    notify: 'not-back',
  },
  failed: {
    phase: 'failed',
    events: [warning('RebootFailed')],
    level: 'error',
    message: 'reboot failed; holding lock',
    lockHeld: true,
    rebootResult: 'failed',
    notify: 'reboot-failed',
  },
  'lock-lost': {
    phase: 'waiting-for-lock',
    events: [warning('LockLost')],
    level: 'warn',
    message: 'lock slot lost during a reboot cycle; waiting for one, node kept out of service',
    lockHeld: false,
  },
  released: {
    phase: 'failed',
    events: [warning('RebootAborted')],
    level: 'warn',
    message: 'reboot cycle released by an operator; node left as it is',
    lockHeld: false,
    rebootResult: 'aborted',
  },
  error: { events: [], level: 'warn', message: 'tick failed' },
};

/** The effects of one outcome. */
export function effectsOf(outcome: Outcome): Effects {
  const base = EFFECTS[outcome.kind];
  if ((outcome.kind === 'completed' || outcome.kind === 'timed-out') && outcome.uncordoned) {
    return { ...base, events: [...base.events, normal('Uncordoned')] };
  }
  return base;
}

/** Does `a` say what `b` says (by value: kind, reason and every detail)? */
export function sameOutcome(a: Outcome | undefined, b: Outcome): boolean {
  return a !== undefined && isDeepStrictEqual(a, b);
}

/** A refused acquisition as an outcome: waiting for the lock, with the fleet gate that held it, if one did. */
export function waitingFor(refused: Refusal): Outcome {
  return {
    kind: 'waiting-for-lock',
    reason: refused.reason,
    holders: refused.holders,
    ...(refused.gate === undefined ? {} : { gate: refused.gate }),
    ...(refused.wait === undefined ? {} : { wait: refused.wait }),
  };
}

/**
 * May a wait after `outcome` that timed out with nothing changed be followed by another wait instead
 * of a pass (Agent.stillQuiet)? Only a wait for a slot or a turn: a recheck of the fleet's gates, a
 * back-off and an error retry wait for what shows on nothing the agent follows.
 */
export function waitsAgainWhenQuiet(outcome: Outcome): boolean {
  if (outcome.kind !== 'waiting-for-lock') return false;
  const how = outcome.wait;
  return how === undefined || ((how.for === 'slot' || how.for === 'turn') && how.recheck !== true);
}
