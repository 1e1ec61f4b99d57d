// The fake API server as the integration tests of the agent run it: like a real cluster, something
// else writes the Nodes all the time. Kubelets heartbeat every Node (a write of its own that moves
// its resourceVersion) every HEARTBEAT_MS, so each guarded write of ours races them.
import {
  startFakeApiServer,
  type FakeApiServer,
  type FakeApiServerOptions,
} from '../../src/sim/fake-api-server.js';

/** Much faster than a kubelet's 10 s, so that races with our reads and writes happen in tests. */
const HEARTBEAT_MS = 250;

export function startClusterApiServer(options: FakeApiServerOptions = {}): Promise<FakeApiServer> {
  return startFakeApiServer({ kubeletHeartbeatMs: HEARTBEAT_MS, ...options });
}
