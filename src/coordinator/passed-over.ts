// The nodes a leader passes over: their turn lapsed (not taken within the grace) while they still
// wait. Each goes behind every other waiter, so that a dead agent costs one grace, not one per
// hand-off, until its agent shows it is alive by writing its status again (the agent words the wait
// after a lapse anew, lapsedTurnReason) or it stops waiting. Kept per leadership term: a new leader
// passes nobody over.
import type { NodeRecord } from './fleet-view.js';

export class PassedOver {
  /** Node to the status reason it had when its turn lapsed. */
  private readonly nodes = new Map<string, string | undefined>();

  /** Passes `record` over: its turn lapsed now. */
  add(record: NodeRecord): void {
    this.nodes.set(record.name, record.status?.reason);
  }

  /** The nodes passed over now. */
  names(): ReadonlySet<string> {
    return new Set(this.nodes.keys());
  }

  /**
   * Forgets the nodes that no longer wait, and gives back their place to those whose agent wrote its
   * status since the lapse; returns the latter. `get` reads a node's record as the view has it now.
   */
  settle(get: (node: string) => NodeRecord | undefined): string[] {
    const back: string[] = [];
    for (const [node, reason] of this.nodes) {
      const status = get(node)?.status;
      if (status?.phase === 'waiting-for-lock' && status.reason === reason) continue;
      this.nodes.delete(node);
      if (status?.phase === 'waiting-for-lock') back.push(node);
    }
    return back;
  }
}
