// The simulated cluster's names and labels, and its PDB form: shared by the cluster, the objects it
// makes and the blocking-job churn.

/** A PDB per workload: none, or one of the two Kubernetes forms. */
export type PdbSpec = { kind: 'none' } | { kind: 'maxUnavailable' | 'minAvailable'; value: number | string };

export const SIM_NAMESPACE = 'apps';
export const BATCH_NAMESPACE = 'batch';
export const DS_NAMESPACE = 'kube-system';
export const DS_NAME = 'kured';
export const REPLICA_LABEL = 'sim.kured-ts.dev/replica';
export const BLOCKING_LABEL = 'sim.kured-ts.dev/blocking';
export const ZONE_LABEL = 'topology.kubernetes.io/zone';
