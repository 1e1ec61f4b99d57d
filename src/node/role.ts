// A node's role in the cluster, as kubeadm, k3s and most distributions label it: control-plane
// nodes run the API server and etcd and go last, one at a time, with quorum to spare
// (src/lock/room.ts, src/blockers/control-plane.ts).

/** The label of a control-plane node (any value; kubeadm writes ''). */
export const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane';

/** Is a node with these labels a control-plane node? */
export function isControlPlane(labels: Readonly<Record<string, string>> | undefined): boolean {
  return labels?.[CONTROL_PLANE_LABEL] !== undefined;
}
