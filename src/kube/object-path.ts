// API paths: of one object named by group, version, resource, namespace and name (--health-check), of
// a collection (--node-check),
// and of the objects the client reads most.
import type { CollectionRef, ObjectRef } from './kube.js';

const enc = encodeURIComponent;

/** `/api/v1/…` for the core group, `/apis/GROUP/VERSION/…` for the others; namespaced when named. */
export function objectPath(ref: ObjectRef): string {
  return `${collectionPath(ref)}/${enc(ref.name)}`;
}

/** A resource's collection, in a namespace or the whole cluster. */
export function collectionPath(ref: CollectionRef): string {
  const base = ref.group === '' ? `/api/${enc(ref.version)}` : `/apis/${enc(ref.group)}/${enc(ref.version)}`;
  const ns = ref.namespace === undefined ? '' : `/namespaces/${enc(ref.namespace)}`;
  return `${base}${ns}/${enc(ref.resource)}`;
}

/** The pods of a namespace, or of all namespaces. */
export function podsPath(namespace: string | undefined): string {
  return namespace === undefined ? '/api/v1/pods' : `/api/v1/namespaces/${enc(namespace)}/pods`;
}

/** One Lease. */
export function leasePath(namespace: string, name: string): string {
  return `/apis/coordination.k8s.io/v1/namespaces/${enc(namespace)}/leases/${enc(name)}`;
}

/** One DaemonSet. */
export function daemonSetPath(namespace: string, name: string): string {
  return `/apis/apps/v1/namespaces/${enc(namespace)}/daemonsets/${enc(name)}`;
}

/** One Deployment or ReplicaSet (--single-replica restart follows a pod's owners). */
export function appsPath(namespace: string, plural: 'deployments' | 'replicasets', name: string): string {
  return `/apis/apps/v1/namespaces/${enc(namespace)}/${plural}/${enc(name)}`;
}
