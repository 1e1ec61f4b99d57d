// The simulated hosts' states by node name, and which of them a wave still waits for: the nodes that
// need a reboot or are rebooting. The end of a run is asked after every event (done.ts): it looks at
// those alone, not at every node of the cluster (at 5,000 nodes that scan was a fifth of the run).
import type { SimNodeState } from './cluster-spec.js';

export class NodeStates extends Map<string, SimNodeState> {
  private readonly unsettled = new Set<string>();

  override set(name: string, state: SimNodeState): this {
    super.set(name, state);
    this.note(state);
    return this;
  }

  /** Sets `state`'s need or reboot, and notes whether the wave still waits for it. */
  update(state: SimNodeState, fields: Partial<Pick<SimNodeState, 'needsReboot' | 'rebooting'>>): void {
    Object.assign(state, fields);
    this.note(state);
  }

  /** The nodes that need a reboot or are rebooting now (lazily: the caller stops at the first that matters). */
  *unsettledStates(): Generator<SimNodeState> {
    for (const name of this.unsettled) {
      const state = this.get(name);
      if (state !== undefined) yield state;
    }
  }

  private note(state: SimNodeState): void {
    if (state.needsReboot || state.rebooting) this.unsettled.add(state.name);
    else this.unsettled.delete(state.name);
  }
}
