// The API path of one object named by group, version, resource, namespace and name (--health-check).
import type { ObjectRef } from './kube.js';

const enc = encodeURIComponent;

/** `/api/v1/…` for the core group, `/apis/GROUP/VERSION/…` for the others; namespaced when named. */
export function objectPath(ref: ObjectRef): string {
  const base = ref.group === '' ? `/api/${enc(ref.version)}` : `/apis/${enc(ref.group)}/${enc(ref.version)}`;
  const ns = ref.namespace === undefined ? '' : `/namespaces/${enc(ref.namespace)}`;
  return `${base}${ns}/${enc(ref.resource)}/${enc(ref.name)}`;
}
