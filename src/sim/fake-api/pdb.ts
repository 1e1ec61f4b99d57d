// PodDisruptionBudget arithmetic as kube's disruption controller does it, and the eviction verdict.
import { fromLabelSelectorObject, matches } from '../../selector/label-selector.js';
import { isObject, valueAt } from './json.js';
import type { StoredObject } from './resources.js';

/** The status fields the server maintains on every PDB. */
export interface PdbNumbers {
  currentHealthy: number;
  desiredHealthy: number;
  expectedPods: number;
  disruptionsAllowed: number;
}

/** True when the PDB's selector selects the pod. A PDB without a selector selects nothing. */
export function selects(pdb: StoredObject, pod: StoredObject): boolean {
  const selector = valueAt(pdb, 'spec.selector');
  if (!isObject(selector)) return false;
  try {
    return matches(fromLabelSelectorObject(selector), pod.metadata.labels);
  } catch {
    return false; // an invalid selector selects nothing, as kube's controller skips such PDBs
  }
}

/** Ready=True and not being deleted. */
export function isHealthy(pod: StoredObject): boolean {
  if (pod.metadata.deletionTimestamp !== undefined) return false;
  return isReady(pod);
}

export function isReady(pod: StoredObject): boolean {
  const conditions = valueAt(pod, 'status.conditions');
  if (!Array.isArray(conditions)) return false;
  return conditions.some((c) => isObject(c) && c.type === 'Ready' && c.status === 'True');
}

/** Resolves an int-or-percent against `total`; percentages round up, as kube does. */
function scaled(value: unknown, total: number): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value !== 'string') return undefined;
  const m = /^(\d+)%$/.exec(value);
  if (m) return Math.ceil((Number(m[1]) * total) / 100);
  return /^\d+$/.test(value) ? Number(value) : undefined;
}

function desired(pdb: StoredObject, expected: number): number {
  const maxUnavailable = scaled(valueAt(pdb, 'spec.maxUnavailable'), expected);
  if (maxUnavailable !== undefined) return Math.max(0, expected - maxUnavailable);
  return scaled(valueAt(pdb, 'spec.minAvailable'), expected) ?? 1;
}

/** The numbers for one PDB over the pods of its namespace. */
export function computePdb(pdb: StoredObject, podsInNamespace: readonly StoredObject[]): PdbNumbers {
  const selected = podsInNamespace.filter((p) => selects(pdb, p));
  const expectedPods = selected.length;
  const currentHealthy = selected.filter(isHealthy).length;
  const desiredHealthy = desired(pdb, expectedPods);
  const disruptionsAllowed = Math.max(0, currentHealthy - desiredHealthy);
  return { currentHealthy, desiredHealthy, expectedPods, disruptionsAllowed };
}

/** The full status object, keeping the condition's transition time while its status holds. */
export function pdbStatus(pdb: StoredObject, numbers: PdbNumbers, now: string): Record<string, unknown> {
  const allowed = numbers.disruptionsAllowed > 0;
  const previous = valueAt(pdb, 'status.conditions');
  const old = Array.isArray(previous)
    ? (previous as unknown[]).find((c) => isObject(c) && c.type === 'DisruptionAllowed')
    : undefined;
  const status = allowed ? 'True' : 'False';
  const since =
    isObject(old) && old.status === status && typeof old.lastTransitionTime === 'string'
      ? old.lastTransitionTime
      : now;
  return {
    observedGeneration: pdb.metadata.generation ?? 1,
    ...numbers,
    conditions: [
      {
        type: 'DisruptionAllowed',
        status,
        reason: allowed ? 'SufficientPods' : 'InsufficientPods',
        message: '',
        observedGeneration: pdb.metadata.generation ?? 1,
        lastTransitionTime: since,
      },
    ],
  };
}

/** Why an eviction is refused, or undefined when it may proceed. */
export function evictionRefusal(
  pdb: StoredObject,
  pod: StoredObject,
  numbers: PdbNumbers,
): string | undefined {
  // kube lets an unready pod go when the budget is met without it (unhealthyPodEvictionPolicy IfHealthyBudget)
  if (!isReady(pod) && numbers.currentHealthy >= numbers.desiredHealthy && numbers.desiredHealthy > 0)
    return undefined;
  const policy = valueAt(pdb, 'spec.unhealthyPodEvictionPolicy');
  if (!isReady(pod) && policy === 'AlwaysAllow') return undefined;
  if (numbers.disruptionsAllowed >= 1) return undefined;
  return `The disruption budget ${pdb.metadata.name} needs ${numbers.desiredHealthy} healthy pods and has ${numbers.currentHealthy} currently`;
}
