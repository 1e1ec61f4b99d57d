import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startFakeApiServer, type FakeApiServer } from '../../src/sim/fake-api-server.js';
import { SimCluster } from '../../src/sim/cluster.js';
import { SIM_NAMESPACE, type ClusterSpec } from '../../src/sim/cluster-spec.js';
import { isReady, type SimNode, type SimPod, type SimServer } from '../../src/sim/objects.js';
import { VirtualTime } from '../../src/sim/virtual-time.js';

const spec: ClusterSpec = {
  nodes: 3,
  needsReboot: 3,
  podsPerNode: 2,
  replicasPerWorkload: 3,
  pdb: { kind: 'none' },
  preCordoned: 0,
  shutdownMs: 5_000,
  bootTimeMs: 120_000,
  podStartMs: 10_000,
  graceSeconds: 30,
  blockingPods: { nodes: 0, durationMs: 0 },
  seed: 1,
};

describe('the simulated cluster', () => {
  let fake: FakeApiServer;
  let server: SimServer;
  let time: VirtualTime;
  let cluster: SimCluster;
  const hooks = { down: [] as string[], started: [] as string[] };

  beforeEach(async () => {
    time = new VirtualTime(new Date('2026-01-05T00:00:00Z'));
    fake = await startFakeApiServer({ podDeletion: 'graceful', clock: time.clock() });
    server = fake;
    cluster = new SimCluster(server, time, spec);
    hooks.down = [];
    hooks.started = [];
    cluster.populate({ down: (n) => hooks.down.push(n), agentStarted: (n) => hooks.started.push(n) });
  });

  afterEach(async () => {
    cluster.stop();
    await fake.close();
  });

  const elapsed = (): number => time.nowMs() - new Date('2026-01-05T00:00:00Z').getTime();
  const pods = (): SimPod[] => server.list<SimPod>('pods', SIM_NAMESPACE);
  const node = (name: string): SimNode => server.get<SimNode>('nodes', undefined, name)!;

  it('starts in a steady state: every workload pod placed and Ready, one agent pod per node', () => {
    expect(pods()).toHaveLength(6);
    for (const p of pods()) expect(isReady(p)).toBe(true);
    expect(server.list<SimPod>('pods', 'kube-system').map((p) => p.spec.nodeName)).toEqual([
      'node-01',
      'node-02',
      'node-03',
    ]);
  });

  it('replaces an evicted pod at once, removes it after its grace period, and starts the new one', async () => {
    const victim = cluster.podsOn('node-01').find((p) => p.metadata.namespace === SIM_NAMESPACE)!;
    const res = await fetch(
      `${server.url}/api/v1/namespaces/${SIM_NAMESPACE}/pods/${victim.metadata.name}/eviction`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          apiVersion: 'policy/v1',
          kind: 'Eviction',
          metadata: { name: victim.metadata.name },
        }),
      },
    );
    expect(res.status).toBe(201);
    await time.run(() => server.get('pods', SIM_NAMESPACE, victim.metadata.name) === undefined, Infinity);
    expect(elapsed()).toBe(30_000);
    await time.run(() => pods().every(isReady) && pods().length === 6, Infinity);
    expect(pods()).toHaveLength(6);
    expect([...cluster.podStats.evictionsByReplica.values()]).toEqual([1]);
  });

  it('places new pods on nodes without a PreferNoSchedule taint while any fits, never on a cordoned one', async () => {
    const n1 = node('node-01');
    server.update('nodes', { ...n1, spec: { taints: [{ key: 'k', effect: 'PreferNoSchedule' }] } });
    const n2 = node('node-02');
    server.update('nodes', { ...n2, spec: { unschedulable: true } });
    for (const p of cluster.podsOn('node-02').filter((x) => x.metadata.namespace === SIM_NAMESPACE))
      server.delete('pods', SIM_NAMESPACE, p.metadata.name);
    await time.run(() => pods().length === 6 && pods().every((p) => p.spec.nodeName !== undefined), Infinity);
    const placed = pods().map((p) => p.spec.nodeName);
    expect(placed.filter((n) => n === 'node-02')).toHaveLength(0);
    expect(placed.filter((n) => n === 'node-01')).toHaveLength(2);
    expect(cluster.podStats.placements).toBe(2);
  });

  it('reboots a node: NotReady after the shutdown, Ready with a new boot ID after the boot time', async () => {
    const before = node('node-03').status.nodeInfo.bootID;
    cluster.requestReboot('node-03');
    await time.run(() => hooks.down.length === 1, Infinity);
    expect(elapsed()).toBe(5_000);
    expect(isReady(node('node-03'))).toBe(false);
    expect(cluster.outages.max).toBe(1);
    await time.run(() => hooks.started.length === 1, Infinity);
    expect(elapsed()).toBe(5_000 + 120_000 + 10_000);
    expect(isReady(node('node-03'))).toBe(true);
    expect(node('node-03').status.nodeInfo.bootID).not.toBe(before);
    expect(cluster.nodes.get('node-03')).toMatchObject({ needsReboot: false, reboots: 1, up: true });
    expect(cluster.outages.now).toBe(0);
  });
});
