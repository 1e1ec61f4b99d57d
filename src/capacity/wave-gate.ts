// The wave's gates, pure: slow start with its soak, the failure budget, one group at a time. Part of
// the one room rule (roomFor, room.ts): the node about to take a slot asks it with what it counted
// itself from the nodes' own labels (wave-census.ts), the coordinator with what its view of the
// Nodes shows (turn-plan.ts), so that the coordinator gives no turn the agent would refuse and a
// forged coordinator can lift none of them.
//
// Slow start (Skyhook's initialBatch and growth): the wave goes in steps, the first of --wave-start
// nodes, each next one larger (--wave-growth linear:K or x2); a step may start only once every node
// of the steps before it has settled: back and Ready for --soak (on its own clock: it says so itself),
// or failed (the budget, not the steps, stops a wave on failures). Once a step would be as large as
// --concurrency the slow start is over and only the slots count.
import type { WaveGrowth } from '../config/config.js';
import { shortDuration } from '../text/duration.js';

/** The slow start as configured, and what the asking node counted of its wave. */
interface StepFacts {
  /** --wave-start (resolved: at least 1). */
  start: number;
  growth: WaveGrowth;
  /** --soak, for the reason. */
  soakMs: number;
  /** The other nodes of the wave that took a slot: in their cycle, back, soaked or failed. */
  entered: readonly string[];
  /** Of those, the settled: soaked and Ready, or failed. */
  settled: readonly string[];
}

/** What the wave's gates look at (RoomQuestion.wave); each part only when its flag is set. */
export interface WaveFacts {
  /** The asking node's wave. */
  wave: string;
  steps?: StepFacts;
  /** --max-failures resolved, and the wave's failed nodes no `kured-ts resume` acknowledged. */
  budget?: { max: number; failed: readonly string[] };
  /** --group-order sequential. */
  order?: OrderFacts;
}

/** One group at a time: this node's group, and what holds it back. */
interface OrderFacts {
  /** This node's group ('' for the nodes without the label). */
  group: string;
  /** Nodes of the wave in other groups still in their cycle or back but not soaked (one group at a time). */
  busy: readonly string[];
  /** A node of the wave that waits in a group before this one, when there is one. */
  earlier?: { group: string; node: string };
}

/** A refusal of the wave's gates (a Room). */
export type WaveRoom =
  /** The wave's failure budget is spent: it halts until `kured-ts resume`. */
  | { room: false; why: 'wave-halted'; wave: string; max: number; failed: readonly string[] }
  /** Slow start: `allowed` nodes of the wave may have taken a slot until `need` of them settled. */
  | {
      room: false;
      why: 'slow-start';
      wave: string;
      entered: number;
      allowed: number;
      settled: number;
      soakMs: number;
      /** The entered nodes not settled yet (what the next step waits for). */
      unsettled: readonly string[];
    }
  /** Another group goes first (--group-order sequential). */
  | {
      room: false;
      why: 'group-order';
      wave: string;
      group: string;
      busy: readonly string[];
      earlier?: { group: string; node: string };
    };

/**
 * How many nodes of a wave may have taken a slot once `settled` of them settled: the end of the first
 * step not yet settled; Infinity once a step would be as large as `concurrency` (slow start over).
 */
export function stepAllowance(
  settled: number,
  start: number,
  growth: WaveGrowth,
  concurrency: number,
): number {
  let size = Math.max(1, start);
  let end = 0;
  // each round is one step; a step of `concurrency` nodes or more ends the slow start
  for (let step = 0; step < 64; step++) {
    if (size >= concurrency) return Number.POSITIVE_INFINITY;
    end += size;
    if (settled < end) return end;
    size = nextStep(size, growth);
  }
  return Number.POSITIVE_INFINITY;
}

function nextStep(size: number, growth: WaveGrowth): number {
  switch (growth.kind) {
    case 'none':
      return Number.POSITIVE_INFINITY;
    case 'linear':
      return size + growth.step;
    case 'double':
      return size * 2;
  }
}

