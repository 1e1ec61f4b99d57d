// Whose is a node's cordon: the agent lifts only its own, and so does `kured-ts cleanup`. Ours when
// our cycle record says we made it, nobody else has taken it over since (metadata.managedFields
// names another manager of spec.unschedulable: an admin's kubectl cordon, another operator), and the
// node is not paused by an operator.
import { CYCLE_MANAGERS, type CycleRecord } from './cycle.js';
import { NODE_PAUSE_ANNOTATION, type NodeState } from './node.js';

/** Does anyone but us (or kured, during a migration) own the node's cordon as it is now? */
export function foreignCordon(node: Pick<NodeState, 'unschedulableOwners'>): boolean {
  return node.unschedulableOwners.some((owner) => !CYCLE_MANAGERS.includes(owner));
}

/** Is the node's cordon ours to lift: we made it, nobody else owns it since, the node is not paused? */
export function ourCordon(
  node: Pick<NodeState, 'unschedulable' | 'unschedulableOwners' | 'annotations'>,
  record: Pick<CycleRecord, 'cordoned'>,
): boolean {
  const paused = node.annotations[NODE_PAUSE_ANNOTATION] === 'true';
  return record.cordoned && node.unschedulable && !foreignCordon(node) && !paused;
}
