// Which PodDisruptionBudgets cover a pod: for the reasons the drain and the PDB pre-flight give when
// the Eviction API did not name them (a 429 without a cause, a 500 for a pod under several budgets).
// One list of the pod's namespace, read only when such an answer came.
import type { Kube, V1Pod, V1PodDisruptionBudget } from '../kube/kube.js';
import { fromLabelSelectorObject, matches } from '../selector/label-selector.js';

/** Does the budget select the pod? A budget without a selector (or with one we cannot read) does not. */
function selects(pdb: V1PodDisruptionBudget, pod: V1Pod): boolean {
  const selector = pdb.spec?.selector;
  if (selector === undefined) return false;
  try {
    return matches(fromLabelSelectorObject(selector), pod.metadata?.labels);
  } catch {
    return false;
  }
}

/** "namespace/name" of each budget of the pod's namespace that selects it, sorted; [] when unreadable. */
export async function coveringBudgets(kube: Kube, pod: V1Pod, signal?: AbortSignal): Promise<string[]> {
  let pdbs: V1PodDisruptionBudget[];
  try {
    pdbs = await kube.listPodDisruptionBudgets(pod.metadata?.namespace, signal);
  } catch {
    return [];
  }
  return pdbs
    .filter((p) => selects(p, pod))
    .map((p) => `${p.metadata?.namespace ?? ''}/${p.metadata?.name ?? ''}`)
    .sort();
}
