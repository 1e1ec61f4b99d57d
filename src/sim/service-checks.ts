// What the services on the nodes saw of a run: the single-replica Deployments' time without a ready
// replica (simulate --single-replica-workloads), and the nodes a run left without their reboot, each
// with the last reason it was blocked for (a PodDisruptionBudget over a single replica, say).
import type { SimCluster } from './cluster.js';
import type { PhaseChange } from './observer.js';
import type { NodeResult, SimulationResult } from './simulation-types.js';

/** Node → the reason of its last held-back status (blocked, outside-window, …), for each node not rebooted. */
function blockedNodes(nodes: readonly NodeResult[], phases: readonly PhaseChange[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of nodes.filter((x) => x.neededReboot && x.reboots === 0)) {
    const last = phases.filter((p) => p.node === n.name && p.phase === 'blocked').at(-1);
    if (last !== undefined) out[n.name] = last.reason;
  }
  return out;
}

/** The run's blocked nodes, and with --single-replica-workloads its single replicas' downtime. */
export function serviceChecksOf(
  cluster: SimCluster,
  nodes: readonly NodeResult[],
  phases: readonly PhaseChange[],
): Pick<SimulationResult, 'singleReplicas' | 'blockedNodes'> {
  return { ...singleReplicasOf(cluster), blockedNodes: blockedNodes(nodes, phases) };
}

/** simulate --single-replica-workloads: the Deployments and their seconds without a ready replica. */
function singleReplicasOf(cluster: SimCluster): Pick<SimulationResult, 'singleReplicas'> {
  const model = cluster.workloads?.singles;
  if (model === undefined) return {};
  const down = [...model.unavailableMs()].filter(([, ms]) => ms > 0);
  return {
    singleReplicas: {
      deployments: cluster.spec.singleReplicaWorkloads ?? 0,
      unavailableSeconds: Object.fromEntries(down.map(([name, ms]) => [name, Math.ceil(ms / 1000)])),
    },
  };
}
