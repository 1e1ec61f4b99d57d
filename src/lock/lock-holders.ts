// What DaemonSetLock asks the cluster about the nodes a lock names: whether a holder's Node still
// exists (a slot of a deleted node is reclaimed), which nodes are in a reboot cycle without a slot
// (they still count), and whether a holder was last seen in no kured-ts cycle (for the reasons).
import { monotonicMs } from '../clock/clock.js';
import { isNotFound } from '../kube/errors.js';
import { CYCLE_LABEL } from '../node/cycle.js';
import type { LockEntry } from './kured-lock-format.js';
import { isManualSlot } from '../capacity/room.js';
import type { DaemonSetLockOptions, HolderSighting } from './lock-state.js';
import { OTHER_GROUP, type NodeInCycle } from '../capacity/room.js';
import { groupSelector } from '../capacity/fleet-census.js';

/**
 * How long a holder's Node, once seen to exist, is not looked up again for reclaim: hundreds of
 * waiting agents woken by every lock change would otherwise each GET every holder.
 */
const HOLDER_CHECK_MS = 60_000;

export class LockHolders {
  /** Each holder's Node as last seen to exist, for reclaim checks and the reasons of a full lock. */
  private readonly seen = new Map<string, HolderSighting>();

  constructor(private readonly o: DaemonSetLockOptions) {}

  /** Was this holder's Node, when last looked up, in no kured-ts cycle? */
  seenOutsideCycle(nodeID: string): boolean {
    return this.seen.get(nodeID)?.inCycle === false;
  }

  /**
   * Nodes other than ours in a reboot cycle (by label) whose slot is missing from `live` (and, as
   * `labelled`, every node in a cycle: only its own agent may set that label on a node), each with
   * its group when it is this node's `group` (OTHER_GROUP otherwise, or '' without groups): rows of
   * a fresh read (not the watch cache: a node that has just begun its cycle must count), and with
   * groups a second one of this group's.
   */
  async inCycleWithoutSlot(
    live: readonly LockEntry[],
    group: string | undefined,
    signal?: AbortSignal,
  ): Promise<{ withoutSlot: NodeInCycle[]; labelled: ReadonlySet<string> }> {
    const selector = `${CYCLE_LABEL}=true`;
    const rows = await this.o.kube.listNodeRows({ labelSelector: selector }, signal);
    const label = this.o.groups?.label;
    const mine =
      label === undefined || group === undefined
        ? undefined
        : new Set(
            (
              await this.o.kube.listNodeRows(
                { labelSelector: `${selector},${groupSelector(label, group)}` },
                signal,
              )
            ).map((r) => r.name),
          );
    const holders = new Set([this.o.nodeId, ...live.map((e) => e.nodeID)]);
    const withoutSlot = rows
      .filter((r) => r.name !== '' && !holders.has(r.name))
      .map((r) => ({
        name: r.name,
        group: mine === undefined ? '' : mine.has(r.name) ? (group ?? '') : OTHER_GROUP,
      }));
    return { withoutSlot, labelled: new Set(rows.map((r) => r.name)) };
  }

  /** Drops slots whose Node is gone (never kured's manual lock, which records no creation time). */
  async withoutDeleted(live: readonly LockEntry[], signal?: AbortSignal): Promise<LockEntry[]> {
    const kept: LockEntry[] = [];
    for (const entry of live) {
      if (!isManualSlot(entry) && (await this.gone(entry.nodeID, signal))) {
        this.o.log.info('lock reclaimed from deleted node', { node: this.o.nodeId, holder: entry.nodeID });
        continue;
      }
      kept.push(entry);
    }
    return kept;
  }

  private async gone(name: string, signal?: AbortSignal): Promise<boolean> {
    if (name === '') return false;
    const now = monotonicMs(this.o.clock);
    const seen = this.seen.get(name);
    if (seen !== undefined && now - seen.at < HOLDER_CHECK_MS) return false;
    try {
      const node = await this.o.kube.getNode(name, signal);
      this.seen.set(name, { at: now, inCycle: node.metadata?.labels?.[CYCLE_LABEL] !== undefined });
      return false;
    } catch (err) {
      if (isNotFound(err)) return true;
      throw err;
    }
  }
}
