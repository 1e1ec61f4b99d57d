// The simulator's drain-order invariant (issue 30): a pod of drain order 10 (simulate
// --storage-pods: one storage daemon per node) is evicted only once no pod of a lower order that the
// drain evicts or waits for is left on its node: not running, not terminating. Judged at the moment
// of the eviction, from the server's own writes.
import { DRAIN_ORDER_LABEL, orderGroups, planDrain } from '../drain/drain-plan.js';
import type { V1Pod } from '../kube/kube.js';
import type { SimPod, SimServer } from './objects.js';

/** Counted for the report: storage pods evicted, and those evicted too early. */
export interface DrainOrderStats {
  evicted: number;
  early: number;
}

export class DrainOrderCheck {
  readonly stats: DrainOrderStats = { evicted: 0, early: 0 };
  /** UIDs of pods whose eviction was seen (a graceful one is seen once, at its deletionTimestamp). */
  private readonly seen = new Set<string>();

  constructor(
    private readonly server: SimServer,
    /** Records a violation of rule drain-order. */
    private readonly violate: (node: string, detail: string) => void,
  ) {}

  /** A pod write: an ordered pod's eviction (its deletionTimestamp, or its removal) is checked once. */
  onPod(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: SimPod): void {
    const order = Number(pod.metadata.labels?.[DRAIN_ORDER_LABEL] ?? '0');
    if (order <= 0 || !this.firstEviction(type, pod)) return;
    this.stats.evicted++;
    const node = pod.spec.nodeName ?? '';
    const lower = this.lowerOnNode(node, order);
    if (lower.length === 0) return;
    this.stats.early++;
    this.violate(
      node,
      `${pod.metadata.namespace}/${pod.metadata.name} (order ${order}) evicted while ${lower.join(', ')} of a lower order was on the node`,
    );
  }

  /** Is this write the pod's eviction (its deletionTimestamp, or its removal), seen for the first time? */
  private firstEviction(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: SimPod): boolean {
    const evicting =
      type === 'DELETED' || (type === 'MODIFIED' && pod.metadata.deletionTimestamp !== undefined);
    const uid = pod.metadata.uid ?? '';
    if (!evicting || this.seen.has(uid)) return false;
    this.seen.add(uid);
    return true;
  }

  /** The stats when a storage pod was evicted at all (simulate --storage-pods), else undefined. */
  result(): DrainOrderStats | undefined {
    return this.stats.evicted === 0 ? undefined : { ...this.stats };
  }

  /** The pods of `node` the drain handles at an order below `order` (the drain's own plan). */
  private lowerOnNode(node: string, order: number): string[] {
    // the server's own JSON (timestamps as strings, as on the wire): what the agents read
    const pods = this.server.list<V1Pod>('pods').filter((p) => p.spec?.nodeName === node);
    return orderGroups(planDrain(pods, { podSelector: [], rules: [] }))
      .filter((g) => g.order < order)
      .flatMap((g) => g.pods.map((p) => p.key));
  }
}