/** The slow start's refusal, or undefined when this node may be the next of its wave. */
function slowStart(wave: string, steps: StepFacts, concurrency: number): WaveRoom | undefined {
  const settled = new Set(steps.settled);
  const allowed = stepAllowance(settled.size, steps.start, steps.growth, concurrency);
  if (steps.entered.length < allowed) return undefined;
  return {
    room: false,
    why: 'slow-start',
    wave,
    entered: steps.entered.length,
    allowed,
    settled: settled.size,
    soakMs: steps.soakMs,
    unsettled: steps.entered.filter((n) => !settled.has(n)),
  };
}

/** The wave's refusal for the asking node (budget, group order, slow start); undefined: none. */
export function waveRoom(facts: WaveFacts | undefined, concurrency: number): WaveRoom | undefined {
  if (facts === undefined) return undefined;
  const { wave, budget, order, steps } = facts;
  if (budget !== undefined && budget.failed.length >= budget.max)
    return { room: false, why: 'wave-halted', wave, max: budget.max, failed: budget.failed };
  if (order !== undefined && (order.busy.length > 0 || order.earlier !== undefined))
    return {
      room: false,
      why: 'group-order',
      wave,
      group: order.group,
      busy: order.busy,
      ...(order.earlier === undefined ? {} : { earlier: order.earlier }),
    };
  return steps === undefined ? undefined : slowStart(wave, steps, concurrency);
}

/**
 * Does group `a` go before group `b` (--group-order sequential:ORDER)? The groups named in `order` first,
 * in that order, then the others by name, then the nodes without the label ('').
 */
export function groupBefore(order: readonly string[]): (a: string, b: string) => boolean {
  const rank = (g: string): [number, number, string] => {
    if (g === '') return [2, 0, ''];
    const i = order.indexOf(g);
    return i >= 0 ? [0, i, ''] : [1, 0, g];
  };
  return (a, b) => {
    const [x, y] = [rank(a), rank(b)];
    return x[0] !== y[0] ? x[0] < y[0] : x[1] !== y[1] ? x[1] < y[1] : x[2] < y[2];
  };
}

/** `names`, the first `shown` and how many more. */
function listed(names: readonly string[], shown = 5): string {
  const more = names.length > shown ? ` and ${names.length - shown} more` : '';
  return `${names.slice(0, shown).join(', ')}${more}`;
}

/** A group as people read it. */
function groupName(group: string): string {
  return group === '' ? 'the nodes without the group label' : `group ${group}`;
}

/** How the reason of a wave halted by its budget begins (the simulator and the docs tell it by this). */
const WAVE_HALT_REASON = 'wave halted';

/** The refusal in words an operator can act on (the agent's status and the coordinator's advice). */
export function describeWaveRoom(room: WaveRoom): string {
  switch (room.why) {
    case 'wave-halted':
      return `${WAVE_HALT_REASON}: ${room.failed.length} node(s) of wave ${room.wave} failed (--max-failures ${room.max}): ${listed(room.failed)}; no new cycle starts until \`kured-ts resume\``;
    case 'slow-start': {
      const soak = room.soakMs > 0 ? ` and Ready for ${shortDuration(room.soakMs)}` : '';
      const waiting = room.unsettled.length === 0 ? '' : `: ${listed(room.unsettled)}`;
      return `slow start: ${room.entered} node(s) of wave ${room.wave} have gone, ${room.allowed} may until those before are back${soak} (${room.settled} settled; waiting for ${room.entered - room.settled}${waiting})`;
    }
    case 'group-order': {
      const busy = room.busy.length === 0 ? '' : `${listed(room.busy)} of another group not done yet`;
      const earlier =
        room.earlier === undefined
          ? ''
          : `${groupName(room.earlier.group)} goes first (${room.earlier.node} waits)`;
      return `one group at a time (--group-order sequential): ${[busy, earlier].filter((s) => s !== '').join('; ')}; ${groupName(room.group)} waits`;
    }
  }
}

/**
 * The failed nodes of `wave` that count against its budget: those `kured-ts resume` acknowledged
 * (`resumed`, for that wave) left out.
 */
export function unacknowledged(
  failed: readonly string[],
  wave: string,
  resumed: { wave: string; nodes: readonly string[] } | undefined,
): string[] {
  const acked = new Set(resumed?.wave === wave ? resumed.nodes : []);
  return failed.filter((n) => !acked.has(n));
}
