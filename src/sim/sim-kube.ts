// The production Kube client (src/kube/client.ts) pointed at the simulator's fake API server.
import { ClientNodeKube } from '../kube/client.js';
import { loadKubeConfig } from '../kube/kube-config.js';
import type { Kube } from '../kube/kube.js';
import { simAgentIdentity } from './agent-config.js';

/** A Kube for the fake API server plus the function that closes its connections. */
export interface SimKube {
  kube: Kube;
  /** The same connections, as the agent on `node` (its own identity). Default: `kube`. */
  forAgent?(node: string): Kube;
  close(): void;
}

/**
 * Exactly the ClientNodeKube the agent uses in production, keep-alive connections included
 * (src/kube/keep-alive.ts): a simulation's tens of thousands of calls reuse them.
 */
export function connectSimKube(url: string): SimKube {
  const kube = new ClientNodeKube(loadKubeConfig({ url }));
  return {
    kube,
    forAgent: (node) => kube.impersonating(simAgentIdentity(node)),
    close: () => {
      kube.close();
    },
  };
}
