// The waiting nodes as the coordinator queues them, from its view's records: those whose status
// says they wait for the lock, each with since when it needs its reboot and whether it is overdue.
import type { Waiter } from '../queue/wait-queue.js';
import { isOverdue } from '../node/status.js';
import type { NodeRecord } from './fleet-view.js';

/** The node as a waiter, when its status says it waits for the lock and since when it needs a reboot. */
export function waiterOfRecord(record: NodeRecord, now: Date, groups: boolean): Waiter | undefined {
  const status = record.status;
  if (status?.phase !== 'waiting-for-lock') return undefined;
  return {
    node: record.name,
    // an agent that records no need (an older kured-ts during a rollout) queues behind those that do
    requiredSinceMs:
      status.requiredSince === undefined ? Number.MAX_SAFE_INTEGER : Date.parse(status.requiredSince),
    overdue: isOverdue(status, now),
    group: groups ? record.group : undefined,
  };
}

/** The waiting nodes that hold no slot. */
export function waitersOf(
  records: readonly NodeRecord[],
  holders: ReadonlyMap<string, string | undefined>,
  now: Date,
  groups: boolean,
): Map<string, Waiter> {
  const waiters = new Map<string, Waiter>();
  for (const r of records) {
    const w = holders.has(r.name) ? undefined : waiterOfRecord(r, now, groups);
    if (w !== undefined) waiters.set(r.name, w);
  }
  return waiters;
}
