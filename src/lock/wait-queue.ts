// The fair lock queue: when a slot frees, the waiting node whose reboot has been needed longest takes
// it (overdue ones first, ties by name), instead of whoever wakes first. The order comes from what
// every agent already records on its node: the status annotation's phase (waiting-for-lock) and
// requiredSince / due (--reboot-deadline). One node list from the API server's watch cache per
// waiter per hand-off; an agent that is not waiting never asks.
import type { Clock } from '../clock/clock.js';
import type { Kube, V1Node } from '../kube/kube.js';
import { STATUS_ANNOTATION, isOverdue, parseStatus } from '../node/status.js';

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

export interface WaitQueue {
  /**
   * The waiter that should take a freed slot before this node, or undefined when this node goes
   * first. `canTake` says whether a node of a group could take a slot now; a waiter that could not
   * is passed over.
   */
  ahead(canTake: (group: string | undefined) => boolean, signal?: AbortSignal): Promise<Waiter | undefined>;
}

/** Overdue first, then the oldest need, then by name. */
export function compareWaiters(a: Waiter, b: Waiter): number {
  if (a.overdue !== b.overdue) return a.overdue ? -1 : 1;
  if (a.requiredSinceMs !== b.requiredSinceMs) return a.requiredSinceMs - b.requiredSinceMs;
  return a.node < b.node ? -1 : a.node > b.node ? 1 : 0;
}

/** The node as a waiter, when its status says it waits for the lock and since when it needs a reboot. */
export function waiterOf(node: V1Node, now: Date, groupLabel: string | undefined): Waiter | undefined {
  const meta = node.metadata ?? {};
  const status = parseStatus(meta.annotations?.[STATUS_ANNOTATION]);
  if (status?.phase !== 'waiting-for-lock' || status.requiredSince === undefined) return undefined;
  const labels = meta.labels ?? {};
  return {
    node: meta.name ?? '',
    requiredSinceMs: Date.parse(status.requiredSince),
    overdue: isOverdue(status, now),
    group: groupLabel === undefined ? undefined : (labels[groupLabel] ?? ''),
  };
}

/**
 * Who goes first among `waiters` for `self`: undefined = self. A node not yet recorded as waiting
 * (its first try for a slot) queues behind those that are.
 */
export function firstAhead(
  self: string,
  waiters: readonly Waiter[],
  canTake: (group: string | undefined) => boolean,
): Waiter | undefined {
  const newcomer: Waiter = {
    node: self,
    requiredSinceMs: Number.POSITIVE_INFINITY,
    overdue: false,
    group: undefined,
  };
  const all = waiters.some((w) => w.node === self) ? waiters : [...waiters, newcomer];
  const [first] = all.filter((w) => w.node === self || canTake(w.group)).sort(compareWaiters);
  return first === undefined || first.node === self ? undefined : first;
}

export interface NodeWaitQueueOptions {
  kube: Kube;
  nodeId: string;
  clock: Clock;
  /** --group-label when --group-concurrency is set; undefined without groups. */
  groupLabel: string | undefined;
}

/** The queue read from the Nodes' status annotations. */
export class NodeWaitQueue implements WaitQueue {
  constructor(private readonly o: NodeWaitQueueOptions) {}

  async ahead(
    canTake: (group: string | undefined) => boolean,
    signal?: AbortSignal,
  ): Promise<Waiter | undefined> {
    const nodes = await this.o.kube.listNodes({ resourceVersion: '0' }, signal);
    const now = this.o.clock.now();
    const waiters = nodes
      .map((n) => waiterOf(n, now, this.o.groupLabel))
      .filter((w): w is Waiter => w !== undefined);
    return firstAhead(this.o.nodeId, waiters, canTake);
  }
}
