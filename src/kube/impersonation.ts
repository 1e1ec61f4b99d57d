// Acting as another user through kube's impersonation (the simulator's agents, each with its own
// identity as its bound token would give it), on the connections of the client it is made from.
import type { KubeTransport } from './http.js';

/** A user to act as through kube's impersonation (`kubectl --as`): name, and extra attributes. */
export interface Identity {
  user: string;
  /** e.g. authentication.kubernetes.io/node-name, as a pod-bound ServiceAccount token carries it. */
  extra?: Record<string, string>;
}

/** What the requests of a ClientNodeKube go through. */
export type Transport = Pick<KubeTransport, 'json' | 'watch' | 'close'>;

/** The shared transport with the Impersonate-* headers of `identity` on every request. */
export function impersonatingTransport(inner: Transport, identity: Identity): Transport {
  const headers: Record<string, string> = { 'Impersonate-User': identity.user };
  for (const [key, value] of Object.entries(identity.extra ?? {}))
    headers[`Impersonate-Extra-${encodeURIComponent(key)}`] = value;
  return {
    json: (req) => inner.json({ ...req, headers: { ...req.headers, ...headers } }),
    watch: (req, onLine) => inner.watch({ ...req, headers: { ...req.headers, ...headers } }, onLine),
    close: () => {
      // the connections belong to the client this one was made from
    },
  };
}
