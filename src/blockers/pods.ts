// PodsBlocker: --blocking-pod-selector; a matching pod on this node that is not terminal blocks.
import type { Kube, V1Pod } from '../kube/kube.js';
import { formatLabelSelector, matches, type Selector } from '../selector/label-selector.js';
import type { Blocker, Verdict } from './blocker.js';

export interface PodsBlockerOptions {
  kube: Kube;
  nodeId: string;
  /** Each selector ANDs its terms; the selectors OR. Empty = never blocks. */
  selectors: readonly Selector[];
}

/** Succeeded and Failed pods are done: they hold nothing a reboot could break. */
function isTerminal(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
}

function name(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
}

export class PodsBlocker implements Blocker {
  readonly name = 'pods';

  constructor(private readonly options: PodsBlockerOptions) {}

  async check(signal?: AbortSignal): Promise<Verdict> {
    const { kube, nodeId, selectors } = this.options;
    for (const selector of selectors) {
      const text = formatLabelSelector(selector);
      const pods = await kube.listPods(
        undefined,
        { labelSelector: text, fieldSelector: `spec.nodeName=${nodeId}` },
        signal,
      );
      // Checked again here: the field and label selectors are the server's, the decision is ours.
      const blocking = pods.filter(
        (p) => p.spec?.nodeName === nodeId && matches(selector, p.metadata?.labels) && !isTerminal(p),
      );
      if (blocking.length > 0) {
        const names = blocking.map(name).sort();
        return { blocked: true, reason: `blocking pods match "${text}": ${names.join(', ')}` };
      }
    }
    return { blocked: false };
  }
}
