// What `kured-ts unlock` removes from the lock, decided as data: each entry removed or kept with
// its reason, and the nodes it refuses to free. The command reads the cluster and writes; this file
// only decides.
import { isManualSlot } from '../capacity/room.js';
import { entriesOf, formatMulti, formatSingle, type LockEntry, type LockValue } from './kured-lock-format.js';

/** What the operator asked to remove. */
export interface UnlockSelection {
  /** Entries naming these nodes. */
  nodes: readonly string[];
  /** kured's manual lock: entries that record no creation time. */
  manual: boolean;
  /** Entries whose node is gone, or is in no kured-ts cycle and not cordoned; an unparsable lock. */
  stale: boolean;
  /** Remove a named node's entry even while that node is in a kured-ts reboot cycle. */
  force: boolean;
}

/** What the cluster says of an entry's node; undefined when the Node does not exist. */
export interface HolderFacts {
  /** Carries the cycle label: a kured-ts reboot cycle is under way there. */
  inCycle: boolean;
  /** spec.unschedulable: cordoned, by anyone. */
  cordoned: boolean;
}

interface Removal {
  entry: LockEntry;
  why: string;
}

export interface UnlockPlan {
  remove: Removal[];
  keep: LockEntry[];
  /** Named nodes whose entry is not removed, and why (the command then writes nothing). */
  refused: { node: string; why: string }[];
  /** Named nodes the lock does not name. */
  absent: string[];
  /**
   * The annotation to write: a string, null to delete it, or undefined when nothing changes.
   */
  text: string | null | undefined;
}

/** Why a stale entry is stale, or undefined when its node may still be using it. */
function staleness(entry: LockEntry, facts: HolderFacts | undefined): string | undefined {
  if (isManualSlot(entry)) return undefined; // only --manual removes the manual lock
  if (facts === undefined) return 'its node no longer exists';
  if (facts.inCycle || facts.cordoned) return undefined;
  return 'its node is in no kured-ts cycle and not cordoned';
}

function namedRemoval(
  entry: LockEntry,
  facts: HolderFacts | undefined,
  force: boolean,
): Removal | { refused: string } {
  if (facts?.inCycle === true && !force) {
    return {
      refused: `${entry.nodeID} is in a kured-ts reboot cycle: its slot keeps other nodes from going down while it is; add --force only if its agent is gone for good`,
    };
  }
  const state =
    facts === undefined
      ? 'its node no longer exists'
      : facts.inCycle
        ? 'named, in a reboot cycle, --force'
        : 'named';
  return { entry, why: state };
}

/** Why `entry` goes, or a refusal for a named node, or undefined when it stays. */
function verdict(
  entry: LockEntry,
  facts: HolderFacts | undefined,
  selection: UnlockSelection,
): Removal | { refused: string } | undefined {
  if (selection.nodes.includes(entry.nodeID)) return namedRemoval(entry, facts, selection.force);
  if (selection.manual && isManualSlot(entry)) {
    return { entry, why: "kured's manual lock (it records no creation time)" };
  }
  const stale = selection.stale ? staleness(entry, facts) : undefined;
  return stale === undefined ? undefined : { entry, why: stale };
}

/** Decides which entries of `value` go, given what the cluster says of their nodes. */
export function planUnlock(
  value: LockValue,
  holders: ReadonlyMap<string, HolderFacts | undefined>,
  selection: UnlockSelection,
): UnlockPlan {
  const plan: UnlockPlan = { remove: [], keep: [], refused: [], absent: [], text: undefined };
  const entries = entriesOf(value);
  for (const entry of entries) {
    const v = verdict(entry, holders.get(entry.nodeID), selection);
    if (v === undefined) plan.keep.push(entry);
    else if ('refused' in v) {
      plan.refused.push({ node: entry.nodeID, why: v.refused });
      plan.keep.push(entry);
    } else plan.remove.push(v);
  }
  const inLock = new Set(entries.map((e) => e.nodeID));
  plan.absent = selection.nodes.filter((n) => !inLock.has(n));
  if (plan.remove.length > 0 && plan.refused.length === 0) plan.text = textOf(value, plan.keep);
  return plan;
}

/** The lock in its own form without the removed entries; null (delete) for an emptied single lock. */
function textOf(value: LockValue, keep: readonly LockEntry[]): string | null {
  if (value.form === 'multi') return formatMulti(value.maxOwners, keep);
  const [only] = keep;
  return only === undefined ? null : formatSingle(only);
}
