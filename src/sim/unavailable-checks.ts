// The simulator's capacity invariant under --count-unavailable (the agents' default; issue 41): when
// a node's reboot is requested, the nodes holding slots or in a reboot cycle, plus the other nodes that
// are unavailable (not Ready, or cordoned by someone else: in no kured-ts cycle), are at most
// --concurrency; with zones and --group-concurrency, the same within the rebooting node's zone.
// Judged from the Nodes as the kubelets and the server hold them, never from what the coordinator's
// Lease or a turn says: a thief's "all healthy" must not let a node past it.
//
// One report per cause: more slots than the limit alone is too-many-holders or too-many-in-group
// (observer.ts), and a reboot by a node holding no slot is reboot-without-lock; this check reports
// what the unavailable nodes add to slots that are within the limit.
import type { SimCluster } from './cluster.js';
import { isReady, type SimNode } from './objects.js';
import { takenOutBy } from '../node/other-operators.js';

/** The limits the agents were given. */
export interface CapacityLimits {
  concurrency: number;
  /** --group-concurrency per zone; undefined = no group limit. */
  groupConcurrency?: number;
}

/** Why a node not holding a slot is unavailable; undefined when it is available. */
function unavailable(node: SimNode): string | undefined {
  if (!isReady(node)) return 'not ready';
  return node.spec.unschedulable === true ? 'cordoned' : undefined;
}

/** `slots` and `out` over `limit`, in words; undefined within it (or when the slots alone exceed it). */
function excess(where: string, slots: readonly string[], out: readonly string[], limit: number): string[] {
  if (slots.length > limit || slots.length + out.length <= limit) return [];
  return [
    `${slots.length + out.length} nodes out of service ${where}, limit ${limit}: ` +
      `slots ${slots.join(', ')}; unavailable ${out.join(', ')}`,
  ];
}

/**
 * For the node `name` whose reboot is requested while it holds a slot: the limits its reboot exceeds
 * with the unavailable nodes counted, as violations' details (none: within them).
 */
export function unavailableExcess(
  cluster: SimCluster,
  name: string,
  slots: readonly string[],
  limits: CapacityLimits,
): string[] {
  const held = new Set(slots);
  const out: { name: string; why: string }[] = [];
  for (const node of cluster.nodeList()) {
    const why = held.has(node.metadata.name) ? undefined : unavailable(node);
    if (why !== undefined) out.push({ name: node.metadata.name, why });
  }
  const words = (list: readonly { name: string; why: string }[]): string[] =>
    list.map((n) => `${n.name} ${n.why}`);
  const details = excess('in all', slots, words(out), limits.concurrency);
  const zone = cluster.outages.zoneOf(name);
  if (limits.groupConcurrency === undefined || zone === undefined) return details;
  const inZone = (n: string): boolean => cluster.outages.zoneOf(n) === zone;
  return [
    ...details,
    ...excess(
      `in ${zone}`,
      slots.filter(inZone),
      words(out.filter((n) => inZone(n.name))),
      limits.groupConcurrency,
    ),
  ];
}

/**
 * At a slot taken: the slots and the nodes other operators are taking out (their taint: Karpenter, the
 * cluster autoscaler; src/node/other-operators.ts) over --concurrency, in words (none: within it). A
 * node they take out after the slot was taken is theirs to answer for, not checked here.
 */
export function takenOutExcess(
  cluster: SimCluster,
  slots: readonly string[],
  limits: CapacityLimits,
): string[] {
  const held = new Set(slots);
  const theirs = cluster
    .nodeList()
    .filter((n) => !held.has(n.metadata.name) && takenOutBy(n) !== undefined)
    .map((n) => `${n.metadata.name} ${takenOutBy(n) ?? ''}`);
  return excess('when a slot was taken', slots, theirs, limits.concurrency);
}
