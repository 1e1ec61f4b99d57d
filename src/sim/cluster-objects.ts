// The objects the simulated cluster starts with and creates: nodes, the agents' DaemonSet and pods,
// blocking batch pods, PodDisruptionBudgets.
import type { PdbSpec } from './cluster-spec.js';
import {
  BATCH_NAMESPACE,
  BLOCKING_LABEL,
  STUCK_FINALIZER,
  DS_NAME,
  DS_NAMESPACE,
  SIM_NAMESPACE,
  ZONE_LABEL,
} from './cluster-spec.js';
import type { SimDaemonSet, SimNode, SimPdb, SimPod } from './objects.js';
import { CONTROL_PLANE_LABEL } from '../node/role.js';
import { ETCD_NAMESPACE } from '../blockers/control-plane.js';
import { MIRROR_ANNOTATION } from '../drain/drain-plan.js';

export function readyCondition(
  ready: boolean,
  at: string,
  reason: string,
): { type: string; status: 'True' | 'False'; reason: string; lastTransitionTime: string } {
  return { type: 'Ready', status: ready ? 'True' : 'False', reason, lastTransitionTime: at };
}

/** The kernel a simulated node runs after `reboots` reboots (each reboot installs the next). */
export function simKernel(reboots: number): string {
  return `6.1.0-${reboots + 1}-sim`;
}

/**
 * A node as the simulated kubelet registers it; `zone` labels it topology.kubernetes.io/zone,
 * `controlPlane` node-role.kubernetes.io/control-plane.
 */
export function nodeObject(
  name: string,
  boot: { bootID: string; cordoned: boolean; zone?: string; controlPlane?: boolean },
  at: string,
): SimNode {
  const labels: Record<string, string> = { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' };
  if (boot.zone !== undefined) labels[ZONE_LABEL] = boot.zone;
  if (boot.controlPlane === true) labels[CONTROL_PLANE_LABEL] = '';
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels },
    spec: boot.cordoned ? { unschedulable: true } : {},
    status: {
      conditions: [readyCondition(true, at, 'KubeletReady')],
      nodeInfo: {
        bootID: boot.bootID,
        kubeletVersion: 'v1.31.0',
        osImage: 'Simulated Linux',
        kernelVersion: simKernel(0),
      },
    },
  };
}

/** The agents' DaemonSet, running on all `nodes` nodes (its status says so, as its controller would). */
export function daemonSet(nodes: number): SimDaemonSet {
  const labels = { name: DS_NAME };
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: DS_NAME, namespace: DS_NAMESPACE, labels },
    spec: {
      selector: { matchLabels: labels },
      template: { metadata: { labels }, spec: { containers: [{ name: 'kured-ts', image: 'kured-ts:sim' }] } },
    },
    status: { desiredNumberScheduled: nodes },
  };
}

/** The etcd member of a control-plane node: a static pod's mirror (the drain leaves it). */
export function etcdPod(node: string): SimPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `etcd-${node}`,
      namespace: ETCD_NAMESPACE,
      labels: { component: 'etcd', tier: 'control-plane' },
      annotations: { [MIRROR_ANNOTATION]: 'sim' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node, controller: true }],
    },
    spec: { nodeName: node, containers: [{ name: 'etcd', image: 'registry.k8s.io/etcd:3.5' }] },
  };
}

export function agentPod(node: string): SimPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${DS_NAME}-${node}`,
      namespace: DS_NAMESPACE,
      labels: { name: DS_NAME },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: DS_NAME, controller: true }],
    },
    spec: { nodeName: node, containers: [{ name: 'kured-ts', image: 'kured-ts:sim' }] },
  };
}

export function blockingPod(node: string): SimPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `batch-${node}`, namespace: BATCH_NAMESPACE, labels: { [BLOCKING_LABEL]: 'true' } },
    spec: { nodeName: node, containers: [{ name: 'job', image: 'registry.example/job:1' }] },
  };
}

/** A pod that, once deleted, stays terminating for good: its finalizer is never removed. */
export function stuckPod(node: string): SimPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `stuck-${node}`,
      namespace: BATCH_NAMESPACE,
      labels: { app: 'stuck' },
      finalizers: [STUCK_FINALIZER],
    },
    spec: { nodeName: node, containers: [{ name: 'job', image: 'registry.example/job:1' }] },
  };
}

/** Held terminating by a finalizer nobody removes (an undrainable pod): the kubelet never removes it. */
export function stuck(pod: SimPod): boolean {
  return (pod.metadata.finalizers ?? []).length > 0;
}

export function pdbObject(app: string, pdb: Exclude<PdbSpec, { kind: 'none' }>): SimPdb {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: app, namespace: SIM_NAMESPACE },
    spec: { selector: { matchLabels: { app } }, [pdb.kind]: pdb.value },
  };
}
