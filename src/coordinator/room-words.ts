// A refusal of the room rule (src/lock/room.ts) in a few words, for the waiters: the coordinator
// publishes why it gives no turn now in its advice, and every waiter shows it in its status.
import type { Room } from '../lock/room.js';
import { describeWaveRoom } from '../lock/wave-gate.js';
import { othersNodes } from '../lock/lock-reasons.js';

/** `list`, the first five and how many more. */
function names(list: readonly string[]): string {
  return list.length <= 5 ? list.join(', ') : `${list.slice(0, 5).join(', ')} and ${list.length - 5} more`;
}

type NoRoom = Exclude<Room, { room: true }>;

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
