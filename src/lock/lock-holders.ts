// What DaemonSetLock asks the cluster about the nodes a lock names: whether a holder's Node still
// exists (a slot of a deleted node is reclaimed), which nodes are in a reboot cycle without a slot
// (they still count), and whether a holder was last seen in no kured-ts cycle (for the reasons).
import { monotonicMs } from '../clock/clock.js';
import { isNotFound } from '../kube/errors.js';
import { CYCLE_LABEL } from '../node/cycle.js';
import { isManualEntry, type LockEntry } from './kured-lock-format.js';
import type { DaemonSetLockOptions, HolderSighting } from './lock-state.js';
import type { NodeInCycle } from './room.js';

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

  /** Nodes other than ours in a reboot cycle (by label) whose slot is missing from `live`, with their group. */
  async inCycleWithoutSlot(live: readonly LockEntry[], signal?: AbortSignal): Promise<NodeInCycle[]> {
    const nodes = await this.o.kube.listNodes({ labelSelector: `${CYCLE_LABEL}=true` }, signal);
    const holders = new Set([this.o.nodeId, ...live.map((e) => e.nodeID)]);
    const label = this.o.groups?.label;
    return nodes
      .map((n) => ({
        name: n.metadata?.name ?? '',
        group: label === undefined ? '' : (n.metadata?.labels?.[label] ?? ''),
      }))
      .filter((n) => n.name !== '' && !holders.has(n.name));
  }

  /** Drops slots whose Node is gone (never kured's manual lock, which records no creation time). */
  async withoutDeleted(live: readonly LockEntry[], signal?: AbortSignal): Promise<LockEntry[]> {
    const kept: LockEntry[] = [];
    for (const entry of live) {
      if (!isManualEntry(entry) && (await this.gone(entry.nodeID, signal))) {
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
