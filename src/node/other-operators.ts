// Other operators that take nodes out (issue 56): Karpenter disrupting a node and the cluster
// autoscaler removing one taint it (NoSchedule) and drain it, without a cordon. Their nodes are out
// of service from that taint on, so the capacity gates count them as unavailable from then, not
// only once cordoned or NotReady (which Karpenter's and the autoscaler's nodes never are before
// they go). The NodeMaintenance objects of medik8s and NVIDIA are read by the coordinator
// (src/coordinator/node-maintenance.ts).

/** How the reason of a node another operator takes out begins (the words of the advice pick them out by it). */
export const TAKEN_OUT = 'taken out by ';

/** A taint another operator sets on a node it is taking out, and who that is. */
interface DisruptionTaint {
  key: string;
  /** When set, only a taint with this value (Karpenter before v1 wrote its key with values). */
  value?: string;
  by: string;
}

/** The taints of the operators that take nodes out (a candidate taint, PreferNoSchedule, is not one). */
const DISRUPTION_TAINTS: readonly DisruptionTaint[] = [
  { key: 'karpenter.sh/disrupted', by: 'Karpenter' },
  { key: 'karpenter.sh/disruption', value: 'disrupting', by: 'Karpenter' },
  { key: 'ToBeDeletedByClusterAutoscaler', by: 'the cluster autoscaler' },
];

/** Why `node` is out of service by another operator's hand ("taken out by Karpenter"); undefined when not. */
export function takenOutBy(node: {
  spec?: { taints?: readonly { key: string; value?: string; effect: string }[] };
}): string | undefined {
  for (const t of node.spec?.taints ?? []) {
    if (t.effect !== 'NoSchedule' && t.effect !== 'NoExecute') continue;
    const known = DISRUPTION_TAINTS.find(
      (d) => d.key === t.key && (d.value === undefined || d.value === t.value),
    );
    if (known !== undefined) return `${TAKEN_OUT}${known.by} (${t.key})`;
  }
  return undefined;
}
