// How a node refused a slot waits for its next try (LockWait): for its turn, for a slot, for a look
// at the fleet again soon, and for the unavailable nodes that fill the slots to come back.
import type { AcquireResult, LockWait, TurnVerdict } from './lock.js';
import type { NoRoom } from '../capacity/room.js';

/** Refusals by nodes beyond the lock, which come back or finish without a write to it: look again soon. */
const RECHECK: ReadonlySet<string> = new Set(['workers-first', 'unhealthy', 'quarantined', 'wave-halted']);
/** Of those, the wave's steps and order: its nodes say they soaked or finished on their own Node. */
const SOON: ReadonlySet<string> = new Set(['slow-start', 'group-order']);

/** The unavailable nodes a full room names: the wait follows them (readiness-wait.ts). */
function readinessOf(room: NoRoom): Pick<LockWait, 'readiness'> {
  const names = room.why === 'full' ? (room.unavailable?.names ?? []) : [];
  return names.length === 0 ? {} : { readiness: names };
}

/** Held back by nodes that come back or finish without a write to the lock: look again (soon). */
function recheckOf(room: NoRoom): Pick<LockWait, 'recheck' | 'soon'> {
  if (SOON.has(room.why)) return { recheck: true, soon: true };
  if (RECHECK.has(room.why) || (room.why === 'full' && room.unavailable !== undefined))
    return { recheck: true };
  return {};
}

/**
 * How a node refused `room` waits: for its turn while a live coordinator has given it none, else for a
 * slot (the default, unsaid). A node that held a turn and still found no room waits for the room to
 * change (a slot freed in the lock, an unavailable node back, the recheck of the fleet beyond it),
 * not for its turn to be written again (issue 55): whoever holds the coordinator's token could
 * otherwise rewrite every waiter's turn every second and have each of them read the fleet each time.
 */
export function waitOf(room: NoRoom, turn: TurnVerdict | undefined): { wait?: LockWait } {
  const again = recheckOf(room);
  const live = turn?.kind === 'wait';
  if (!live && again.recheck === undefined) return {};
  return { wait: { for: live ? 'turn' : 'slot', ...again, ...readinessOf(room) } };
}

/** The refusal when a live coordinator has given this node no turn (yet); undefined otherwise. */
export function waitForTurn(turn: TurnVerdict | undefined): AcquireResult | undefined {
  if (turn?.kind !== 'wait') return undefined;
  const gate = turn.gate === undefined ? {} : { gate: turn.gate };
  return { acquired: false, holders: [], reason: turn.reason, ...gate, wait: { for: 'turn' } };
}
