// What the drain does with each pod of a node, and why: a pure function of the pods, the drain's
// flags and the rules (the pod's own labels, then --drain-rules), called by the drain and by
// `kured-ts check` alike, so that check says exactly what the drain would do.
//
// A pod says how it is drained with labels: kured-ts.dev/drain (skip | wait-completed | evict), or
// Cluster API's cluster.x-k8s.io/drain (skip | wait-completed), and kured-ts.dev/drain-order (an
// integer; pods are evicted in ascending order, each order gone before the next starts; default 0).
// A label wins over a rules-file entry, each of mode and order on its own. A label value that is not
// understood makes the pod `invalid`: the drain of its node fails naming the pod and the value (a
// typo in `skip` must not evict a storage daemon early, nor must the drain wait for it unbounded).
import { describeRule, isOrder } from '../config/drain-rules.js';
import type { DrainMode, DrainRule } from '../config/config.js';
import type { V1Pod } from '../kube/kube.js';
import { matches, type Selector } from '../selector/label-selector.js';
import { isDaemonSetPod, podName } from '../node/kube-node-ops.js';

const DRAIN_LABEL = 'kured-ts.dev/drain';
export const DRAIN_ORDER_LABEL = 'kured-ts.dev/drain-order';
/** Cluster API's label (MachineDrainRules), honoured the same way. */
const CAPI_DRAIN_LABEL = 'cluster.x-k8s.io/drain';
export const MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

/**
 * What the drain does with a pod: evict it, wait until it completes, leave it (a rule's `skip`), pass
 * it over by kind (`ignore`: DaemonSet, mirror, terminal, outside --drain-pod-selector), or fail the
 * drain (`invalid`: a drain label it does not understand).
 */
export type DrainAction = DrainMode | 'ignore' | 'invalid';

export interface PlannedPod {
  pod: V1Pod;
  /** namespace/name */
  key: string;
  uid?: string;
  action: DrainAction;
  /** Its drain order (0 unless a label or a rule says otherwise; 0 for ignored and invalid pods). */
  order: number;
  /** Why: the label or the rule that decided the action and the order. */
  reason: string;
}

/** What the plan needs of the configuration. */
export interface PlanRules {
  /** --drain-pod-selector; empty = every pod. */
  podSelector: Selector;
  /** --drain-rules. */
  rules: readonly DrainRule[];
}

/** Why a pod is not drained by kind, or undefined when the rules decide. */
export function skipReason(pod: V1Pod, selector: Selector): string | undefined {
  if (isDaemonSetPod(pod)) return 'DaemonSet-owned';
  if (pod.metadata?.annotations?.[MIRROR_ANNOTATION] !== undefined) return 'mirror pod';
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return `terminal (${phase})`;
  if (!matches(selector, pod.metadata?.labels)) return 'not matched by --drain-pod-selector';
  return undefined;
}

/** A decision and what made it. */
type Decided<T> = { value: T; by: string } | { error: string };

const LABEL_MODES: Readonly<Record<string, readonly DrainMode[]>> = {
  [DRAIN_LABEL]: ['evict', 'skip', 'wait-completed'],
  [CAPI_DRAIN_LABEL]: ['skip', 'wait-completed'],
};

function ruleFor(pod: V1Pod, rules: readonly DrainRule[], key: 'drain' | 'order'): DrainRule | undefined {
  const ns = pod.metadata?.namespace ?? '';
  return rules.find(
    (r) =>
      r[key] !== undefined &&
      (r.namespace === undefined || r.namespace === ns) &&
      matches(r.selector, pod.metadata?.labels),
  );
}

function modeOf(pod: V1Pod, rules: readonly DrainRule[]): Decided<DrainMode> {
  const labels = pod.metadata?.labels ?? {};
  for (const [label, allowed] of Object.entries(LABEL_MODES)) {
    const value = labels[label];
    if (value === undefined) continue;
    const mode = allowed.find((m) => m === value);
    if (mode === undefined)
      return { error: `label ${label}=${JSON.stringify(value)} is not one of ${allowed.join(', ')}` };
    return { value: mode, by: `label ${label}=${value}` };
  }
  const rule = ruleFor(pod, rules, 'drain');
  if (rule?.drain !== undefined) return { value: rule.drain, by: describeRule(rule) };
  return { value: 'evict', by: 'default' };
}

function orderOf(pod: V1Pod, rules: readonly DrainRule[]): Decided<number> {
  const value = pod.metadata?.labels?.[DRAIN_ORDER_LABEL];
  if (value !== undefined) {
    const n = /^-?[0-9]+$/.test(value) ? Number(value) : NaN;
    if (!isOrder(n))
      return { error: `label ${DRAIN_ORDER_LABEL}=${JSON.stringify(value)} is not a whole number (int32)` };
    return { value: n, by: `label ${DRAIN_ORDER_LABEL}=${value}` };
  }
  const rule = ruleFor(pod, rules, 'order');
  if (rule?.order !== undefined) return { value: rule.order, by: describeRule(rule) };
  return { value: 0, by: 'default' };
}

/** What the drain does with one pod, and why. */
export function planPod(pod: V1Pod, plan: PlanRules): PlannedPod {
  const base = {
    pod,
    key: podName(pod),
    ...(pod.metadata?.uid === undefined ? {} : { uid: pod.metadata.uid }),
  };
  const kind = skipReason(pod, plan.podSelector);
  if (kind !== undefined) return { ...base, action: 'ignore', order: 0, reason: kind };
  const mode = modeOf(pod, plan.rules);
  const order = orderOf(pod, plan.rules);
  const errors = [mode, order].flatMap((d) => ('error' in d ? [d.error] : []));
  if ('error' in mode || 'error' in order)
    return { ...base, action: 'invalid', order: 0, reason: `bad drain label: ${errors.join('; ')}` };
  const why =
    mode.by === order.by || order.by === 'default'
      ? mode.by
      : `${mode.value} by ${mode.by}, order ${order.value} by ${order.by}`;
  return { ...base, action: mode.value, order: order.value, reason: why };
}

const ACTION_RANK: Readonly<Record<DrainAction, number>> = {
  invalid: 0,
  evict: 1,
  'wait-completed': 1,
  skip: 2,
  ignore: 3,
};

/**
 * Every pod of the node with what the drain does with it, in the drain's order: pods with a bad
 * label first (they stop it), then evicted and waited-for pods by ascending order, then those left.
 */
export function planDrain(pods: readonly V1Pod[], plan: PlanRules): PlannedPod[] {
  return pods
    .map((p) => planPod(p, plan))
    .sort(
      (a, b) =>
        ACTION_RANK[a.action] - ACTION_RANK[b.action] || a.order - b.order || a.key.localeCompare(b.key),
    );
}

/** The orders of the pods the drain evicts or waits for, ascending, each with its pods. */
export function orderGroups(planned: readonly PlannedPod[]): { order: number; pods: PlannedPod[] }[] {
  const active = planned.filter((p) => p.action === 'evict' || p.action === 'wait-completed');
  const orders = [...new Set(active.map((p) => p.order))].sort((a, b) => a - b);
  return orders.map((order) => ({ order, pods: active.filter((p) => p.order === order) }));
}
