// ControlPlaneBlocker: a control-plane node reboots only with quorum to spare. Every other
// control-plane node must be Ready, and so must the etcd members on them: static pods labelled
// component=etcd in kube-system (kubeadm's and most distributions' stacked etcd; a cluster whose
// etcd runs elsewhere has none, and then the Nodes alone are judged). Rebooting a member while
// another is down loses quorum (OCPBUGS-100060), and the API server with it.
//
// Judged for a node that would take a slot now (atSlot), and again right before the reboot, after
// the drain and --reboot-delay (beforeReboot): etcd can lose a member while this node drains, and
// the agent then aborts rather than reboot (src/agent/decision/cycle.ts). Judged for control-plane
// nodes only (controlPlaneOnly): a worker asks nothing of it.
import type { Kube, V1Node, V1Pod } from '../kube/kube.js';
import { listControlPlane } from '../node/role.js';
import type { Blocker, Verdict } from './blocker.js';

/** Where the etcd members run as static pods, and how they are labelled. */
export const ETCD_NAMESPACE = 'kube-system';
const ETCD_SELECTOR = 'component=etcd';

export interface ControlPlaneBlockerOptions {
  kube: Kube;
  nodeId: string;
}

function ready(conditions: readonly { type: string; status: string }[] | undefined): boolean {
  return (conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** Is this etcd member out of the quorum: not Ready, or on its way out? */
function outOfQuorum(p: V1Pod): boolean {
  return !ready(p.status?.conditions) || p.metadata?.deletionTimestamp !== undefined;
}

/** The first other control-plane node that is not Ready, as a verdict. */
function nodeDown(others: readonly V1Node[]): Verdict | undefined {
  const down = others.find((n) => !ready(n.status?.conditions));
  if (down === undefined) return undefined;
  const name = down.metadata?.name ?? '?';
  return {
    blocked: true,
    reason: `control-plane node ${name} is not Ready: no reboot of another member now`,
  };
}

/** The first other control-plane node whose etcd member is missing or not Ready, as a verdict. */
function memberDown(others: readonly V1Node[], etcd: readonly V1Pod[]): Verdict | undefined {
  for (const node of others) {
    const name = node.metadata?.name ?? '?';
    const members = etcd.filter((p) => p.spec?.nodeName === name);
    if (members.length === 0)
      return {
        blocked: true,
        reason: `etcd member on control-plane node ${name} not found: its quorum has no member to spare`,
      };
    const down = members.find(outOfQuorum);
    if (down !== undefined)
      return {
        blocked: true,
        reason: `etcd member ${down.metadata?.name ?? '?'} on ${name} is not Ready: its quorum has no member to spare`,
      };
  }
  return undefined;
}

/**
 * An etcd member on a node that carries no control-plane label (placed there by hand) that is not
 * Ready: it is a quorum member all the same.
 */
function strayMemberDown(
  nodeId: string,
  nodes: readonly V1Node[],
  etcd: readonly V1Pod[],
): Verdict | undefined {
  const labelled = new Set(nodes.map((n) => n.metadata?.name));
  const down = etcd.find(
    (p) => p.spec?.nodeName !== nodeId && !labelled.has(p.spec?.nodeName) && outOfQuorum(p),
  );
  if (down === undefined) return undefined;
  return {
    blocked: true,
    reason: `etcd member ${down.metadata?.name ?? '?'} on ${down.spec?.nodeName ?? '?'} is not Ready: its quorum has no member to spare`,
  };
}

/**
 * The verdict over the control plane as listed (pure): blocked while another control-plane node, or
 * the etcd member on one (when the cluster runs etcd as pods at all), is not Ready; naming the first.
 */
export function judgeQuorum(nodeId: string, nodes: readonly V1Node[], etcd: readonly V1Pod[]): Verdict {
  if (!nodes.some((n) => n.metadata?.name === nodeId)) return { blocked: false };
  const others = nodes.filter((n) => n.metadata?.name !== nodeId);
  const verdict =
    nodeDown(others) ??
    (etcd.length === 0 ? undefined : (memberDown(others, etcd) ?? strayMemberDown(nodeId, nodes, etcd)));
  return verdict ?? { blocked: false };
}

export class ControlPlaneBlocker implements Blocker {
  readonly name = 'control-plane';
  readonly atSlot = true;
  readonly beforeReboot = true;
  readonly controlPlaneOnly = true;

  constructor(private readonly o: ControlPlaneBlockerOptions) {}

  async check(signal?: AbortSignal): Promise<Verdict> {
    const nodes = await listControlPlane((labelSelector) => this.o.kube.listNodes({ labelSelector }, signal));
    if (!nodes.some((n) => n.metadata?.name === this.o.nodeId)) return { blocked: false };
    const etcd = await this.o.kube.listPods(ETCD_NAMESPACE, { labelSelector: ETCD_SELECTOR }, signal);
    return judgeQuorum(this.o.nodeId, nodes, etcd);
  }
}
