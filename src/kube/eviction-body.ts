// The policy/v1 Eviction the client POSTs: its body is made here alone, for the drain and the PDB
// pre-flight's dry run alike, from the EvictionOptions that src/drain/eviction.ts builds for both.
import type { EvictionOptions } from './kube.js';

/** An Eviction as the API server receives it (and an admission policy judges it). */
export interface EvictionBody {
  apiVersion: 'policy/v1';
  kind: 'Eviction';
  metadata: { name: string; namespace: string };
  /** Absent when there is nothing to say (the pod's own grace period, not a dry run). */
  deleteOptions?: { gracePeriodSeconds?: number; preconditions?: { uid: string }; dryRun?: ['All'] };
}

/** The Eviction of pod `namespace/name` with `options`; a dry run only adds dryRun: ['All']. */
export function evictionBody(
  namespace: string,
  name: string,
  options: EvictionOptions,
  dryRun: boolean,
): EvictionBody {
  const deleteOptions = {
    ...(options.gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds: options.gracePeriodSeconds }),
    ...(options.uid === undefined ? {} : { preconditions: { uid: options.uid } }),
    ...(dryRun ? { dryRun: ['All'] as ['All'] } : {}),
  };
  return {
    apiVersion: 'policy/v1',
    kind: 'Eviction',
    metadata: { name, namespace },
    ...(Object.keys(deleteOptions).length === 0 ? {} : { deleteOptions }),
  };
}
