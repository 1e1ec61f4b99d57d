// A simulated autoscaler (the cluster autoscaler's scale-down, Karpenter's consolidation): a node
// that looks empty, no pod on it but DaemonSet pods, is removed unless one of the annotations both
// honour says "true". This is what undoes a drained node's reboot (kured #1309); kured-ts's
// autoscaler protection (src/node/autoscaler.ts) is what it must find on a node in a cycle.
import { AUTOSCALER_ANNOTATIONS } from '../node/autoscaler.js';
import { CYCLE_LABEL } from '../node/cycle.js';
import { HISTORY_ANNOTATION, parseHistory } from '../node/history.js';
import { isDaemonSetPod } from '../node/kube-node-ops.js';
import type { V1Node, V1Pod } from '../kube/kube.js';

/** A Node as far as the autoscaler reads it. */
interface NodeMeta {
  metadata?: { name?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
}

/** Do both autoscalers leave `node` alone (one of the annotations says "true")? */
function scaleDownDisabled(node: NodeMeta): boolean {
  return AUTOSCALER_ANNOTATIONS.some((k) => node.metadata?.annotations?.[k] === 'true');
}

/** No pod on the node but DaemonSet pods and pods on their way out: nothing would be lost. */
function looksEmpty(node: V1Node, pods: readonly V1Pod[]): boolean {
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

/** When a removal came: in the node's reboot cycle, within --settle-time after it, or later. */
export type RemovalTime = 'cycle' | 'settle' | 'after';

export interface Removal {
  node: string;
  /** Virtual ms since the start of the run. */
  atMs: number;
  when: RemovalTime;
}

/**
 * The simulated autoscaler of `simulate --autoscaler`: each scan removes every node that looks empty
 * and is not annotated. A removal is recorded (with when it came in the node's cycle), and the Node
 * stays, so that the wave goes on and the report can tell removals in a cycle from those after it.
 */
export class SimAutoscaler {
  readonly removals: Removal[] = [];
  private readonly removed = new Set<string>();

  /** @param settleMs the agents' --settle-time (to tell a removal in a settle from one after it) */
  constructor(readonly settleMs: number) {}

  /** One scan at `nowMs` (epoch ms; `sinceStartMs` for the record) of `nodes`, each with its emptiness. */
  scan(nodes: readonly { node: NodeMeta; empty: boolean }[], nowMs: number, sinceStartMs: number): void {
    for (const { node, empty } of nodes) {
      const name = node.metadata?.name ?? '';
      if (!empty || this.removed.has(name) || scaleDownDisabled(node)) continue;
      this.removed.add(name);
      this.removals.push({ node: name, atMs: sinceStartMs, when: this.when(node, nowMs) });
    }
  }

  private when(node: NodeMeta, nowMs: number): RemovalTime {
    if (node.metadata?.labels?.[CYCLE_LABEL] !== undefined) return 'cycle';
    const ended = Date.parse(
      parseHistory(node.metadata?.annotations?.[HISTORY_ANNOTATION]).at(-1)?.endedAt ?? '',
    );
    return !Number.isNaN(ended) && nowMs < ended + this.settleMs ? 'settle' : 'after';
  }
}
