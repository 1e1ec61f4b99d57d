// Nodes the wave passes over: quarantined (their drain failed), or waiting while new cycles are
// halted (--max-quarantined). The simulation counts the wave done without them, and reports them.
import { HALT_REASON } from '../lock/lock-reasons.js';
import { QUARANTINE_LABEL, REBOOT_LOOP_VALUE } from '../node/quarantine.js';
import type { SimCluster } from './cluster.js';
import type { Observer } from './observer.js';

/** Does the node carry the quarantine label? */
function isQuarantined(cluster: SimCluster, name: string): boolean {
  return cluster.nodeObject(name)?.metadata.labels?.[QUARANTINE_LABEL] !== undefined;
}

/** Is the node quarantined reboot-loop (its need survived its reboots)? */
function inRebootLoop(cluster: SimCluster, name: string): boolean {
  return cluster.nodeObject(name)?.metadata.labels?.[QUARANTINE_LABEL] === REBOOT_LOOP_VALUE;
}

/** The nodes quarantined at the end, and of those the ones quarantined reboot-loop, by name. */
export function quarantinedNodes(cluster: SimCluster): { quarantined: string[]; rebootLoops: string[] } {
  return {
    quarantined: cluster.names.filter((n) => isQuarantined(cluster, n)),
    rebootLoops: cluster.names.filter((n) => inRebootLoop(cluster, n)),
  };
}

/** A reason that says new cycles are halted: the node's own judgement, or the coordinator's word to a waiter. */
function halts(reason: string): boolean {
  return reason.startsWith(`${HALT_REASON}: `) || reason.includes(`: ${HALT_REASON}: `);
}

/** Why new cycles are halted, as the first node whose status says so puts it; undefined: not halted. */
export function fleetHalt(observer: Observer): string | undefined {
  for (const t of observer.timeline.values())
    if ((t.phase === 'blocked' || t.phase === 'waiting-for-lock') && halts(t.reason))
      return t.reason.slice(t.reason.indexOf(`${HALT_REASON}: `));
  return undefined;
}

/**
 * A node that needs a reboot and gets none in this wave: quarantined, or held back while the wave
 * is halted (a waiter learns of the halt at its next pass; the coordinator gives it no turn meanwhile).
 */
export function passedOver(cluster: SimCluster, observer: Observer, name: string, halted: boolean): boolean {
  if (observer.inCycle.has(name)) return false;
  if (isQuarantined(cluster, name)) return true;
  const phase = observer.timeline.get(name)?.phase;
  return halted && (phase === 'blocked' || phase === 'waiting-for-lock');
}
