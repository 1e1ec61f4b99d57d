// PodDisruptionBudget arithmetic as kube's disruption controller does it, and the eviction verdict.
import { fromLabelSelectorObject, matches, type Selector } from '../../selector/label-selector.js';
import { isObject, valueAt } from './json.js';
import type { StoredObject } from './resources.js';

/** The status fields the server maintains on every PDB. */
export interface PdbNumbers {
  currentHealthy: number;
  desiredHealthy: number;
  expectedPods: number;
  disruptionsAllowed: number;
}

/**
 * Parsed selectors by the stored `spec.selector` object (stored objects are never mutated, and a
 * status write keeps the spec's objects: the parse survives the PDB's many status updates); null
 * selects nothing.
 */
const selectors = new WeakMap<object, Selector | null>();

function selectorOf(pdb: StoredObject): Selector | null {
  const raw = valueAt(pdb, 'spec.selector');
  if (!isObject(raw)) return null;
  let selector = selectors.get(raw);
  if (selector === undefined) {
    try {
      selector = fromLabelSelectorObject(raw);
    } catch {
      selector = null; // an invalid selector selects nothing, as kube's controller skips such PDBs
    }
    selectors.set(raw, selector);
  }
  return selector;
}

/** True when the PDB's selector selects the pod. A PDB without a selector selects nothing. */
export function selects(pdb: StoredObject, pod: StoredObject): boolean {
  const selector = selectorOf(pdb);
  return selector !== null && matches(selector, pod.metadata.labels);
}

/** Ready=True and not being deleted. */
function isHealthy(pod: StoredObject): boolean {
  if (pod.metadata.deletionTimestamp !== undefined) return false;
  return isReady(pod);
}

function isReady(pod: StoredObject): boolean {
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
function computePdb(pdb: StoredObject, podsInNamespace: Iterable<StoredObject>): PdbNumbers {
  let expectedPods = 0;
  let currentHealthy = 0;
  for (const pod of podsInNamespace) {
    if (!selects(pdb, pod)) continue;
    expectedPods++;
    if (isHealthy(pod)) currentHealthy++;
  }
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

interface Tally {
  /** spec.selector as JSON when counted: a new selector means a full recount. */
  selector: string;
  /** resourceVersion the full count saw; older pod changes are already in it. */
  countedAt: number;
  expected: number;
  healthy: number;
}

function contribution(pdb: StoredObject, pod: StoredObject | undefined): [number, number] {
  if (!pod || !selects(pdb, pod)) return [0, 0];
  return [1, isHealthy(pod) ? 1 : 0];
}

/**
 * Pod counts per PDB, kept incrementally so that a pod write costs O(PDBs in its namespace), not
 * O(pods): the simulator writes thousands of pods.
 */
export class BudgetTallies {
  private readonly tallies = new Map<string, Tally>();

  private static key(pdb: StoredObject): string {
    return `${pdb.metadata.namespace ?? ''}/${pdb.metadata.name}`;
  }

  /** The PDB's numbers; counts `pods` in full the first time and when the selector changed. */
  numbers(pdb: StoredObject, pods: () => Iterable<StoredObject>, version: number): PdbNumbers {
    const key = BudgetTallies.key(pdb);
    const selector = JSON.stringify(valueAt(pdb, 'spec.selector') ?? null);
    let tally = this.tallies.get(key);
    if (tally?.selector !== selector) {
      const counted = computePdb(pdb, pods());
      tally = {
        selector,
        countedAt: version,
        expected: counted.expectedPods,
        healthy: counted.currentHealthy,
      };
      this.tallies.set(key, tally);
    }
    const desiredHealthy = desired(pdb, tally.expected);
    return {
      currentHealthy: tally.healthy,
      desiredHealthy,
      expectedPods: tally.expected,
      disruptionsAllowed: Math.max(0, tally.healthy - desiredHealthy),
    };
  }

  /** Applies one pod change (at resourceVersion `version`) to the PDBs it touches; returns those. */
  podChanged(
    budgets: Iterable<StoredObject>,
    change: { previous: StoredObject | undefined; next: StoredObject | undefined; version: number },
  ): StoredObject[] {
    const touched: StoredObject[] = [];
    for (const pdb of budgets) {
      const [expectedBefore, healthyBefore] = contribution(pdb, change.previous);
      const [expectedAfter, healthyAfter] = contribution(pdb, change.next);
      if (expectedBefore === 0 && expectedAfter === 0) continue;
      touched.push(pdb);
      const tally = this.tallies.get(BudgetTallies.key(pdb));
      if (!tally || change.version <= tally.countedAt) continue;
      tally.expected += expectedAfter - expectedBefore;
      tally.healthy += healthyAfter - healthyBefore;
    }
    return touched;
  }

  forget(pdb: StoredObject): void {
    this.tallies.delete(BudgetTallies.key(pdb));
  }
}
