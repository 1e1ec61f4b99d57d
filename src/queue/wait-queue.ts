// The order of the lock queue: when a slot frees, the waiting node whose reboot has been needed
// longest takes it (overdue ones first, ties by name), instead of whoever wakes first. The order
// comes from what every agent records on its node: the status annotation's phase (waiting-for-lock)
// and requiredSince / due (--reboot-deadline). The coordinator (src/coordinator/turn-plan.ts) keeps
// the queue in this order from its one view of the fleet; no agent lists the nodes.

/** A node waiting for a slot, as its status annotation tells. */
export interface Waiter {
  node: string;
  /** Epoch ms the agent first saw the reboot required. */
  requiredSinceMs: number;
  /** Past --reboot-deadline. */
  overdue: boolean;
  /** Its --group-label value ('' without the label); undefined when there are no groups. */
  group: string | undefined;
}

/** Overdue first, then the oldest need, then by name. */
export function compareWaiters(a: Waiter, b: Waiter): number {
  if (a.overdue !== b.overdue) return a.overdue ? -1 : 1;
  if (a.requiredSinceMs !== b.requiredSinceMs) return a.requiredSinceMs - b.requiredSinceMs;
  return a.node < b.node ? -1 : a.node > b.node ? 1 : 0;
}
