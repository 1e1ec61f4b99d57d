// When the agent looks again after a pass, and what may end the wait sooner: one pure function of
// the pass's outcome and the facts of the moment (issue 57 item 4). agent.ts gathers the facts and
// carries the answer out; test/unit/wake-up.test.ts is its table.
import type { Config } from '../config/config.js';
import { FLEETLOCK_RETRY_MAX_MS, FLEETLOCK_RETRY_MS } from '../fleetlock/fleetlock.js';
import type { Outcome } from './outcome.js';

/**
 * How often the agent looks again while it waits for readiness after a reboot (capped by --period)
 * and cannot follow its Node (the watch is not open): the next node of the wave waits on it. A poll
 * is two GETs (node and lock).
 */
const VERIFY_POLL_MS = 2_000;
/**
 * While it follows its Node (and, with --wait-for-daemonset-pods, its pods), the readiness wait
 * looks again at each change, and at least this often (capped by --period): the bound within which
 * --post-reboot-timeout is judged when nothing changes.
 */
const VERIFY_WATCHED_MS = 30_000;
/** How often the agent looks again while it holds the lock after the readiness timeout. */
const HOLDING_POLL_MS = 10_000;
/** Retry after a failed tick (API outage), or while a lost slot is awaited, capped by --period. */
const ERROR_RETRY_MS = 30_000;
/**
 * The first lock attempt comes within this (capped by --period) after start-up: a DaemonSet rollout
 * starts every agent at once, and the spread keeps them from racing for the lock together. The
 * start-up tick itself (crash repair, the taint, a held slot's cycle) does not wait.
 */
const FIRST_TICK_MAX_MS = 60_000;
/**
 * Re-check a blocked node this often (capped by --period): blocks are mostly transient (a PDB at 0
 * while the previous node's pods reschedule), and waiting a whole period stalls the wave.
 */
const BLOCKED_RETRY_MS = 5 * 60_000;
/** Agents start within this much after the maintenance window opens (spread, not all at once). */
const WINDOW_OPEN_SPREAD_MS = 60_000;
/** The FleetLock retry doubles per refusal in a row, at most this many times (and within its cap). */
const FLEETLOCK_BACKOFF_DOUBLINGS = 4;

/**
 * What ends the wait besides its timer:
 * - 'wake': nothing but wake() (the sentinel refresher, an admin's request on the Node): idle;
 * - 'node': a change of the followed Node (and its pods): the readiness wait;
 * - 'lock': a change of the lock or of this node's turn: a wait for a slot, a turn, a lost slot,
 *   and (without the coordinated queue) a PodDisruptionBudget the wave itself blocks;
 * - 'timer': only the timer.
 */
type WakeOn = 'wake' | 'node' | 'lock' | 'timer';

export interface WakeUp {
  /** ms until the next pass, if nothing ends the wait sooner; Infinity: none but `on`. */
  delayMs: number;
  on: WakeOn;
}

/** What the choice depends on besides the outcome, as the agent sees it now. */
export interface WakeFacts {
  nowMs: number;
  periodMs: number;
  /** Draws in [0, 1): the jitter, the first tick's spread, the window's spread. */
  random: () => number;
  /** The agent follows its own Node (the watch is open). */
  following: boolean;
  /** With the coordinated queue ('none': without) a PDB-blocked node does not wake on lock changes. */
  lockQueue: Config['lockQueue'];
  /** FleetLock refusals in a row, this outcome's included (fleetLockWaitsAfter). */
  fleetLockWaits: number;
  /** When the maintenance window next opens (ms since the epoch); undefined: never. Asked only outside it. */
  windowOpens: () => number | undefined;
  /** The end of the autoscaler protection's settle or of the wave's soak (ms since the epoch), if one runs. */
  dueMs?: number;
  /** The last status write failed: a waiting node whose status says nothing is in nobody's queue. */
  statusUnsent: boolean;
}

/** FleetLock refusals in a row after `outcome`, `before` of them before it. */
export function fleetLockWaitsAfter(outcome: Outcome, before: number): number {
  return outcome.kind === 'waiting-for-lock' && outcome.fleetLock === true ? before + 1 : 0;
}

