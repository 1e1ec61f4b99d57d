// QuarantineBlocker: a node whose drain failed takes no slot again until the pods that stopped the
// drain change or --quarantine-retry passes (src/node/quarantine.ts). One read of the node per
// decision; the node's pods are listed only while it is quarantined.
import type { Clock } from '../clock/clock.js';
import type { Kube } from '../kube/kube.js';
import type { NodeOps } from '../node/node.js';
import {
  QUARANTINE_LABEL,
  REBOOT_LOOP_VALUE,
  isQuarantined,
  judgeQuarantine,
  type PresentPod,
} from '../node/quarantine.js';
import type { Blocker, Verdict } from './blocker.js';

export interface QuarantineBlockerOptions {
  kube: Kube;
  node: NodeOps;
  nodeId: string;
  clock: Clock;
  /** --quarantine-retry in ms; 0 = only a change of its pods lifts it. */
  retryMs: number;
}

export class QuarantineBlocker implements Blocker {
  readonly name = 'quarantine';

  constructor(private readonly options: QuarantineBlockerOptions) {}

  async check(signal?: AbortSignal): Promise<Verdict> {
    const { kube, node, nodeId, clock, retryMs } = this.options;
    const state = await node.get(signal);
    if (!isQuarantined(state.labels)) return { blocked: false };
    // a reboot loop's quarantine is the reboot-loop blocker's (its own metric label and alert)
    if (state.labels[QUARANTINE_LABEL] === REBOOT_LOOP_VALUE) return { blocked: false };
    const pods = await kube.listPods(undefined, { fieldSelector: `spec.nodeName=${nodeId}` }, signal);
    const present = pods.map((p): PresentPod => ({
      pod: `${p.metadata?.namespace ?? ''}/${p.metadata?.name ?? ''}`,
      ...(p.metadata?.uid === undefined ? {} : { uid: p.metadata.uid }),
    }));
    const verdict = judgeQuarantine({ node: state, pods: present, now: clock.now(), retryMs });
    return verdict.held ? { blocked: true, reason: verdict.reason } : { blocked: false };
  }
}
