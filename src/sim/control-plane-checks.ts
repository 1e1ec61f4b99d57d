// The simulator's control-plane invariants (issue 33): no control-plane node takes a slot while a
// worker still wants its reboot or is in its cycle, and none reboots while another control-plane
// node, or the etcd member on one, is not Ready. (Two at once is checked with the slots, observer.ts.)
import type { SimCluster } from './cluster.js';
import { isReady } from './objects.js';
import { BEFORE_CYCLE_PHASES } from '../node/role.js';

/** A worker ahead of the control plane (its phase, or `holding` says it holds a slot), as a violation's detail. */
export function workerAhead(
  cluster: SimCluster,
  timeline: ReadonlyMap<string, { phase: string }>,
  holding: (node: string) => boolean,
): string | undefined {
  for (const [name, t] of timeline) {
    if (cluster.isControlPlane(name)) continue;
    if (BEFORE_CYCLE_PHASES.has(t.phase) || holding(name))
      return `took a slot while worker ${name} (${t.phase}) had not rebooted`;
  }
  return undefined;
}

/** For a control-plane node about to reboot: the other members not Ready, as violations' details. */
export function quorumGaps(cluster: SimCluster, name: string): string[] {
  if (!cluster.isControlPlane(name)) return [];
  const gaps: string[] = [];
  for (const other of cluster.names) {
    if (other === name || !cluster.isControlPlane(other)) continue;
    const node = cluster.nodeObject(other);
    const ready = node !== undefined && isReady(node);
    if (!ready || !cluster.etcdReady(other))
      gaps.push(
        `reboot requested while ${ready ? `the etcd member on ${other}` : `control-plane node ${other}`} was not Ready`,
      );
  }
  return gaps;
}
