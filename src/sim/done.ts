// When a simulated wave is over: what the run waits for before it stops (Simulation.done).
import type { SimCluster } from './cluster.js';
import type { SimServer } from './objects.js';
import type { Observer } from './observer.js';
import { fleetHalt, passedOver } from './quarantined.js';
import { requested } from './sim-operators.js';
import type { SimulationOptions } from './simulation-types.js';
import { cordonedFailed, failedInWave, failedNodes, haltSettled, waveHalt } from './wave-report.js';

/** What the run is judged from. */
export interface DoneFacts {
  cluster: SimCluster;
  observer: Observer;
  server: SimServer;
  options: Pick<SimulationOptions, 'rebootRequests'>;
}

/**
 * Every node that needed a reboot rebooted, or is quarantined (its drain failed), or waits while
 * new cycles are halted (--max-quarantined), or failed in its wave; nobody holds the lock, nothing
 * is cordoned by us but the failed nodes. A wave halted by its budget is over once what was under
 * way has settled.
 */
export function waveDone(f: DoneFacts): boolean {
  const { cluster, observer } = f;
  if (waveHalt(f.server) !== undefined) return haltSettled(cluster, observer);
  // a node failed in its wave keeps its slot and cordon (hold): the wave is done without it
  const failed = (name: string): boolean => failedInWave(cluster, name);
  if (observer.holders.some((h) => !failed(h)) || cluster.requirementsPending) return false;
  // an admin's request stands until the reboot that answers it ends
  if ((f.options.rebootRequests ?? []).some(({ node }) => requested(cluster, node))) return false;
  const halted = fleetHalt(observer) !== undefined;
  const waits = (name: string): boolean => !failed(name) && !passedOver(cluster, observer, name, halted);
  // asked after every event of the run: only the nodes that still need a reboot or are rebooting
  for (const state of cluster.nodes.unsettledStates())
    if (state.rebooting || (state.needsReboot && waits(state.name))) return false;
  return observer.cordonedByUs() === cordonedFailed(cluster, failedNodes(cluster));
}
