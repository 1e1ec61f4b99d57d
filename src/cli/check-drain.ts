// What `kured-ts check` says the drain would do with each pod of the node, in the drain's order,
// and why (the label or the --drain-rules entry that decided): the drain's own plan (planDrain).
import type { Config } from '../config/config.js';
import type { Kube } from '../kube/kube.js';
import { planDrain, type DrainAction } from '../drain/drain-plan.js';

/** One pod in the drain's plan. */
export interface DrainPlanItem {
  /** namespace/name */
  pod: string;
  action: DrainAction;
  order: number;
  reason: string;
}

/** The words the text report uses for each action. */
const ACTION_TEXT: Record<DrainAction, string> = {
  evict: 'evict',
  'wait-completed': 'wait until completed',
  skip: 'skip',
  ignore: 'pass over',
  invalid: 'FAILS THE DRAIN',
};

/** The drain's plan for the node's pods now (reading only). */
export async function evaluateDrain(
  kube: Kube,
  node: string,
  config: Pick<Config, 'drainPodSelector' | 'drainRules'>,
  signal: AbortSignal,
): Promise<DrainPlanItem[]> {
  const pods = await kube.listPods(undefined, { fieldSelector: `spec.nodeName=${node}` }, signal);
  return planDrain(pods, { podSelector: config.drainPodSelector, rules: config.drainRules }).map((p) => ({
    pod: p.key,
    action: p.action,
    order: p.order,
    reason: p.reason,
  }));
}

/**
 * A reboot the agent would start whose drain would fail on a pod's bad drain label says so: the
 * agent takes the lock, and its drain fails before any eviction (then --on-drain-failure).
 */
export function withDrainFailure<D extends { kind: string; reason: string }>(
  decision: D,
  plan: readonly DrainPlanItem[],
): D {
  const bad = plan.filter((p) => p.action === 'invalid');
  if (decision.kind !== 'would-reboot' || bad.length === 0) return decision;
  const pods = bad.map((p) => `${p.pod} (${p.reason})`).join(', ');
  return {
    ...decision,
    reason: `${decision.reason}; but its drain would fail before any eviction on ${pods}`,
  };
}

/** The plan as lines of the text report. */
export function formatDrainPlan(plan: readonly DrainPlanItem[]): string[] {
  if (plan.length === 0) return ['drain: no pod on the node'];
  const active = (a: DrainAction): boolean => a === 'evict' || a === 'wait-completed';
  const width = Math.max(...plan.map((p) => p.pod.length));
  return [
    'drain (in order):',
    ...plan.map((p) => {
      const order = active(p.action) ? `order ${p.order}`.padEnd(10) : ''.padEnd(10);
      return `  ${order}  ${ACTION_TEXT[p.action].padEnd(20)}  ${p.pod.padEnd(width)}  ${p.reason}`;
    }),
  ];
}
