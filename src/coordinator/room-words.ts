// A refusal of the room rule (src/capacity/room.ts) in a few words, for the waiters: the coordinator
// publishes why it gives no turn now in its advice, and every waiter shows it in its status.
import type { NoRoom } from '../capacity/room.js';
import { describeWaveRoom } from '../capacity/wave-gate.js';
import { othersNodes } from '../lock/lock-reasons.js';
import { HELD_REASON_MAX_CHARS, bounded } from '../queue/coordinator-lease.js';

/** `list`, the first five and how many more. */
function names(list: readonly string[]): string {
  return list.length <= 5 ? list.join(', ') : `${list.slice(0, 5).join(', ')} and ${list.length - 5} more`;
}

/** Each refusal in a few words. */
const WORDS: { [W in NoRoom['why']]: (room: Extract<NoRoom, { why: W }>) => string } = {
  manual: (r) => `kured's manual lock (${r.entry.nodeID}) holds every slot`,
  forged: () => 'the lock names more slots than it or --concurrency allow',
  'control-plane-busy': (r) => `control plane one at a time: ${r.holder} holds a slot or is in its cycle`,
  'workers-first': (r) => `control plane last: ${r.count} worker(s) still waiting for a reboot or rebooting`,
  unhealthy: (r) =>
    `${othersNodes(r.nodes.length)} unhealthy (--max-unhealthy-nodes ${r.max}): ${names(r.nodes)}`,
  quarantined: (r) =>
    `halted: ${othersNodes(r.nodes.length)} quarantined (--max-quarantined ${r.max}): ${names(r.nodes)}`,
  'wave-halted': describeWaveRoom,
  'slow-start': describeWaveRoom,
  'group-order': describeWaveRoom,
  'group-full': (r) =>
    `group ${r.group === '' ? '(no label)' : r.group}: its slots taken by ${names(r.holders)}`,
  full: (r) => {
    const down = r.unavailable?.names ?? [];
    const taking = [...r.others.map((e) => e.nodeID), ...r.inCycle];
    const unavailable = down.length === 0 ? '' : `; ${names(down)} unavailable (--count-unavailable)`;
    return `every slot taken${taking.length === 0 ? '' : ` by ${names(taking)}`}${unavailable}`;
  },
};

/** A refusal in a few words, for the waiters (the coordinator publishes it: HELD_REASON_MAX_CHARS). */
export function describeRoom(room: NoRoom): string {
  return (WORDS[room.why] as (r: NoRoom) => string)(room);
}

/**
 * The advice's `held` for a plan that gives no turn: its refusal in words, and the nodes other
 * operators are taking out (the waiters' statuses show who: "node-7: taken out by Karpenter").
 */
export function heldAdvice(
  plan: { held?: string; gate?: string },
  takenOut: readonly string[],
): { held?: { reason: string; gate?: string } } {
  if (plan.held === undefined) return {};
  const others = takenOut.length === 0 ? '' : `; ${takenOut.slice(0, 3).join('; ')}`;
  const more = takenOut.length > 3 ? ` and ${takenOut.length - 3} more` : '';
  return {
    held: {
      reason: bounded(`${plan.held}${others}${more}`, HELD_REASON_MAX_CHARS),
      ...(plan.gate === undefined ? {} : { gate: plan.gate }),
    },
  };
}
