// Nodes the wave passes over: quarantined (their drain failed), or waiting while new cycles are
// halted (--max-quarantined). The simulation counts the wave done without them, and reports them.
import { HALT_REASON } from '../blockers/max-quarantined.js';
import { QUARANTINE_LABEL } from '../node/quarantine.js';
import type { SimCluster } from './cluster.js';
import type { Observer } from './observer.js';

/** Does the node carry the quarantine label? */
export function isQuarantined(cluster: SimCluster, name: string): boolean {
  return cluster.nodeObject(name)?.metadata.labels?.[QUARANTINE_LABEL] !== undefined;
}

/** Why new cycles are halted, when the node's status says they are. */
export function haltReason(observer: Observer, name: string): string | undefined {
  const t = observer.timeline.get(name);
  return t?.phase === 'blocked' && t.reason.startsWith(HALT_REASON) ? t.reason : undefined;
}
