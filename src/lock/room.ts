// Is there room in the lock for this node: the one rule, pure. The acquisition (DaemonSetLock) asks
// it with the nodes in a reboot cycle it listed, the unavailable nodes and the control plane it
// looked up (fleet-census.ts); the wait for a slot (slot-wait.ts), which lists nothing, asks it of the
// entries it watches. So a waiter sleeps only while an acquisition seeing the same entries would give
// it no slot; it may wake for a slot that a node in a cycle without an entry, an unavailable node or
// the control-plane rule still holds back (the acquisition then refuses, and the waiter waits for the
// next change).
import { isManualEntry, type LockEntry } from './kured-lock-format.js';
import type { FleetGate } from './lock.js';
import { waveRoom, type WaveFacts, type WaveRoom } from './wave-gate.js';

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
export interface RoomQuestion {
  /** The lock's live entries (not expired for this reader), this node's own among them or not. */
  live: readonly LockEntry[];
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

/** The answer: room, or why not. */
export type Room =
  | { room: true }
  /** kured's manual lock (an entry without a creation time): every slot held until it is removed. */
  | { room: false; why: 'manual'; entry: LockEntry }
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
      others: readonly LockEntry[];
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

/** Does `entry` count against `group`: a slot of that group, or one that records no group (kured's)? */
function countsAgainst(entry: LockEntry, group: string): boolean {
  const recorded = entry.metadata.group;
  return typeof recorded !== 'string' || recorded === group;
}

/** The other control-plane node that holds a slot or is in a cycle, if any. */
function busyPeer(q: RoomQuestion, others: readonly LockEntry[]): string | undefined {
  const peers = new Set(q.controlPlane?.peers ?? []);
  if (peers.size === 0) return undefined;
  return [...others.map((e) => e.nodeID), ...(q.inCycle ?? []).map((n) => n.name)].find((n) => peers.has(n));
}

/** Every slot taken, counting the unavailable nodes too; undefined when one is free. */
function fullness(q: RoomQuestion, others: readonly LockEntry[]): Room | undefined {
  const inCycle = q.inCycle ?? [];
  const unavailable = q.unavailable;
  const down = unavailable === undefined ? 0 : unavailable.nodes.length + unavailable.more;
  if (others.length + inCycle.length + down < q.concurrency) return undefined;
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
function groupFullness(q: RoomQuestion, others: readonly LockEntry[]): Room | undefined {
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
function controlPlaneRule(q: RoomQuestion, others: readonly LockEntry[]): Room | undefined {
  const busy = busyPeer(q, others);
  if (busy !== undefined) return { room: false, why: 'control-plane-busy', holder: busy };
  const ahead = q.controlPlane?.workersAhead;
  if (ahead !== undefined && ahead.count > 0)
    return { room: false, why: 'workers-first', count: ahead.count, names: ahead.names };
  return undefined;
}

/** A fleet-wide cap exceeded, as its refusal; undefined within it (or without the cap). */
function overCap(why: 'unhealthy' | 'quarantined', cap: FleetCap | undefined): Room | undefined {
  if (cap === undefined || cap.nodes.length <= cap.max) return undefined;
  return { room: false, why, max: cap.max, nodes: cap.nodes };
}

/** Could this node take a slot now, by the lock's entries (and what the acquisition looked up)? */
export function roomFor(q: RoomQuestion): Room {
  const manual = q.live.find(isManualEntry);
  if (manual !== undefined) return { room: false, why: 'manual', entry: manual };
  if (q.live.length > Math.min(q.declared, q.concurrency)) return { room: false, why: 'forged' };
  const others = q.live.filter((e) => e.nodeID !== q.nodeId);
  return (
    overCap('quarantined', q.quarantine) ??
    waveRoom(q.wave, q.concurrency) ??
    controlPlaneRule(q, others) ??
    overCap('unhealthy', q.health) ??
    fullness(q, others) ??
    groupFullness(q, others) ?? { room: true }
  );
}

/** The fleet gate each refusal names (a table: a new refusal without its row does not compile). */
const GATES: Readonly<Record<Exclude<Room, { room: true }>['why'], FleetGate | undefined>> = {
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
export function gateOf(room: Exclude<Room, { room: true }>): FleetGate | undefined {
  if (room.why === 'full' && room.unavailable === undefined) return undefined;
  return GATES[room.why];
}
