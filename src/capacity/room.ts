// Is there room in the lock for this node: the one rule, pure. The acquisition (DaemonSetLock) asks
// it with the nodes in a reboot cycle it listed, the unavailable nodes and the control plane it
// looked up (fleet-census.ts); the wait for a slot (slot-wait.ts), which lists nothing, asks it of the
// entries it watches. So a waiter sleeps only while an acquisition seeing the same entries would give
// it no slot; it may wake for a slot that a node in a cycle without an entry, an unavailable node or
// the control-plane rule still holds back (the acquisition then refuses, and the waiter waits for the
// next change).
import type { FleetGate } from './gates.js';
import { waveRoom, type WaveFacts, type WaveRoom } from './wave-gate.js';

/**
 * A slot of the lock as the rule counts it: its node, whether it records a creation time (kured's
 * manual lock records none, and holds every slot), and its metadata (the group it records). The
 * lock's parsed entry (src/lock/kured-lock-format.ts) is one; the coordinator makes them of its view.
 */
export interface Slot {
  nodeID: string;
  /** When the slot was taken, in ms since the epoch; undefined: kured's manual lock. */
  createdMs: number | undefined;
  metadata: Readonly<Record<string, unknown>>;
}

/** kured's manual lock: a slot that records no creation time. It holds every slot. */
export function isManualSlot(slot: Slot): boolean {
  return slot.createdMs === undefined;
}

/**
 * The group recorded for a node not known to be in the asking node's group: never equal to a label
 * value (label values hold no NUL), so it counts against no group, only the fleet.
 */
export const OTHER_GROUP = '\u0000other';

/** A node in a reboot cycle whose slot is missing from the lock (it still counts), with its group. */
export interface NodeInCycle {
  name: string;
  /** Its --group-label value ('' without one, or without groups). */
  group: string;
}

/**
 * The unavailable nodes (NotReady, unreachable, cordoned by someone else) that take slots under
 * --count-unavailable: not this node, none holding a slot or in a cycle. `more` and `moreInGroup`
 * count those a census cut short did not name (in all, and in this node's group).
 */
export interface Unavailable {
  nodes: readonly NodeInCycle[];
  more: number;
  moreInGroup: number;
}

/** For a control-plane node: the rest of the control plane, and the workers it lets go first. */
export interface ControlPlaneQuestion {
  /** The other control-plane nodes: none of them may hold a slot or be in a cycle (one at a time). */
  peers: readonly string[];
  /**
   * Workers waiting for a slot or in their reboot cycle (control plane last): how many, and some
   * names. undefined: not judged (--control-plane-last=false, or the coordinator gave the turn).
   */
  workersAhead: { count: number; names: readonly string[] } | undefined;
}

/** What the rule looks at. */
export interface RoomQuestion<S extends Slot = Slot> {
  /** The lock's live entries (not expired for this reader), this node's own among them or not. */
  live: readonly S[];
  /** This node: its own entry counts in the lock's claim, never as a slot held against it. */
  nodeId: string;
  /** The slots the annotation itself allows (LockState.declared: its maxOwners). */
  declared: number;
  /** Nodes in a reboot cycle without an entry, when known; undefined: not looked up (none counted). */
  inCycle?: readonly NodeInCycle[];
  /** Unavailable nodes that take slots, when known; undefined: not looked up (none counted). */
  unavailable?: Unavailable;
  /** This node's group under --group-concurrency; undefined: no group limit. */
  group: string | undefined;
  /** --concurrency, resolved for the fleet now (budget.ts). */
  concurrency: number;
  /**
   * --group-label/--group-concurrency (resolved for this node's group), and the group's members by
   * their label when known (a slot of a member counts against the group whatever group its entry
   * records); undefined without.
   */
  groups: { label: string; concurrency: number; members?: ReadonlySet<string> } | undefined;
  /** This node is a control-plane node; undefined: it is not (or the rule is not asked). */
  controlPlane?: ControlPlaneQuestion;
  /**
   * --max-unhealthy-nodes: the other nodes that are not Ready, unreachable or cordoned by someone
   * else (none in a cycle or holding a slot: "n3 not ready"), at most `max`. undefined: no such gate.
   */
  health?: FleetCap;
  /** --max-quarantined: the other quarantined nodes, at most `max` (past it the wave halts). */
  quarantine?: FleetCap;
  /**
   * The wave's gates (wave-gate.ts): slow start and soak, the failure budget, one group at a time;
   * undefined: none configured (or the node in no wave).
   */
  wave?: WaveFacts;
}

