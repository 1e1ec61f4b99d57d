// Where client-node's default loading would find a cluster, checked before it falls back to
// http://localhost:8080 (which then fails with "HTTP protocol is not allowed when skipTLSVerify is
// not set or false", a message that names neither the cause nor the fix).
import { join } from 'node:path';

/** The service account token that makes client-node load the in-cluster configuration. */
export const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/**
 * undefined when KUBECONFIG, ~/.kube/config or the in-cluster service account gives a cluster;
 * otherwise the one line that says none does. `exists` is injected (tests, no file system).
 */
export function missingKubeconfig(
  env: Readonly<Record<string, string | undefined>>,
  exists: (path: string) => boolean,
): string | undefined {
  const kubeconfig = env.KUBECONFIG ?? '';
  if (kubeconfig !== '') return undefined;
  const home = env.HOME ?? env.USERPROFILE ?? '';
  if (home !== '' && exists(join(home, '.kube', 'config'))) return undefined;
  if (exists(IN_CLUSTER_TOKEN)) return undefined;
  const where = home !== '' ? '~/.kube/config missing' : 'no home directory (HOME unset)';
  return `no kubeconfig: KUBECONFIG unset, ${where}, not in a cluster; set --kubeconfig or KUBECONFIG`;
}