/**
 * The pause after `outcome` before the next pass, and what ends it sooner. Never longer than the
 * settle's or soak's end, nor than an error's retry while the status write failed.
 */
export function wakeUp(outcome: Outcome, facts: WakeFacts): WakeUp {
  let delayMs = delayAfter(outcome, facts);
  if (facts.dueMs !== undefined) delayMs = Math.min(delayMs, Math.max(0, facts.dueMs - facts.nowMs));
  if (facts.statusUnsent)
    delayMs = Math.min(delayMs, jitter(Math.min(facts.periodMs, ERROR_RETRY_MS), facts));
  return { delayMs, on: wakeOn(outcome, facts) };
}

function wakeOn(outcome: Outcome, facts: WakeFacts): WakeOn {
  if (outcome.kind === 'idle') return 'wake';
  if (outcome.kind === 'verifying' && facts.following) return 'node';
  // With the coordinated queue a PDB-blocked node waits out its retry: woken by every lock change,
  // every blocked node of a large fleet would list its pods and PDBs per hand-off (DESIGN §13).
  const lockWakes =
    (outcome.kind === 'waiting-for-lock' && outcome.fleetLock !== true) ||
    outcome.kind === 'lock-lost' ||
    (outcome.kind === 'blocked' && outcome.blocker === 'pdb' && facts.lockQueue === 'none');
  return lockWakes ? 'lock' : 'timer';
}

function delayAfter(outcome: Outcome, facts: WakeFacts): number {
  const period = facts.periodMs;
  switch (outcome.kind) {
    case 'pending': // only a start-up pass ends here: the first lock attempt
      return facts.random() * Math.min(period, FIRST_TICK_MAX_MS);
    case 'verifying':
      return Math.min(
        jitter(Math.min(period, readinessLookMs(facts)), facts),
        untilMs(outcome.timeoutAt, facts.nowMs),
      );
    case 'holding':
      return jitter(Math.min(period, HOLDING_POLL_MS), facts);
    case 'waiting-for-lock':
      return jitter(outcome.fleetLock === true ? fleetLockRetry(facts) : period, facts);
    case 'error':
    case 'lock-lost':
      return jitter(Math.min(period, ERROR_RETRY_MS), facts);
    case 'blocked':
      return jitter(Math.min(period, BLOCKED_RETRY_MS), facts);
    case 'outside-window':
      return Math.min(jitter(period, facts), untilWindowOpens(facts));
    default:
      return jitter(period, facts);
  }
}

/** How often the readiness wait looks: at each change and this often while it follows, else a poll. */
function readinessLookMs(facts: WakeFacts): number {
  return facts.following ? VERIFY_WATCHED_MS : VERIFY_POLL_MS;
}

/** Time until `at` (a moment after it, so that it has passed); Infinity without one. */
function untilMs(at: number | undefined, nowMs: number): number {
  return at === undefined ? Number.POSITIVE_INFINITY : Math.max(0, at - nowMs + 1);
}

/** The pause before asking the FleetLock server again: doubling per refusal, capped, within --period. */
function fleetLockRetry(facts: WakeFacts): number {
  const doublings = Math.min(Math.max(0, facts.fleetLockWaits - 1), FLEETLOCK_BACKOFF_DOUBLINGS);
  return Math.min(facts.periodMs, FLEETLOCK_RETRY_MAX_MS, FLEETLOCK_RETRY_MS * 2 ** doublings);
}

/** Time until the window next opens, plus a random spread; Infinity when it never does. */
function untilWindowOpens(facts: WakeFacts): number {
  const opens = facts.windowOpens();
  if (opens === undefined) return Number.POSITIVE_INFINITY;
  return Math.max(0, opens - facts.nowMs) + facts.random() * WINDOW_OPEN_SPREAD_MS;
}

/** ±50 %. */
function jitter(ms: number, facts: WakeFacts): number {
  return ms * (0.5 + facts.random());
}
