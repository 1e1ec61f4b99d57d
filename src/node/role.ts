// A node's role in the cluster, as kubeadm, k3s and most distributions label it: control-plane
// nodes run the API server and etcd and go last, one at a time, with quorum to spare
// (src/capacity/room.ts, src/blockers/control-plane.ts).
import type { V1Node } from '../kube/kube.js';

/** The label of a control-plane node (any value; kubeadm writes ''). */
export const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane';

/**
 * Every label that makes a node a member of the control plane: kubeadm's, the `master` of kubeadm
 * before 1.24 and of k3s and RKE2 servers, and the `etcd` of RKE2's and k3s's etcd-only nodes (an
 * etcd member without the API server is still a quorum member: two at once lose it).
 */
const CONTROL_PLANE_LABELS: readonly string[] = [
  CONTROL_PLANE_LABEL,
  'node-role.kubernetes.io/master',
  'node-role.kubernetes.io/etcd',
];

/**
 * The phases of a node that still wants its reboot and has not begun its cycle: a worker in one of
 * them (or in its cycle) goes before the control plane (--control-plane-last).
 */
export const BEFORE_CYCLE_PHASES: ReadonlySet<string> = new Set([
  'pending',
  'outside-window',
  'blocked',
  'awaiting-approval',
  'waiting-for-lock',
]);

/** Is a node with these labels a control-plane node? */
export function isControlPlane(labels: Readonly<Record<string, string>> | undefined): boolean {
  return CONTROL_PLANE_LABELS.some((label) => labels?.[label] !== undefined);
}

/**
 * The control-plane Nodes: one label-selected list per label of CONTROL_PLANE_LABELS (a selector
 * cannot say "any of"), each a handful of Nodes, merged by name.
 */
export async function listControlPlane(
  list: (labelSelector: string) => Promise<readonly V1Node[]>,
): Promise<V1Node[]> {
  const byName = new Map<string, V1Node>();
  for (const label of CONTROL_PLANE_LABELS)
    for (const node of await list(label)) byName.set(node.metadata?.name ?? '', node);
  return [...byName.values()];
}