/** A fleet-wide cap: the nodes that count against it now, and how many may. */
export interface FleetCap {
  max: number;
  nodes: readonly string[];
}

/** The answer: room, or why not (`S`: the slots as the asker gave them, named back in a refusal). */
export type Room<S extends Slot = Slot> =
  | { room: true }
  /** kured's manual lock (an entry without a creation time): every slot held until it is removed. */
  | { room: false; why: 'manual'; entry: S }
  /** More live entries than the lock's maxOwners or --concurrency allow: no new slot for anyone. */
  | { room: false; why: 'forged' }
  /** Another control-plane node holds a slot or is in its cycle: one at a time. */
  | { room: false; why: 'control-plane-busy'; holder: string }
  /**
   * Every slot taken by the other entries, the nodes in a cycle without one (`inCycle`: names) and
   * the unavailable nodes (`unavailable`: names, `more` not named).
   */
  | {
      room: false;
      why: 'full';
      others: readonly S[];
      inCycle: readonly string[];
      unavailable?: { names: readonly string[]; more: number };
    }
  /** Every slot of this node's `group` taken (`holders`: entries, nodes in a cycle and unavailable nodes counting against it). */
  | { room: false; why: 'group-full'; group: string; holders: string[] }
  /** A control-plane node while workers still wait for a reboot (control plane last). */
  | { room: false; why: 'workers-first'; count: number; names: readonly string[] }
  /** More other nodes unhealthy than --max-unhealthy-nodes allows. */
  | { room: false; why: 'unhealthy'; max: number; nodes: readonly string[] }
  /** More other nodes quarantined than --max-quarantined allows: the wave halts. */
  | { room: false; why: 'quarantined'; max: number; nodes: readonly string[] }
  /** The wave's budget spent, its slow start or another group first (wave-gate.ts). */
  | WaveRoom;

/** A refusal: no room, and why. */
export type NoRoom<S extends Slot = Slot> = Exclude<Room<S>, { room: true }>;

/** Does `entry` count against `group`: a slot of that group, or one that records no group (kured's)? */
function countsAgainst(entry: Slot, group: string): boolean {
  const recorded = entry.metadata.group;
  return typeof recorded !== 'string' || recorded === group;
}

/** The other control-plane node that holds a slot or is in a cycle, if any. */
function busyPeer<S extends Slot>(q: RoomQuestion<S>, others: readonly S[]): string | undefined {
  const peers = new Set(q.controlPlane?.peers ?? []);
  if (peers.size === 0) return undefined;
  return [...others.map((e) => e.nodeID), ...(q.inCycle ?? []).map((n) => n.name)].find((n) => peers.has(n));
}

/**
 * Are all the slots taken by `taken` nodes (slots held, nodes in a cycle without one, turns promised,
 * unavailable nodes that count)? The one comparison of fullness: the rule below, and a plan that
 * stops asking it once no waiter could get an answer but "full" (turn-plan.ts).
 */
export function allTaken(taken: number, concurrency: number): boolean {
  return taken >= concurrency;
}

/** Every slot taken, counting the unavailable nodes too; undefined when one is free. */
function fullness<S extends Slot>(q: RoomQuestion<S>, others: readonly S[]): Room<S> | undefined {
  const inCycle = q.inCycle ?? [];
  const unavailable = q.unavailable;
  const down = unavailable === undefined ? 0 : unavailable.nodes.length + unavailable.more;
  if (!allTaken(others.length + inCycle.length + down, q.concurrency)) return undefined;
  return {
    room: false,
    why: 'full',
    others,
    inCycle: inCycle.map((n) => n.name),
    ...(down === 0 || unavailable === undefined
      ? {}
      : { unavailable: { names: unavailable.nodes.map((n) => n.name), more: unavailable.more } }),
  };
}

