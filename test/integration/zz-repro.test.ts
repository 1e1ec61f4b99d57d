import { afterEach, beforeEach, expect, it } from '@jest/globals';
import { Agent } from '../../src/agent/agent.js';
import { createAgentDeps } from '../../src/agent/create-agent.js';
import { SystemClock } from '../../src/clock/clock.js';
import { ClientNodeKube } from '../../src/kube/client.js';
import type { V1DaemonSet, V1Node } from '../../src/kube/kube.js';
import { MemoryLogger } from '../../src/log/logger.js';
import { CYCLE_ANNOTATION, CYCLE_LABEL, formatCycle } from '../../src/node/cycle.js';
import { STATUS_ANNOTATION, parseStatus } from '../../src/node/status.js';
import { seededRandom } from '../../src/sim/random.js';
import { startFakeApiServer, type FakeApiServer } from '../../src/sim/fake-api-server.js';
import { testConfig } from '../fakes/config.js';
import { RecordingMetrics } from '../fakes/fake-cluster.js';
import { kuredDaemonSet, nodeInfo, readyNode } from '../fakes/kube-objects.js';

const LOCK = 'weave.works/kured-node-lock';
let server: FakeApiServer;
let client: ClientNodeKube;
let stop: AbortController;
beforeEach(async () => {
  server = await startFakeApiServer({ podDeletion: 'graceful' });
  client = new ClientNodeKube(server.kubeConfig());
  stop = new AbortController();
  server.create<V1DaemonSet>('daemonsets', kuredDaemonSet());
  server.create<V1Node>('nodes', readyNode('n1'));
  const n = server.get<V1Node>('nodes', undefined, 'n1')!;
  const record = { bootID: 'boot-1', cordoned: true, attempts: 1, started: '2026-01-01T00:00:00Z' };
  n.metadata = {
    ...n.metadata,
    labels: { [CYCLE_LABEL]: 'true' },
    annotations: { [CYCLE_ANNOTATION]: formatCycle(record) },
  };
  n.spec = { unschedulable: true };
  n.status = { nodeInfo: nodeInfo('boot-2'), conditions: [{ type: 'Ready', status: 'False' }] };
  server.update('nodes', n);
  const entry = {
    nodeID: 'n1',
    metadata: { unschedulable: false, bootID: 'boot-1' },
    created: new Date().toISOString(),
    TTL: 0,
  };
  const ds = server.get<V1DaemonSet>('daemonsets', 'kube-system', 'kured')!;
  ds.metadata = { ...ds.metadata, annotations: { [LOCK]: JSON.stringify(entry) } };
  server.update('daemonsets', ds);
});
afterEach(async () => {
  stop.abort();
  client.close();
  await server.close();
});
const phase = () =>
  parseStatus(server.get<V1Node>('nodes', undefined, 'n1')?.metadata?.annotations?.[STATUS_ANNOTATION])
    ?.phase;

it.each([3])(
  'seed %p',
  async (seed) => {
    server.chaos({
      fraction: 0.2,
      statuses: [429, 500],
      committed: 0.1,
      watches: true,
      random: seededRandom(seed),
    });
    const config = testConfig({
      nodeId: 'n1',
      periodMs: 3_600_000,
      lockQueue: 'none',
      blockOnPdb: false,
      postRebootTimeoutMs: 120_000,
      onPostRebootTimeout: 'release',
    });
    const logger = new MemoryLogger();
    const deps = createAgentDeps(config, {
      kube: client,
      clock: new SystemClock(),
      logger,
      metrics: new RecordingMetrics(),
      random: seededRandom(seed + 100),
      sentinel: { rebootRequired: () => Promise.resolve({ required: false }) },
      rebooter: { reboot: () => Promise.reject(new Error('no second reboot')) },
    });
    void new Agent(config, deps).run(stop.signal);
    // Ready 2 s after the agent's first read of the node
    const t0 = Date.now();
    while (
      !server.requests.some((r) => r.path === '/api/v1/nodes/n1' && r.status === 200) &&
      Date.now() - t0 < 10000
    )
      await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 2000));
    const n = server.get<V1Node>('nodes', undefined, 'n1')!;
    n.status = { ...n.status, conditions: [{ type: 'Ready', status: 'True' }] };
    server.update('nodes', n);
    const ready = Date.now();
    while (phase() !== 'completed' && Date.now() - ready < 40000)
      await new Promise((r) => setTimeout(r, 100));
    const took = Date.now() - ready;
    server.chaos(undefined);
    if (took > 10000)
      console.log(
        seed,
        took,
        server.requests
          .map(
            (r) =>
              `${r.at - t0} ${r.method} ${r.path} ${r.query.watch ?? ''} ${r.query.resourceVersion ?? ''} ${r.status}`,
          )
          .join('\n'),
        JSON.stringify(logger.entries.slice(0, 60), null, 0),
        'ready at',
        ready - t0,
      );
    expect(took).toBeLessThan(10000);
  },
  60000,
);
