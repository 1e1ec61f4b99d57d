// The simulated cluster's spec, names and labels: shared by the cluster, the objects it makes, its
// workloads and the blocking-job churn.

/** A PDB per workload: none, or one of the two Kubernetes forms. */
export type PdbSpec = { kind: 'none' } | { kind: 'maxUnavailable' | 'minAvailable'; value: number | string };

export const SIM_NAMESPACE = 'apps';
export const BATCH_NAMESPACE = 'batch';
/** simulate --storage-pods: one storage daemon per node, drain order 10. */
export const STORAGE_NAMESPACE = 'storage';
export const DS_NAMESPACE = 'kube-system';
export const DS_NAME = 'kured';
export const REPLICA_LABEL = 'sim.kured-ts.dev/replica';
export const BLOCKING_LABEL = 'sim.kured-ts.dev/blocking';
export const ZONE_LABEL = 'topology.kubernetes.io/zone';
/** The finalizer of an undrainable pod: nothing in the simulation removes it (a hung volume, say). */
export const STUCK_FINALIZER = 'sim.kured-ts.dev/stuck';

/** What simulate --volumes-per-node asks for. */
export interface VolumeSpec {
  /** Volumes per node at the start: the first this many workload replicas on each node have one. */
  perNode: number;
  /** From a pod's going until its volume is detached from the node and unmounted. */
  detachMs: number;
  /** The first volume of each of the first this many nodes never detaches (a stuck CSI driver). */
  stuck: number;
}

/** What the simulated cluster looks like and how fast its machines are. Durations in ms. */
export interface ClusterSpec {
  /** Number of nodes. */
  nodes: number;
  /** How many nodes need a reboot (the first ones by name): at the start, or see requiredOverMs. */
  needsReboot: number;
  /**
   * When > 0, reboot-required appears on each of those nodes at its own random moment within this
   * long after the start (unattended upgrades finishing at different times), not all at the start.
   */
  requiredOverMs?: number;
  /** Workload pods per node at the start. */
  podsPerNode: number;
  /** Replicas per workload (workloads = nodes * podsPerNode / replicas). Default 3. */
  replicasPerWorkload: number;
  pdb: PdbSpec;
  /** Nodes (among those needing a reboot, from the last) cordoned by someone else before the start. */
  preCordoned: number;
  /** From the reboot request until the node goes NotReady. */
  shutdownMs: number;
  /** From NotReady until the node is Ready again with a new boot ID. */
  bootTimeMs: number;
  /** From a pod's placement (or its node's boot) until it is Ready. */
  podStartMs: number;
  /** terminationGracePeriodSeconds of workload pods. */
  graceSeconds: number;
  /** Batch pods matching the blocking selector: on the first `nodes` nodes, running for `durationMs`. */
  blockingPods: { nodes: number; durationMs: number };
  /**
   * The first this many nodes carry a pod that never finishes terminating (a finalizer nobody
   * removes): their drain cannot complete. Default 0.
   */
  undrainable?: number;
  /**
   * The next this many nodes that need a reboot (after the undrainable ones) have a need that
   * survives every reboot (a sentinel stuck on: kured #976). Default 0.
   */
  stuckSentinel?: number;
  /** CSI volumes on the nodes and their detach (simulate --volumes-per-node, src/sim/volumes.ts). Default none. */
  volumes?: VolumeSpec;
  /** One storage daemon per node with label kured-ts.dev/drain-order=10 (simulate --storage-pods). Default false. */
  storagePods?: boolean;
  /**
   * Single-replica Deployments (RollingUpdate, maxSurge 25%), one pod each on the nodes that need a
   * reboot, round robin, each with a PDB of `pdb`'s form (simulate --single-replica-workloads). Default 0.
   */
  singleReplicaWorkloads?: number;
  /** Zones (labels topology.kubernetes.io/zone zone-a, zone-b, … round robin); 0 = no zone label. */
  zones?: number;
  /**
   * The first `controlPlane` nodes are control-plane nodes (label node-role.kubernetes.io/control-plane)
   * running an etcd member each (a static pod labelled component=etcd in kube-system). Default 0.
   */
  controlPlane?: number;
  /** The last `nodes` nodes are NotReady from the start for `durationMs` (a degraded fleet). */
  unhealthy?: { nodes: number; durationMs: number };
  /**
   * A bad kernel: the n-th node to reboot (counting the nodes as their reboots are requested) boots
   * but never comes back Ready (its kubelet reports NotReady for good). Default none.
   */
  badKernel?: number;
  /** Short-lived blocking jobs arriving at a Poisson rate (blocking-churn.ts). Default none. */
  blockingChurn?: ChurnSpec;
  seed: number;
}

/** Hooks through which the cluster tells the simulation about the agents' host. */
export interface HostHooks {
  /** The node went down: its agent process dies. */
  down(node: string): void;
  /** The node's agent pod started again after a boot. */
  agentStarted(node: string): void;
  /** The node's reboot became required (at the start, or later with requiredOverMs). */
  required?(node: string): void;
}

/** Is the `i`th node one whose need survives every reboot (stuckSentinel, after the undrainable ones)? */
export function stuckAt(spec: Pick<ClusterSpec, 'undrainable' | 'stuckSentinel'>, i: number): boolean {
  const first = spec.undrainable ?? 0;
  return i >= first && i < first + (spec.stuckSentinel ?? 0);
}

/** Per-node facts of the physical (simulated) world. */
export interface SimNodeState {
  name: string;
  needsReboot: boolean;
  /** Cordoned by someone else before the simulation started. */
  preCordoned: boolean;
  up: boolean;
  /** A reboot was requested and the node has not come back yet. */
  rebooting: boolean;
  reboots: number;
  bootID: string;
  /** Its need survives every reboot (ClusterSpec.stuckSentinel). */
  stuck: boolean;
}

/** Arrivals per hour over the whole cluster, and how long each job runs once placed. */
export interface ChurnSpec {
  perHour: number;
  durationMs: number;
}

/** Counters about pods, for the report. */
export interface PodStats {
  /** Pod terminations started by evictions, per replica. */
  evictionsByReplica: Map<string, number>;
  /** Placements after the start onto nodes that still needed a reboot. */
  placementsOnPendingNodes: number;
  /** Blocking pods (--blocking-churn) placed onto nodes that still needed a reboot. */
  blockingOnPendingNodes: number;
  placements: number;
}
