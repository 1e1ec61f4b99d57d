// Single replicas (--single-replica restart): a pod the drain would evict that is the only ready
// replica of a Deployment is an outage when evicted, PDB or not (kubernetes#48307). Where the
// Deployment can surge (RollingUpdate, maxSurge ≥ 1) the agent does what `kubectl rollout restart`
// does before the drain, and lets the drain evict the old pod once a new one is ready elsewhere.
// This file holds the pure decision, a pod's and its owners' verdict, with its reason; the actions
// are in rollout-restart.ts.
import type { V1Deployment, V1Pod, V1ReplicaSet } from '../kube/kube.js';

/** The pod template annotation `kubectl rollout restart` sets to the time of the restart. */
export const RESTARTED_AT_ANNOTATION = 'kubectl.kubernetes.io/restartedAt';

/** What to do with one pod the drain would evict, and why. */
export type ReplicaVerdict =
  /** Not the only ready replica of anything (or --single-replica off): evicted as always. */
  | { action: 'evict' }
  /** The only ready replica, and its Deployment can surge: restart the Deployment first. */
  | { action: 'restart'; deployment: string; reason: string }
  /** The only ready replica (or a pod nothing recreates), but no restart can help: evicted as today. */
  | { action: 'keep'; reason: string };

/** The controller owner of an object (kind and name), when it has one. */
export function controllerOf(obj: {
  metadata?: { ownerReferences?: { kind: string; name: string; controller?: boolean }[] };
}): { kind: string; name: string } | undefined {
  return obj.metadata?.ownerReferences?.find((o) => o.controller === true);
}

/**
 * maxSurge resolved as Kubernetes resolves it (intstr.GetScaledValueFromIntOrPercent, rounding up for
 * surge): an integer, or a percentage of the desired replicas rounded up; default 25%.
 */
export function resolveMaxSurge(maxSurge: number | string | undefined, replicas: number): number {
  const value = maxSurge ?? '25%';
  if (typeof value === 'number') return value;
  const percent = /^([0-9]+)%$/.exec(value);
  if (percent?.[1] !== undefined) return Math.ceil((Number(percent[1]) * replicas) / 100);
  // an integer given as a string: kube's API would have refused anything else
  return /^[0-9]+$/.test(value) ? Number(value) : 0;
}

function isReady(pod: V1Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
}

function nameOf(obj: { metadata?: { namespace?: string; name?: string } }): string {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}

/**
 * The verdict for a ready pod owned by a ReplicaSet owned by `deployment`: restart when it is the
 * Deployment's only ready replica and the Deployment can surge a new pod before the old one goes.
 */
export function deploymentVerdict(pod: V1Pod, deployment: V1Deployment): ReplicaVerdict {
  if (!isReady(pod) || (deployment.status?.readyReplicas ?? 0) > 1) return { action: 'evict' };
  const name = `Deployment ${nameOf(deployment)}`;
  const cannot = cannotSurge(deployment);
  if (cannot !== undefined) return { action: 'keep', reason: `${name} has ${cannot}` };
  return { action: 'restart', deployment: nameOf(deployment), reason: `only ready replica of ${name}` };
}

/** Why a restart of the Deployment would stop its pod before a new one is ready; undefined when it surges. */
export function cannotSurge(deployment: V1Deployment): string | undefined {
  const strategy = deployment.spec?.strategy;
  if (strategy?.type === 'Recreate') return 'strategy Recreate: a restart stops the old pod first';
  const surge = resolveMaxSurge(strategy?.rollingUpdate?.maxSurge, deployment.spec?.replicas ?? 1);
  return surge < 1 ? 'maxSurge 0: a restart stops the old pod first' : undefined;
}

/** What the verdict needs beyond the pod: its owners, read on demand. */
export interface Owners {
  replicaSet(namespace: string, name: string): Promise<V1ReplicaSet>;
  deployment(namespace: string, name: string): Promise<V1Deployment>;
}

/** The verdict for one pod the drain would evict, reading its owner chain (Pod → ReplicaSet → Deployment). */
export async function replicaVerdict(pod: V1Pod, owners: Owners): Promise<ReplicaVerdict> {
  const namespace = pod.metadata?.namespace ?? '';
  const owner = controllerOf(pod);
  if (owner === undefined)
    return { action: 'keep', reason: `pod ${nameOf(pod)} has no controller: nothing recreates it` };
  if (owner.kind === 'StatefulSet')
    return {
      action: 'keep',
      reason: `StatefulSet ${namespace}/${owner.name} is not restarted (only Deployments are)`,
    };
  if (owner.kind !== 'ReplicaSet') return { action: 'evict' };
  const rs = await owners.replicaSet(namespace, owner.name);
  const top = controllerOf(rs);
  if (top?.kind !== 'Deployment') return { action: 'evict' };
  return deploymentVerdict(pod, await owners.deployment(namespace, top.name));
}
