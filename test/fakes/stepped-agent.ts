// One node's production agent on the fake API server (through the real client), on a virtual clock
// the test steps: its host needs a reboot, and a reboot runs the test's probe of the moment and then
// comes back with a new bootID. For the tests of the waits between the drain and the reboot.
import { Agent, type Outcome } from '../../src/agent/agent.js';
import { createAgentDeps } from '../../src/agent/create-agent.js';
import type { Config } from '../../src/config/config.js';
import type { V1Node } from '../../src/kube/kube.js';
import { MemoryLogger } from '../../src/log/logger.js';
import type { FakeApiServer } from '../../src/sim/fake-api-server.js';
import { storedNode, nodeStatus } from './cluster-reads.js';
import { testConfig } from './config.js';
import type { FakeClock } from './fake-clock.js';
import { RecordingMetrics } from './fake-cluster.js';
import { nodeInfo } from './kube-objects.js';
import { waitFor } from './wait-for.js';

/** n1's flags for these tests: a drain of 5 s at most, no reboot delay, the waits of 2 minutes. */
export function steppedConfig(overrides: Partial<Config> = {}): Config {
  return testConfig({
    nodeId: 'n1',
    periodMs: 60_000,
    blockOnPdb: false,
    drainTimeoutMs: 5_000,
    rebootDelayMs: 0,
    volumeDetachTimeoutMs: 120_000,
    ...overrides,
  });
}

/** The simulated host: what runs first at its reboot, and whether it needs one (default: always). */
export interface SteppedHost {
  atReboot: () => void;
  required?: () => boolean;
}

/** The agent of `config.nodeId`; at its reboot `atReboot` runs first (what the test records then). */
export function steppedAgent(
  server: FakeApiServer,
  clock: FakeClock,
  config: Config,
  host: (() => void) | SteppedHost,
): Agent {
  const { atReboot, required = (): boolean => true } = typeof host === 'function' ? { atReboot: host } : host;
  const deps = createAgentDeps(config, {
    kube: server.kubeInMemory(),
    clock,
    logger: new MemoryLogger(),
    metrics: new RecordingMetrics(),
    random: () => 0.5,
    sentinel: { rebootRequired: () => Promise.resolve({ required: required() }) },
    rebooter: {
      reboot: () => {
        atReboot();
        const n: V1Node = storedNode(server, config.nodeId);
        n.status = { ...n.status, nodeInfo: nodeInfo('boot-2') };
        server.update('nodes', n);
        return Promise.resolve();
      },
    },
  });
  return new Agent(config, deps);
}

/** A tick the test steps through: `waiting()` until the agent waits in `phase`, `next()` one look on. */
export interface SteppedTick {
  tick: Promise<Outcome>;
  settled: () => boolean;
  waiting: () => Promise<void>;
  next: (ms?: number) => Promise<void>;
}

/** Starts `agent`'s tick; `next()` moves the clock `stepMs` on (the wait's next look) and lets it act. */
export function steppedTick(
  agent: Agent,
  o: {
    server: FakeApiServer;
    clock: FakeClock;
    node: string;
    phase: string;
    stepMs: number;
    signal?: AbortSignal;
  },
): SteppedTick {
  let settled = false;
  const tick = agent.tick(o.signal).finally(() => {
    settled = true;
  });
  return {
    tick,
    settled: () => settled,
    waiting: () =>
      waitFor(
        () => nodeStatus(o.server, o.node)?.phase === o.phase && o.clock.pending > 0,
        `${o.node} waits (${o.phase})`,
      ),
    next: async (ms = o.stepMs): Promise<void> => {
      await o.clock.advance(ms);
      await waitFor(() => settled || o.clock.pending > 0, `${o.node} looks again or ends its tick`);
    },
  };
}
