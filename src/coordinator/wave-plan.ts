// The wave's gates (src/capacity/wave-gate.ts) as the coordinator asks them, from its one view of the
// Nodes: the same facts the node about to go counts from the label-selected rows (wave-census.ts),
// here from the records the view keeps of each node's wave labels, so that the coordinator gives no
// turn the agent would refuse (a turn refused lapses after its grace, and every waiter would be
// woken in turn for nothing). The agent judges them again itself: nothing here lets a node go.
import type { WaveGrowth } from '../config/config.js';
import type { LockEntry } from '../lock/kured-lock-format.js';
import type { NodeInCycle, NoRoom } from '../capacity/room.js';
import { groupBefore, unacknowledged, type WaveFacts } from '../capacity/wave-gate.js';
import type { NodeRecord } from './fleet-view.js';

/** The wave's gates as the coordinator is configured with them (the agents' own flags). */
export interface WavePlanConfig {
  /** --wave-start; 0 = no slow start. */
  start: number;
  growth: WaveGrowth;
  soakMs: number;
  /** The slow start is judged (budgetsOf: --wave-start below the slots). */
  slowStart: boolean;
  /** --max-failures resolved for the fleet; undefined = no budget. */
  maxFailures?: number;
  /** --group-order sequential: the order given (then by name, the unlabelled last). */
  order?: readonly string[];
  /** The nodes of a wave, as the view indexes them by their wave label. */
  members: (wave: string) => Iterable<NodeRecord>;
  /** The failures `kured-ts resume` acknowledged (the lock's DaemonSet). */
  resumed?: { wave: string; nodes: readonly string[] };
}

/** What counts as gone: the slots, and the nodes in a cycle without one or promised a turn. */
export interface Claimed {
  live: readonly LockEntry[];
  claims: readonly NodeInCycle[];
}

/** The wave's facts for `node` (its record) over the view, as its agent would count them. */
export function waveFactsOf(
  config: WavePlanConfig,
  node: NodeRecord,
  claimed: Claimed,
): WaveFacts | undefined {
  const wave = node.wave;
  if (wave === undefined) return undefined;
  const members = [...config.members(wave)].filter((r) => r.name !== node.name);
  const failedAll = members.filter((r) => r.waveState === 'failed').map((r) => r.name);
  const facts: WaveFacts = { wave };
  if (config.maxFailures !== undefined)
    facts.budget = {
      max: config.maxFailures,
      failed: unacknowledged(failedAll, wave, config.resumed).sort(),
    };
  if (config.slowStart) facts.steps = stepsOf(config, node, members, claimed);
  if (config.order !== undefined)
    facts.order = orderOf(config.order, node, members, { claimed, failed: failedAll });
  return facts;
}

/** Who of the wave has gone (slots and claims too) and who has settled. */
function stepsOf(
  config: WavePlanConfig,
  node: NodeRecord,
  members: readonly NodeRecord[],
  claimed: Claimed,
): NonNullable<WaveFacts['steps']> {
  const gone = members.filter(
    (r) => r.inCycle || r.waveState === 'back' || r.waveState === 'soaked' || r.waveState === 'failed',
  );
  const others = [...claimed.live.map((e) => e.nodeID), ...claimed.claims.map((c) => c.name)];
  const entered = [...new Set([...gone.map((r) => r.name), ...others])].filter((n) => n !== node.name);
  const settled = members
    .filter((r) => (r.waveState === 'soaked' && r.ready === true) || r.waveState === 'failed')
    .map((r) => r.name);
  return {
    start: config.start,
    growth: config.growth,
    soakMs: config.soakMs,
    entered: entered.sort(),
    settled: settled.sort(),
  };
}

/** One group at a time: the busy nodes of other groups, and a waiter of a group before this one. */
function orderOf(
  order: readonly string[],
  node: NodeRecord,
  members: readonly NodeRecord[],
  taken: { claimed: Claimed; failed: readonly string[] },
): NonNullable<WaveFacts['order']> {
  const { claimed, failed } = taken;
  const group = node.group;
  const gone = new Set(failed);
  const byName = new Map(members.map((r) => [r.name, r]));
  const claimedElsewhere = claimed.claims
    .filter((c) => byName.get(c.name)?.group !== group && byName.has(c.name))
    .map((c) => c.name);
  const busy = members
    .filter((r) => r.group !== group && (r.inCycle || r.waveState === 'back') && !gone.has(r.name))
    .map((r) => r.name);
  const before = groupBefore(order);
  const earlier = members.find(
    (r) => r.waveState === 'waiting' && !r.quarantined && r.group !== group && before(r.group, group),
  );
  return {
    group,
    busy: [...new Set([...busy, ...claimedElsewhere])].sort(),
    ...(earlier === undefined ? {} : { earlier: { group: earlier.group, node: earlier.name } }),
  };
}

/** A waiter's wave and group, as the plan keys the wave's refusals. */
export interface WaveKey {
  wave: string;
  group: string;
}

const inGroup = (k: WaveKey): string => `${k.wave}\u0000${k.group}`;

/**
 * A wave's refusal holds every waiter of that wave (slow start, budget) or of that wave and group
 * (group order) alike until a turn is given: the plan asks it once, not for each waiter (on patch
 * night nearly every node waits, and a wave counts its members).
 */
export class WaveRefusals {
  private readonly refused = new Set<string>();

  constructor(private readonly keyOf: (node: string) => WaveKey | undefined) {}

  /** Is `node` held by a refusal of its wave (or of its wave and group) in this plan? */
  holds(node: string): boolean {
    const k = this.keyOf(node);
    return k !== undefined && (this.refused.has(k.wave) || this.refused.has(inGroup(k)));
  }

  /** Notes the refusal of `node`, when it is one of its wave's. */
  note(node: string, room: NoRoom): void {
    const k = this.keyOf(node);
    if (k === undefined) return;
    if (room.why === 'slow-start' || room.why === 'wave-halted') this.refused.add(k.wave);
    if (room.why === 'group-order') this.refused.add(inGroup(k));
  }

  /** A turn was given: the wave's counts changed, every waiter is asked again. */
  clear(): void {
    this.refused.clear();
  }
}
