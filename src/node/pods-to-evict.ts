// Which pods a drain of this node evicts: kubectl drain's skip rules, pure, shared by the drainer and
// the PDB pre-flight (src/blockers/pdb.ts) so that both agree on the same set.
import type { V1Pod } from '../kube/kube.js';
import { matches, type Selector } from '../selector/label-selector.js';
import type { PodNote } from './drainer.js';

/** kubelet's static pods are shown through mirror pods carrying this annotation; they cannot be evicted. */
export const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';

function nameOf(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
}

function isDaemonSetManaged(pod: V1Pod): boolean {
  return (pod.metadata?.ownerReferences ?? []).some((r) => r.kind === 'DaemonSet' && r.controller !== false);
}

/** Why a pod is not evicted, or undefined when it is. */
export function skipReason(pod: V1Pod, drainPodSelector: Selector): string | undefined {
  const meta = pod.metadata;
  if (isDaemonSetManaged(pod)) return 'DaemonSet-managed';
  if (meta?.annotations?.[MIRROR_POD_ANNOTATION] !== undefined) return 'mirror pod';
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return `terminal (${phase})`;
  if (!matches(drainPodSelector, meta?.labels)) return 'does not match --drain-pod-selector';
  return undefined;
}

/** Splits this node's pods into those a drain evicts and those it skips on purpose. */
export function podsToEvict(
  pods: readonly V1Pod[],
  drainPodSelector: Selector,
): { evict: V1Pod[]; skipped: PodNote[] } {
  const evict: V1Pod[] = [];
  const skipped: PodNote[] = [];
  for (const pod of pods) {
    const reason = skipReason(pod, drainPodSelector);
    if (reason === undefined) evict.push(pod);
    else skipped.push({ pod: nameOf(pod), reason });
  }
  return { evict, skipped };
}
