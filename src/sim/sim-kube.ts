// The production Kube client (src/kube/client.ts) pointed at the simulator's fake API server: over
// HTTP (`kured-ts simulate`), or in memory (the scenario tests: the same client and server, no socket).
import { ClientNodeKube } from '../kube/client.js';
import { loadKubeConfig } from '../kube/kubeconfig.js';
import type { Kube } from '../kube/kube.js';
import { simAgentIdentity } from './agent-config.js';
import type { SimServer } from './objects.js';

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
export function connectSimKube(server: Pick<SimServer, 'url'>): SimKube {
  return simKube(new ClientNodeKube(loadKubeConfig({ url: server.url })));
}

/**
 * The same client handing its requests to the server in memory (FakeApiServer.kubeInMemory): each
 * agent still acts as itself, so admission sees its user and node claim as over HTTP.
 */
export function memorySimKube(server: Pick<SimServer, 'kubeInMemory'>): SimKube {
  return simKube(server.kubeInMemory());
}

function simKube(kube: ClientNodeKube): SimKube {
  return {
    kube,
    forAgent: (node) => kube.impersonating(simAgentIdentity(node)),
    close: () => {
      kube.close();
    },
  };
}
