// What kube's node lifecycle controller does to taints, done synchronously after each Node write
// (opt-in): node.kubernetes.io/unschedulable follows spec.unschedulable, and not-ready / unreachable
// follow the Ready condition. Code that patches taints must expect such concurrent changes.
import { isObject, valueAt } from './json.js';
import type { StoredObject } from './resources.js';

const UNSCHEDULABLE_TAINT = 'node.kubernetes.io/unschedulable';
const NOT_READY_TAINT = 'node.kubernetes.io/not-ready';
const UNREACHABLE_TAINT = 'node.kubernetes.io/unreachable';
const MANAGED = [UNSCHEDULABLE_TAINT, NOT_READY_TAINT, UNREACHABLE_TAINT];

interface Taint {
  key: string;
  effect: string;
  timeAdded?: string;
  [field: string]: unknown;
}

function readyStatus(node: StoredObject): string | undefined {
  const conditions = valueAt(node, 'status.conditions');
  if (!Array.isArray(conditions)) return undefined;
  const ready: unknown = conditions.find((c) => isObject(c) && c.type === 'Ready');
  return isObject(ready) && typeof ready.status === 'string' ? ready.status : undefined;
}

/** The managed NoSchedule taint keys this node should carry. */
function wanted(node: StoredObject): string[] {
  const keys: string[] = [];
  if (valueAt(node, 'spec.unschedulable') === true) keys.push(UNSCHEDULABLE_TAINT);
  const ready = readyStatus(node);
  if (ready === 'False') keys.push(NOT_READY_TAINT);
  if (ready === 'Unknown') keys.push(UNREACHABLE_TAINT);
  return keys;
}

function isManaged(t: unknown): t is Taint {
  return isObject(t) && typeof t.key === 'string' && MANAGED.includes(t.key) && t.effect === 'NoSchedule';
}

/**
 * The node with its managed taints corrected, or undefined when they are right already. Other
 * taints keep their order; added ones go to the end, as the controller appends them.
 */
export function withControllerTaints(node: StoredObject, now: string): StoredObject | undefined {
  const raw = valueAt(node, 'spec.taints');
  const taints: unknown[] = Array.isArray(raw) ? raw : [];
  const want = wanted(node);
  const have = taints.filter(isManaged).map((t) => t.key);
  const add = want.filter((k) => !have.includes(k));
  const remove = have.filter((k) => !want.includes(k));
  if (add.length === 0 && remove.length === 0) return undefined;
  const next: unknown[] = taints.filter((t) => !(isManaged(t) && remove.includes(t.key)));
  for (const key of add) next.push({ key, effect: 'NoSchedule', timeAdded: now });
  const spec = isObject(node.spec) ? node.spec : {};
  const nextSpec: Record<string, unknown> = { ...spec, taints: next };
  if (next.length === 0) delete nextSpec.taints;
  return { ...node, spec: nextSpec };
}

/**
 * kube-apiserver's TaintNodesByCondition admission plugin: every Node created through the API starts
 * with node.kubernetes.io/not-ready:NoSchedule, until the node lifecycle controller sees it Ready.
 */
export function addCreationTaint(node: StoredObject): void {
  const spec = isObject(node.spec) ? node.spec : {};
  const taints: unknown[] = Array.isArray(spec.taints) ? spec.taints : [];
  if (taints.some((t) => isObject(t) && t.key === NOT_READY_TAINT && t.effect === 'NoSchedule')) return;
  node.spec = { ...spec, taints: [...taints, { key: NOT_READY_TAINT, effect: 'NoSchedule' }] };
}
