// What a reboot cycle puts on its node for others to see, besides its record and cordon: the label
// that takes the node out of the cloud load balancers (--exclude-from-lb; a cordon no longer does
// since Kubernetes 1.19, kubernetes #90823) and Karpenter's do-not-repair (--autoscaler-protection;
// its node repair must not replace a node that is NotReady because we rebooted it).
//
// Each is added only where absent, in the same patch that writes the cycle record, and the record
// says which ones are ours: an agent restarted mid-cycle removes what its predecessor added, and a
// label or annotation someone else set before the cycle (or with another value since) is never removed.
import type { CycleRecord } from './cycle.js';
import type { NodeState, NodeWrite } from './node.js';

/** The service controller leaves nodes with this label (any value) out of LoadBalancer backends. */
export const EXCLUDE_LB_LABEL = 'node.kubernetes.io/exclude-from-external-load-balancers';
/** Karpenter's node repair leaves a node with this annotation "true" alone. */
export const DO_NOT_REPAIR_ANNOTATION = 'karpenter.sh/do-not-repair';
/** The value we set on both. */
export const MARK_VALUE = 'true';

/** Which marks the cycle asks for (the flags). */
export interface MarkOptions {
  /** --exclude-from-lb */
  excludeFromLb: boolean;
  /** --autoscaler-protection */
  doNotRepair: boolean;
}

/** The marks to add to `node` and what the cycle record says of them (`lbExcludedAt`, `doNotRepair`). */
export interface Marks {
  write: Required<Pick<NodeWrite, 'labels' | 'annotations'>>;
  record: Pick<CycleRecord, 'lbExcludedAt' | 'doNotRepair'>;
}

/** The marks a cycle beginning at `now` adds to `node`: each asked for and absent. */
export function marksFor(
  node: Pick<NodeState, 'labels' | 'annotations'>,
  options: MarkOptions,
  now: string,
): Marks {
  const marks: Marks = { write: { labels: {}, annotations: {} }, record: {} };
  if (options.excludeFromLb && node.labels[EXCLUDE_LB_LABEL] === undefined) {
    marks.write.labels[EXCLUDE_LB_LABEL] = MARK_VALUE;
    marks.record.lbExcludedAt = now;
  }
  if (options.doNotRepair && node.annotations[DO_NOT_REPAIR_ANNOTATION] === undefined) {
    marks.write.annotations[DO_NOT_REPAIR_ANNOTATION] = MARK_VALUE;
    marks.record.doNotRepair = true;
  }
  return marks;
}

/**
 * The end of the cycle: the marks the record names as ours, while they still carry our value (a
 * different value means someone else owns it now). Empty maps when none is ours.
 */
export function unmark(
  node: Pick<NodeState, 'labels' | 'annotations'>,
  record: Pick<CycleRecord, 'lbExcludedAt' | 'doNotRepair'>,
): { labels: Record<string, null>; annotations: Record<string, null> } {
  const change: { labels: Record<string, null>; annotations: Record<string, null> } = {
    labels: {},
    annotations: {},
  };
  if (record.lbExcludedAt !== undefined && node.labels[EXCLUDE_LB_LABEL] === MARK_VALUE) {
    change.labels[EXCLUDE_LB_LABEL] = null;
  }
  if (record.doNotRepair === true && node.annotations[DO_NOT_REPAIR_ANNOTATION] === MARK_VALUE) {
    change.annotations[DO_NOT_REPAIR_ANNOTATION] = null;
  }
  return change;
}
