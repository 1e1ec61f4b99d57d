// The workloads the simulated cluster starts with: ReplicaSet pods spread over the nodes (with a PDB
// each), and the batch pods that block the first nodes' reboots for a while.
import { blockingPod, pdbObject, stuckPod } from './cluster-objects.js';
import { DRAIN_ORDER_LABEL } from '../drain/drain-plan.js';
import {
  BATCH_NAMESPACE,
  REPLICA_LABEL,
  SIM_NAMESPACE,
  STORAGE_NAMESPACE,
  type ClusterSpec,
} from './cluster-spec.js';
import type { SimPdb, SimPod, SimServer } from './objects.js';
import { DeploymentModel, type SimDeployment } from './deployments.js';
import { randomHex, type Random } from './random.js';
import type { VirtualTime } from './virtual-time.js';
import { startVolumes, type SimVolumes } from './volumes.js';

/** What the start-up workloads are made with. */
export interface WorkloadContext {
  server: SimServer;
  time: VirtualTime;
  spec: ClusterSpec;
  names: readonly string[];
  random: Random;
  isoNow: () => string;
}

/** `i` padded with zeros to `width` digits (node and workload names sort as numbers). */
export function pad(i: number, width: number): string {
  return String(i).padStart(width, '0');
}

/** `podsPerNode` pods per node, in workloads of `replicasPerWorkload`, Running and Ready; and the undrainable pods. */
function createWorkloads(c: WorkloadContext): void {
  const { spec } = c;
  const total = spec.nodes * spec.podsPerNode;
  const replicas = Math.max(1, spec.replicasPerWorkload);
  const workloads = Math.ceil(total / replicas);
  let made = 0;
  for (let w = 1; w <= workloads; w++) {
    const app = `app-${pad(w, String(workloads).length)}`;
    if (spec.pdb.kind !== 'none') c.server.create<SimPdb>('poddisruptionbudgets', pdbObject(app, spec.pdb));
    for (let r = 1; r <= replicas && made < total; r++, made++) {
      const node = c.names[made % c.names.length] ?? '';
      c.server.create<SimPod>('pods', readyPod(workloadPod(c, app, `${app}-${r}`), node, c.isoNow()));
    }
  }
  createStuckPods(c);
  if (c.spec.storagePods === true) createStoragePods(c);
}

/**
 * simulate --storage-pods: a storage daemon on every node (namespace storage, label
 * kured-ts.dev/drain-order=10): the drain evicts it only once the node's other pods are gone.
 * Not recreated (its node's storage comes back with the node, outside the simulation).
 */
function createStoragePods(c: WorkloadContext): void {
  for (const node of c.names) {
    const pod: SimPod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: `osd-${node}`,
        namespace: STORAGE_NAMESPACE,
        labels: { app: 'osd', [DRAIN_ORDER_LABEL]: '10' },
      },
      spec: {
        terminationGracePeriodSeconds: c.spec.graceSeconds,
        containers: [{ name: 'osd', image: 'registry.example/osd:1' }],
      },
    };
    c.server.create<SimPod>('pods', readyPod(pod, node, c.isoNow()));
  }
}

/**
 * simulate --single-replica-workloads N: N Deployments of one replica (solo-1 …), each placed on a
 * node that needs a reboot (round robin), with a PDB of --pdb's form; their rollouts are modelled
 * (deployments.ts). Undefined without any.
 */
function createSingleReplicas(c: WorkloadContext, needing: number): DeploymentModel | undefined {
  const count = c.spec.singleReplicaWorkloads ?? 0;
  if (count <= 0) return undefined;
  const model = new DeploymentModel({
    server: c.server,
    nowMs: () => c.time.nowMs(),
    defer: (task) => c.time.after(0, task),
  });
  model.start();
  for (let i = 1; i <= count; i++) {
    const app = `solo-${pad(i, String(count).length)}`;
    const node = c.names[(i - 1) % Math.max(1, Math.min(needing, c.names.length))] ?? '';
    if (c.spec.pdb.kind !== 'none')
      c.server.create<SimPdb>('poddisruptionbudgets', pdbObject(app, c.spec.pdb));
    model.create(soloDeployment(app, c.spec.graceSeconds), (pod) => readyPod(pod, node, c.isoNow()));
  }
  return model;
}

function soloDeployment(app: string, graceSeconds: number): SimDeployment {
  return {
    metadata: { name: app, namespace: SIM_NAMESPACE, labels: { app } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app } },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%' } },
      template: {
        metadata: { labels: { app } },
        spec: {
          terminationGracePeriodSeconds: graceSeconds,
          containers: [{ name: 'app', image: 'registry.example/solo:1' }],
        },
      },
    },
  };
}

/** The blocking batch pods on the first nodes; each succeeds after its duration. */
function createBlockingPods(c: WorkloadContext): void {
  const { nodes, durationMs } = c.spec.blockingPods;
  if (durationMs <= 0) return;
  for (const name of c.names.slice(0, nodes)) {
    const pod = c.server.create<SimPod>('pods', readyPod(blockingPod(name), name, c.isoNow()));
    c.time.after(durationMs, () => {
      const current = c.server.get<SimPod>('pods', BATCH_NAMESPACE, pod.metadata.name);
      if (current)
        c.server.update<SimPod>('pods', { ...current, status: { ...current.status, phase: 'Succeeded' } });
    });
  }
}

/** A workload's replica, as its ReplicaSet makes it (Pending, unplaced). */
export function workloadPod(
  c: Pick<WorkloadContext, 'random' | 'spec'>,
  app: string,
  replica: string,
): SimPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${app}-${randomHex(c.random, 5)}`,
      namespace: SIM_NAMESPACE,
      labels: { app, [REPLICA_LABEL]: replica },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: app, controller: true }],
    },
    spec: {
      terminationGracePeriodSeconds: c.spec.graceSeconds,
      containers: [{ name: 'app', image: 'registry.example/app:1' }],
    },
    status: { phase: 'Pending' },
  };
}

/** The pod placed on `node`, Running and Ready since `now`. */
export function readyPod(pod: SimPod, node: string, now: string): SimPod {
  return {
    ...pod,
    spec: { ...pod.spec, nodeName: node },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now }] },
  };
}

/** The undrainable pods: one on each of the first `undrainable` nodes, stuck terminating once deleted. */
function createStuckPods(c: WorkloadContext): void {
  for (const name of c.names.slice(0, c.spec.undrainable ?? 0))
    c.server.create<SimPod>('pods', readyPod(stuckPod(name), name, c.isoNow()));
}

/**
 * The start-up workloads: the replicated ones (and their volumes, --volumes-per-node), the single
 * replicas (--single-replica-workloads; their Deployment model) and the blocking pods, in that order.
 * The models are to stop with the cluster.
 */
export function createStartupWorkloads(c: WorkloadContext, needing: number): StartupWorkloads {
  createWorkloads(c);
  const volumes = startVolumes(c.server, c.time, c.spec.volumes, c.names);
  const singles = createSingleReplicas(c, needing);
  createBlockingPods(c);
  return {
    singles,
    volumes,
    stop: () => {
      singles?.stop();
      volumes?.stop();
    },
  };
}

/** The models of the start-up workloads, to stop with the cluster. */
export interface StartupWorkloads {
  /** --single-replica-workloads: the Deployments' model; undefined without. */
  singles: DeploymentModel | undefined;
  /** --volumes-per-node: the nodes' CSI volumes; undefined without. */
  volumes: SimVolumes | undefined;
  stop(): void;
}