/** Every slot of this node's group taken; undefined when one is free (or there is no group limit). */
function groupFullness<S extends Slot>(q: RoomQuestion<S>, others: readonly S[]): Room<S> | undefined {
  const { groups, group } = q;
  if (groups === undefined || group === undefined) return undefined;
  const down = q.unavailable?.nodes.filter((n) => n.group === group) ?? [];
  const holders = [
    ...others
      .filter((e) => countsAgainst(e, group) || groups.members?.has(e.nodeID) === true)
      .map((e) => e.nodeID),
    ...(q.inCycle ?? []).filter((n) => n.group === group).map((n) => n.name),
    ...down.map((n) => n.name),
  ];
  const unnamed = q.unavailable?.moreInGroup ?? 0;
  if (holders.length + unnamed < groups.concurrency) return undefined;
  if (unnamed > 0) holders.push(`${unnamed} more unavailable`);
  return { room: false, why: 'group-full', group, holders };
}

/** The control plane one at a time, and last (`ask.controlPlane`); undefined when it may go. */
function controlPlaneRule<S extends Slot>(q: RoomQuestion<S>, others: readonly S[]): Room<S> | undefined {
  const busy = busyPeer(q, others);
  if (busy !== undefined) return { room: false, why: 'control-plane-busy', holder: busy };
  const ahead = q.controlPlane?.workersAhead;
  if (ahead !== undefined && ahead.count > 0)
    return { room: false, why: 'workers-first', count: ahead.count, names: ahead.names };
  return undefined;
}

/** A fleet-wide cap exceeded, as its refusal; undefined within it (or without the cap). */
function overCap<S extends Slot>(
  why: 'unhealthy' | 'quarantined',
  cap: FleetCap | undefined,
): Room<S> | undefined {
  if (cap === undefined || cap.nodes.length <= cap.max) return undefined;
  return { room: false, why, max: cap.max, nodes: cap.nodes };
}

/** Could this node take a slot now, by the lock's entries (and what the acquisition looked up)? */
export function roomFor<S extends Slot>(q: RoomQuestion<S>): Room<S> {
  const manual = q.live.find(isManualSlot);
  if (manual !== undefined) return { room: false, why: 'manual', entry: manual };
  if (q.live.length > Math.min(q.declared, q.concurrency)) return { room: false, why: 'forged' };
  const others = q.live.filter((e) => e.nodeID !== q.nodeId);
  return (
    overCap<S>('quarantined', q.quarantine) ??
    waveRoom(q.wave, q.concurrency) ??
    controlPlaneRule(q, others) ??
    overCap<S>('unhealthy', q.health) ??
    fullness(q, others) ??
    groupFullness(q, others) ?? { room: true }
  );
}

/** The fleet gate each refusal names (a table: a new refusal without its row does not compile). */
const GATES: Readonly<Record<NoRoom['why'], FleetGate | undefined>> = {
  manual: undefined,
  forged: undefined,
  // only when unavailable nodes filled it (below); else the plain slots
  full: 'count-unavailable',
  'group-full': 'group-concurrency',
  'control-plane-busy': 'control-plane',
  'workers-first': 'control-plane-last',
  unhealthy: 'max-unhealthy-nodes',
  quarantined: 'max-quarantined',
  'wave-halted': 'max-failures',
  'slow-start': 'slow-start',
  'group-order': 'group-order',
};

/** The fleet gate a refusal names, beyond the plain slots (undefined: the slots, or the lock itself). */
export function gateOf(room: NoRoom): FleetGate | undefined {
  if (room.why === 'full' && room.unavailable === undefined) return undefined;
  return GATES[room.why];
}
