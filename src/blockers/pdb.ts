// PdbBlocker: pre-flight before taking the lock — a pod the drain would evict is covered by a
// PodDisruptionBudget that allows no disruption right now, so the drain would stall holding the lock;
// or by more than one PodDisruptionBudget, which the Eviction API refuses outright (HTTP 500), so the
// drain would fail. A PDB covers pods of its own namespace only, so the pre-flight reads the PDBs of
// the namespaces of this node's pods, never every PDB of the cluster (DESIGN §13).
import type { Kube, V1Pod, V1PodDisruptionBudget } from '../kube/kube.js';
import { skipReason } from '../drain/kube-drainer.js';
import { fromLabelSelectorObject, matches, type Selector } from '../selector/label-selector.js';
import type { Blocker, Verdict } from './blocker.js';

export interface PdbBlockerOptions {
  kube: Kube;
  nodeId: string;
  /** --drain-pod-selector: the same skip rules as the drain. */
  drainPodSelector: Selector;
}

function nameOf(obj: { metadata?: { namespace?: string; name?: string } }): string {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}

/** Does this PDB select this pod? A PDB without a selector selects nothing (policy/v1). */
function covers(pdb: V1PodDisruptionBudget, pod: V1Pod): boolean {
  if (pdb.metadata?.namespace !== pod.metadata?.namespace) return false;
  const selector = pdb.spec?.selector;
  if (selector === undefined) return false;
  let parsed: Selector;
  try {
    parsed = fromLabelSelectorObject(selector);
  } catch {
    return true; // a selector we cannot read might cover the pod: assume it does (fail safe)
  }
  return matches(parsed, pod.metadata?.labels);
}

export class PdbBlocker implements Blocker {
  readonly name = 'pdb';
  readonly atSlot = true;

  constructor(private readonly options: PdbBlockerOptions) {}

  async check(signal?: AbortSignal): Promise<Verdict> {
    const { kube, nodeId, drainPodSelector } = this.options;
    const pods = await kube.listPods(undefined, { fieldSelector: `spec.nodeName=${nodeId}` }, signal);
    // The drain's own skip rules, so that the pre-flight looks at exactly the pods it would evict.
    const evict = pods.filter(
      (p) => p.spec?.nodeName === nodeId && skipReason(p, drainPodSelector) === undefined,
    );
    if (evict.length === 0) return { blocked: false };
    const namespaces = [...new Set(evict.map((p) => p.metadata?.namespace ?? ''))].sort();
    const pdbs: V1PodDisruptionBudget[] = [];
    for (const namespace of namespaces)
      pdbs.push(...(await kube.listPodDisruptionBudgets(namespace, signal)));
    for (const pod of evict) {
      const verdict = this.judge(
        pod,
        pdbs.filter((b) => covers(b, pod)),
      );
      if (verdict.blocked) return verdict;
    }
    return { blocked: false };
  }

  /** One pod against the PDBs that cover it. */
  private judge(pod: V1Pod, covering: V1PodDisruptionBudget[]): Verdict {
    if (covering.length > 1) {
      return {
        blocked: true,
        reason:
          `pod ${nameOf(pod)} is covered by ${covering.length} PodDisruptionBudgets (${covering.map(nameOf).join(', ')}): ` +
          'the Eviction API refuses to evict such a pod, so the drain would fail',
      };
    }
    // disruptionsAllowed absent = the controller has not computed it yet: unknown, so it blocks.
    const pdb = covering.find((b) => (b.status?.disruptionsAllowed ?? 0) <= 0);
    if (pdb === undefined) return { blocked: false };
    return {
      blocked: true,
      reason: `PodDisruptionBudget ${nameOf(pdb)} allows no disruption of pod ${nameOf(pod)}`,
    };
  }
}
