// The simulated scheduler's placement rule, as kube-scheduler decides where it matters here: a node
// must be Ready, schedulable (not cordoned) and free of NoSchedule/NoExecute taints; among those, it
// prefers nodes without a PreferNoSchedule taint (TaintToleration scoring) and spreads pods over the
// least loaded (NodeResourcesBalancedAllocation, roughly), breaking ties at random.
import { isReady, ownerKind, type SimNode, type SimPod } from './objects.js';
import type { Random } from './random.js';

/** Can a pod without tolerations be placed on this node at all? */
function schedulable(n: SimNode): boolean {
  return isReady(n) && !n.spec.unschedulable && !hasTaint(n, 'NoSchedule') && !hasTaint(n, 'NoExecute');
}

function hasTaint(n: SimNode, effect: string): boolean {
  return (n.spec.taints ?? []).some((t) => t.effect === effect);
}

/**
 * Nodes for `count` pending pods, in order (undefined when no node can take a pod): feasible nodes,
 * untainted ones first, the least loaded of them, ties at random. `load` (pods per node) is updated.
 */
export function placements(
  nodes: readonly SimNode[],
  load: Map<string, number>,
  count: number,
  random: Random,
): (string | undefined)[] {
  const candidates = nodes.filter(schedulable);
  const preferred = candidates.filter((n) => !hasTaint(n, 'PreferNoSchedule'));
  const pool = preferred.length > 0 ? preferred : candidates;
  return Array.from({ length: count }, () => {
    if (pool.length === 0) return undefined;
    const target = leastLoaded(pool, load, random);
    load.set(target, (load.get(target) ?? 0) + 1);
    return target;
  });
}

function leastLoaded(pool: readonly SimNode[], load: Map<string, number>, random: Random): string {
  let best: string[] = [];
  let min = Infinity;
  for (const n of pool) {
    const l = load.get(n.metadata.name) ?? 0;
    if (l < min) {
      min = l;
      best = [n.metadata.name];
    } else if (l === min) best.push(n.metadata.name);
  }
  return best[Math.floor(random() * best.length)] ?? '';
}

/** Pods per node, DaemonSet pods and terminating ones aside: the scheduler's load. */
export function podCounts(pods: Iterable<SimPod>): Map<string, number> {
  const load = new Map<string, number>();
  for (const p of pods) {
    if (!p.spec.nodeName || p.metadata.deletionTimestamp || ownerKind(p) === 'DaemonSet') continue;
    load.set(p.spec.nodeName, (load.get(p.spec.nodeName) ?? 0) + 1);
  }
  return load;
}
