// FleetLock (src/fleetlock) in the agent's pass: a slot of a budget shared with other clusters,
// taken right before the in-cluster slot and given back once the node is out of its cycle. Two calls,
// each one line at its call site, so that they move with the pass:
// - takeFleetLock: before the in-cluster lock; until the server grants, the node waits (fail safe:
//   a server that does not answer holds the reboot, and the status says so);
// - returnFleetLock: at the end of every pass; a slot this agent took, or may hold from before its
//   start (Zincati sends steady-state on every start: it is idempotent), goes back once the node is
//   in no cycle and holds no in-cluster slot, retried on later passes until the server confirms.
import { CYCLE_ANNOTATION } from '../../node/cycle.js';
import type { Outcome } from '../outcome.js';
import type { Pass } from './pass.js';

/**
 * Asks the FleetLock server for a slot (bounded retries inside the client). undefined: granted, or
 * no FleetLock configured; go on to the in-cluster slot. Else the node waits.
 */
export async function takeFleetLock(pass: Pass): Promise<Outcome | undefined> {
  const fleetLock = pass.deps.fleetLock;
  if (fleetLock === undefined) return undefined;
  const answer = await fleetLock.preReboot(pass.signal);
  if (answer.granted) {
    pass.remember({ kind: 'fleet-lock', state: 'held' });
    return undefined;
  }
  const full = answer.kind === 'failed_lock';
  const why = full
    ? `waiting for a slot of FleetLock group ${fleetLock.group}`
    : `no FleetLock slot without the server's grant: the reboot waits (group ${fleetLock.group})`;
  // only a full group keeps the turn: a server this node alone cannot reach must not hold the others
  const keep = full && pass.config.lockQueue !== 'none' ? { fleetLockFull: true as const } : {};
  return {
    kind: 'waiting-for-lock',
    reason: `${answer.reason}; ${why}`,
    holders: [],
    fleetLock: true,
    ...keep,
  };
}

/**
 * Gives the FleetLock slot back when it may be held and the node is in no cycle and holds no
 * in-cluster slot (steady-state is idempotent). A failure is kept for the next pass.
 */
export async function returnFleetLock(pass: Pass): Promise<void> {
  const fleetLock = pass.deps.fleetLock;
  if (fleetLock === undefined || pass.memory.fleetLock === undefined) return;
  if (pass.node.annotations[CYCLE_ANNOTATION] !== undefined || pass.env.slot.held) return;
  const answer = await fleetLock.steadyState(pass.signal);
  if (answer.granted) {
    pass.remember({ kind: 'fleet-lock', state: undefined });
    pass.deps.logger.debug('FleetLock slot released', { node: pass.config.nodeId, group: fleetLock.group });
    return;
  }
  // owed, so not clean: the next pass reads the node again and retries
  pass.remember({ kind: 'fleet-lock', state: 'owed' });
  pass.deps.logger.warn('cannot release the FleetLock slot; retrying on the next pass', {
    node: pass.config.nodeId,
    group: fleetLock.group,
    error: answer.reason,
  });
}
