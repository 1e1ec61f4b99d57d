// Is there room in the lock for this node: the one rule, pure. The acquisition (DaemonSetLock) asks
// it with the nodes in a reboot cycle it listed; the wait for a slot (slot-wait.ts), which lists
// nothing, asks it of the entries it watches. So a waiter sleeps only while an acquisition seeing the
// same entries would give it no slot; it may wake for a slot that a node in a cycle without an entry
// still counts against (the acquisition then refuses, and the waiter waits for the next change).
import { isManualEntry, type LockEntry } from './kured-lock-format.js';

/** A node in a reboot cycle whose slot is missing from the lock (it still counts), with its group. */
export interface NodeInCycle {
  name: string;
  /** Its --group-label value ('' without one, or without groups). */
  group: string;
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
  /** This node's group under --group-concurrency; undefined: no group limit. */
  group: string | undefined;
  /** --concurrency. */
  concurrency: number;
  /** --group-label/--group-concurrency; undefined without. */
  groups: { label: string; concurrency: number } | undefined;
}

/** The answer: room, or why not. */
export type Room =
  | { room: true }
  /** kured's manual lock (an entry without a creation time): every slot held until it is removed. */
  | { room: false; why: 'manual'; entry: LockEntry }
  /** More live entries than the lock's maxOwners or --concurrency allow: no new slot for anyone. */
  | { room: false; why: 'forged' }
  /** Every slot taken by the other entries and the nodes in a cycle without one (`inCycle`: names). */
  | { room: false; why: 'full'; others: readonly LockEntry[]; inCycle: readonly string[] }
  /** Every slot of this node's `group` taken (`holders`: entries and nodes in a cycle counting against it). */
  | { room: false; why: 'group-full'; group: string; holders: string[] };

/** Does `entry` count against `group`: a slot of that group, or one that records no group (kured's)? */
function countsAgainst(entry: LockEntry, group: string): boolean {
  const recorded = entry.metadata.group;
  return typeof recorded !== 'string' || recorded === group;
}

/** Could this node take a slot now, by the lock's entries (and the nodes in a cycle, when known)? */
export function roomFor(q: RoomQuestion): Room {
  const manual = q.live.find(isManualEntry);
  if (manual !== undefined) return { room: false, why: 'manual', entry: manual };
  if (q.live.length > Math.min(q.declared, q.concurrency)) return { room: false, why: 'forged' };
  const others = q.live.filter((e) => e.nodeID !== q.nodeId);
  const inCycle = q.inCycle ?? [];
  if (others.length + inCycle.length >= q.concurrency) {
    return { room: false, why: 'full', others, inCycle: inCycle.map((n) => n.name) };
  }
  const { groups, group } = q;
  if (groups === undefined || group === undefined) return { room: true };
  const holders = [
    ...others.filter((e) => countsAgainst(e, group)).map((e) => e.nodeID),
    ...inCycle.filter((n) => n.group === group).map((n) => n.name),
  ];
  return holders.length < groups.concurrency
    ? { room: true }
    : { room: false, why: 'group-full', group, holders };
}
