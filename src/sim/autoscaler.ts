// A simulated autoscaler (the cluster autoscaler's scale-down, Karpenter's consolidation): a node
// that looks empty, no pod on it but DaemonSet pods, is removed unless one of the annotations both
// honour says "true". This is what undoes a drained node's reboot (kured #1309); kured-ts's
// autoscaler protection (src/node/autoscaler.ts) is what it must find on a node in a cycle.
import { AUTOSCALER_ANNOTATIONS } from '../node/autoscaler.js';
import { isDaemonSetPod } from '../node/kube-node-ops.js';
import type { V1Node, V1Pod } from '../kube/kube.js';

/** Do both autoscalers leave `node` alone (one of the annotations says "true")? */
export function scaleDownDisabled(node: V1Node): boolean {
  return AUTOSCALER_ANNOTATIONS.some((k) => node.metadata?.annotations?.[k] === 'true');
}

/** No pod on the node but DaemonSet pods and pods on their way out: nothing would be lost. */
export function looksEmpty(node: V1Node, pods: readonly V1Pod[]): boolean {
  const name = node.metadata?.name;
  return !pods.some(
    (p) =>
      p.spec?.nodeName === name &&
      p.metadata?.deletionTimestamp === undefined &&
      !isDaemonSetPod(p) &&
      p.status?.phase !== 'Succeeded' &&
      p.status?.phase !== 'Failed',
  );
}

/** Would an autoscaler remove `node` now? */
export function wouldRemove(node: V1Node, pods: readonly V1Pod[]): boolean {
  return looksEmpty(node, pods) && !scaleDownDisabled(node);
}
