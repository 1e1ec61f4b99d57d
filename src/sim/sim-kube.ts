// The production Kube client (src/kube/client.ts) pointed at the simulator's fake API server.
import { Agent } from 'node:http';
import { ClientNodeKube, loadKubeConfig } from '../kube/client.js';
import type { Kube } from '../kube/kube.js';

/** A Kube for the fake API server plus the function that closes its connections. */
export interface SimKube {
  kube: Kube;
  close(): void;
}

/**
 * The same ClientNodeKube the agent uses in production, with one change: client-node 1.4.0 builds a
 * new http.Agent for every request, i.e. opens a TCP connection per API call. A simulation makes
 * tens of thousands of calls, so all of them share one keep-alive agent (halves wall time here).
 */
export function connectSimKube(url: string): SimKube {
  const kc = loadKubeConfig({ url });
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  // createAgent is private in client-node's typings; replacing it on this instance is the only seam.
  Object.assign(kc, { createAgent: () => agent });
  return {
    kube: new ClientNodeKube(kc),
    close: () => {
      agent.destroy();
    },
  };
}
