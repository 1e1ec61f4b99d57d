// Admission in the fake API server: every write made over HTTP by a caller is reviewed before it is
// stored, as kube-apiserver runs validating admission after the object is built and before it is
// persisted. In-process writes (tests, the simulated kubelet and controllers) are not reviewed.
import type { JsonObject } from './json.js';

/** Who sends a request: from the Impersonate-* headers, else the cluster admin. */
export interface UserInfo {
  username: string;
  groups: string[];
  /** Extra attributes (a bound ServiceAccount token's node claim is one). */
  extra: Record<string, string[]>;
}

/** What an admission plugin sees of a request (kube's admission.Attributes). */
export interface AdmissionAttributes {
  operation: 'CREATE' | 'UPDATE' | 'DELETE';
  resource: { group: string; version: string; resource: string };
  /** '' when the request is on the object itself. */
  subResource: string;
  name: string;
  namespace: string;
  userInfo: UserInfo;
  /**
   * The object after the write (for a subresource create, the body, e.g. an Eviction). Lent for the
   * review only: the server goes on to change it; copy what you keep.
   */
  object: JsonObject | null;
  /** The stored object before an UPDATE (lent, as `object`). */
  oldObject: JsonObject | null;
}

/** A validating admission step: throws an ApiError to refuse the request. */
export interface Admission {
  review(attributes: AdmissionAttributes): void;
}

/** The user of a request without Impersonate-User: kubeadm's admin. */
const CLUSTER_ADMIN: UserInfo = {
  username: 'kubernetes-admin',
  groups: ['kubeadm:cluster-admins', 'system:authenticated'],
  extra: {},
};

/** The user a request names through kube's impersonation headers (lower-case, as Node gives them). */
export function userFromHeaders(headers: Record<string, string | string[] | undefined>): UserInfo {
  const user = headers['impersonate-user'];
  if (typeof user !== 'string' || user === '') return CLUSTER_ADMIN;
  const list = (value: string | string[] | undefined): string[] =>
    value === undefined ? [] : Array.isArray(value) ? value : value.split(',').map((v) => v.trim());
  const extra: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!name.startsWith('impersonate-extra-')) continue;
    extra[decodeURIComponent(name.slice('impersonate-extra-'.length))] = list(value);
  }
  return { username: user, groups: list(headers['impersonate-group']), extra };
}
