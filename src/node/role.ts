// A node's role in the cluster, as kubeadm, k3s and most distributions label it: control-plane
// nodes run the API server and etcd and go last, one at a time, with quorum to spare
// (src/lock/room.ts, src/blockers/control-plane.ts).

/** The label of a control-plane node (any value; kubeadm writes ''). */
export const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane';

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
  return labels?.[CONTROL_PLANE_LABEL] !== undefined;
}
