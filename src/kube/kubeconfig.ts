// Where the API server is: a kubeconfig file, client-node's default loading (KUBECONFIG,
// ~/.kube/config, in-cluster), or a plain URL (tests, the simulator).
import { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import type { Clock } from '../clock/clock.js';
import type { Exchange } from './http.js';

/** Where the API server is. */
export interface KubeConfigSource {
  /** Path of a kubeconfig file (--kubeconfig). */
  kubeconfig?: string;
  /** The kubeconfig context to use (--context); default its current-context. */
  context?: string;
  /** Plain URL of an API server without auth (tests, the simulator); wins over kubeconfig. */
  url?: string;
}

/** Where the API server is (above), and how this client behaves. */
export interface ConnectOptions extends KubeConfigSource {
  /** Deadline of one request in ms. Default 30 s (DEFAULT_DEADLINE_MS). */
  deadlineMs?: number;
  /** How long a watch may outlive its timeoutSeconds before it is given up. Default 30 s. */
  watchGraceMs?: number;
  /** [0, 1) for the spread of watch timeouts and the jitter of read retries. Default Math.random. */
  random?: () => number;
  /** Times the waits between read retries. Default the system clock. */
  clock?: Clock;
  /** How requests reach the server. Default over the network; tests hand them over in memory. */
  exchange?: Exchange;
}

/**
 * A KubeConfig for `options`: a URL becomes one cluster with skipTLSVerify; a path is loaded as a
 * kubeconfig file; otherwise client-node's default loading (KUBECONFIG, ~/.kube/config, in-cluster).
 */
export function loadKubeConfig(options: KubeConfigSource = {}): KubeConfig {
  const kc = new KubeConfig();
  if (options.url !== undefined && options.url !== '') {
    kc.loadFromOptions({
      clusters: [{ name: 'cluster', server: options.url, skipTLSVerify: true }],
      users: [{ name: 'user' }],
      contexts: [{ name: 'context', cluster: 'cluster', user: 'user' }],
      currentContext: 'context',
    });
  } else if (options.kubeconfig !== undefined && options.kubeconfig !== '') {
    kc.loadFromFile(options.kubeconfig);
  } else {
    kc.loadFromDefault();
  }
  if (options.context !== undefined && options.context !== '') useContext(kc, options.context);
  return kc;
}

/** Switches to `name`, or says which contexts the kubeconfig has. */
function useContext(kc: KubeConfig, name: string): void {
  if (!kc.getContexts().some((c) => c.name === name)) {
    const known = kc.getContexts().map((c) => c.name);
    const list = known.length > 0 ? known.join(', ') : 'none';
    throw new Error(`context "${name}" not found in the kubeconfig (contexts: ${list})`);
  }
  kc.setCurrentContext(name);
}
