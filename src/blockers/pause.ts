// PauseBlocker: the operator's brake. Fleet-wide pause on the DaemonSet, per-node opt-out on the Node.
import type { Kube } from '../kube/kube.js';
import { NODE_PAUSE_ANNOTATION, type NodeOps } from '../node/node.js';
import type { Blocker, Verdict } from './blocker.js';
import {
  FLEET_PAUSE_ANNOTATION,
  describeFleetPause,
  isWaveHalt,
  parseFleetPause,
} from '../pause/fleet-pause.js';

export { FLEET_PAUSE_ANNOTATION } from '../pause/fleet-pause.js';

export interface PauseBlockerOptions {
  kube: Kube;
  node: NodeOps;
  /** --ds-namespace / --ds-name */
  dsNamespace: string;
  dsName: string;
}

export class PauseBlocker implements Blocker {
  readonly name = 'pause';

  constructor(private readonly options: PauseBlockerOptions) {}

  async check(signal?: AbortSignal): Promise<Verdict> {
    const { kube, node, dsNamespace, dsName } = this.options;
    const ds = await kube.getDaemonSet(dsNamespace, dsName, signal);
    const fleet = parseFleetPause(ds.metadata?.annotations?.[FLEET_PAUSE_ANNOTATION]);
    // a wave halted by its failure budget is a pause too, named as the gate it is (--max-failures)
    if (fleet !== undefined)
      return {
        blocked: true,
        reason: describeFleetPause(fleet),
        ...(isWaveHalt(fleet) ? { as: 'max-failures' } : {}),
      };
    const state = await node.get(signal);
    if (state.annotations[NODE_PAUSE_ANNOTATION] === 'true') {
      return { blocked: true, reason: `node opted out (${NODE_PAUSE_ANNOTATION}=true)` };
    }
    return { blocked: false };
  }
}
