// --single-replica restart through the whole agent (issue 44, item 2): the real seams (client-node,
// RolloutRestarter, KubeDrainer, DaemonSetLock, KubeNodeOps, Events) against the fake API server, a
// Deployment controller (src/sim/deployments.ts) and a kubelet that starts new pods on n2; and the
// world misbehaving: the strategy changed, someone else's restart, a pod that never gets ready, an
// agent restarted mid-wait.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import type { CoreV1Event, Kube, V1Node, V1Pod, V1PodDisruptionBudget } from '../../../src/kube/kube.js';
import { Agent } from '../../../src/agent/agent.js';
import { createAgentDeps } from '../../../src/agent/create-agent.js';
import { SystemClock } from '../../../src/clock/clock.js';
import type { Config } from '../../../src/config/config.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { CYCLE_ANNOTATION, parseCycle } from '../../../src/node/cycle.js';
import { RESTARTED_AT_ANNOTATION } from '../../../src/drain/single-replica.js';
import { DeploymentModel, type SimDeployment } from '../../../src/sim/deployments.js';
import type { SimPod } from '../../../src/sim/objects.js';
import type { FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { testConfig } from '../../fakes/config.js';
import { waitFor } from '../../fakes/wait-for.js';
import { kuredDaemonSet, nodeInfo, readyNode } from '../../fakes/kube-objects.js';
import { storedNode } from '../../fakes/cluster-reads.js';

let server: FakeApiServer;
let model: DeploymentModel;
let stop: (() => void)[];
let reboots: number;
/** Whether the test kubelet makes the pods it starts on n2 ready. */
let kubeletReady: boolean;

const NS = 'default';

function config(overrides: Partial<Config> = {}): Config {
  return testConfig({
    periodMs: 60_000,
    drainTimeoutMs: 2_000,
    evictionRetryDelayMs: 50,
    postRebootTimeoutMs: 60_000,
    singleReplica: 'restart',
    singleReplicaTimeoutMs: 5_000,
    ...overrides,
  });
}

function deployment(
  name: string,
  strategy: SimDeployment['spec']['strategy'] = { type: 'RollingUpdate' },
): SimDeployment {
  return {
    metadata: { name, namespace: NS },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      strategy,
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'c', image: 'nginx' }] },
      },
    },
  };
}

/** Placed on n1, running and ready: the single replica the drain of n1 would evict. */
function onN1(pod: SimPod): SimPod {
  return {
    ...pod,
    spec: { ...pod.spec, nodeName: 'n1' },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

/** A kubelet (and scheduler) for n2: places every new pod there, and makes it ready unless told not to. */
function startKubelet(): () => void {
  return server.onWrite((e) => {
    const pod = e.object as SimPod;
    if (e.resource !== 'pods' || e.type !== 'ADDED' || pod.spec.nodeName !== undefined) return;
    // eslint-disable-next-line no-restricted-syntax -- real time: the Deployment model and the agent run on the system clock
    setTimeout(() => {
      const current = server.get<SimPod>('pods', NS, pod.metadata.name);
      if (current === undefined) return;
      server.update<SimPod>('pods', { ...current, spec: { ...current.spec, nodeName: 'n2' } });
      if (kubeletReady) makeReady(pod.metadata.name);
    }, 20);
  });
}

function makeReady(name: string): void {
  const current = server.get<SimPod>('pods', NS, name);
  if (current === undefined) return;
  const status = { phase: 'Running', conditions: [{ type: 'Ready' as const, status: 'True' as const }] };
  server.update<SimPod>('pods', { ...current, status });
}

function node(): V1Node {
  return storedNode(server, 'n1');
}

function template(name: string): Record<string, string> {
  return server.get<SimDeployment>('deployments', NS, name)?.spec.template.metadata.annotations ?? {};
}

function events(reason: string): CoreV1Event[] {
  return server.list<CoreV1Event>('events', 'default').filter((e) => e.reason === reason);
}

/** Requests of `method` whose path includes `includes`, dry runs (the PDB pre-flight) aside. */
function requests(method: string, includes: string): number {
  return server.requests.filter(
    (r) => r.method === method && r.path.includes(includes) && r.query.dryRun === undefined,
  ).length;
}

function agent(c: Config, kube: Kube = server.kubeInMemory()): Agent {
  const deps = createAgentDeps(c, {
    kube,
    clock: new SystemClock(),
    logger: new MemoryLogger(),
    sentinel: { rebootRequired: () => Promise.resolve({ required: reboots === 0 }) },
    rebooter: {
      reboot: () => {
        reboots++;
        const n = node();
        n.status = {
          ...n.status,
          nodeInfo: nodeInfo('boot-2'),
          conditions: [{ type: 'Ready', status: 'True' }],
        };
        server.update('nodes', n);
        return Promise.resolve();
      },
    },
  });
  return new Agent(c, deps);
}

/**
 * The in-memory client, with `after` run once the agent's `nth` read of a Deployment was answered
 * (the first is the plan's, the second the restart's own read before its patch).
 */
function afterRead(nth: number, after: () => void): Kube {
  const kube = server.kubeInMemory();
  let reads = 0;
  const getDeployment: Kube['getDeployment'] = async (namespace, name, signal) => {
    const answer = await kube.getDeployment(namespace, name, signal);
    if (++reads === nth) after();
    return answer;
  };
  return Object.assign(Object.create(kube) as Kube, { getDeployment });
}

function budget(app: string): V1PodDisruptionBudget {
  return {
    metadata: { name: app, namespace: NS },
    spec: { minAvailable: 1, selector: { matchLabels: { app } } },
  };
}

beforeEach(async () => {
  server = await startClusterApiServer();
  reboots = 0;
  kubeletReady = true;
  server.create('daemonsets', kuredDaemonSet());
  server.create<V1Node>('nodes', readyNode('n1'));
  server.create<V1Node>('nodes', readyNode('n2'));
  // eslint-disable-next-line no-restricted-syntax -- real time: the Deployment model and the agent run on the system clock
  model = new DeploymentModel({ server, nowMs: () => Date.now(), defer: (task) => setImmediate(task) });
  stop = [model.start(), startKubelet()];
});

afterEach(async () => {
  for (const s of stop) s();
  await server.close();
});

describe('a single replica under --single-replica restart', () => {
  it('is restarted onto another node before the drain, and its Deployment never has 0 ready replicas, though a PDB allows no disruption', async () => {
    model.create(deployment('solo'), onN1);
    server.create<V1PodDisruptionBudget>('poddisruptionbudgets', budget('solo'));
    expect((await agent(config()).tick()).kind).toBe('rebooting');
    expect(reboots).toBe(1);
    expect(template('solo')[RESTARTED_AT_ANNOTATION]).toBeDefined();
    expect(model.unavailableMs().get(`${NS}/solo`) ?? 0).toBe(0);
    const left = server.list<V1Pod>('pods', NS).filter((p) => p.metadata?.labels?.app === 'solo');
    expect(left.map((p) => p.spec?.nodeName)).toEqual(['n2']);
    expect(requests('POST', '/eviction')).toBe(0);
    const record = parseCycle(node().metadata?.annotations?.[CYCLE_ANNOTATION]);
    expect(record?.restarts?.map((m) => m.deployment)).toEqual([`${NS}/solo`]);
    expect(events('SingleReplicaRestart').map((e) => e.message)).toEqual([
      expect.stringContaining(`available elsewhere: ${NS}/solo`),
    ]);
  });

  it('is blocked by its PDB before the lock as today without the flag', async () => {
    model.create(deployment('solo'), onN1);
    server.create<V1PodDisruptionBudget>('poddisruptionbudgets', budget('solo'));
    const outcome = await agent(config({ singleReplica: 'off' })).tick();
    expect(outcome.kind).toBe('blocked');
    expect(outcome.reason).toContain(`PodDisruptionBudget ${NS}/solo allows no disruption`);
    expect(template('solo')[RESTARTED_AT_ANNOTATION]).toBeUndefined();
  });

  it.each([
    ['strategy Recreate', { type: 'Recreate' } as const, 'strategy Recreate'],
    ['maxSurge 0', { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0 } } as const, 'maxSurge 0'],
    ['maxSurge 0%', { type: 'RollingUpdate', rollingUpdate: { maxSurge: '0%' } } as const, 'maxSurge 0'],
  ])(
    'of a Deployment with %s is evicted as today, with the reason in an Event',
    async (_name, strategy, why) => {
      model.create(deployment('solo', strategy), onN1);
      expect((await agent(config()).tick()).kind).toBe('rebooting');
      expect(template('solo')[RESTARTED_AT_ANNOTATION]).toBeUndefined();
      expect(requests('POST', '/eviction')).toBe(1);
      const [event] = events('SingleReplicaRestart');
      expect(event?.type).toBe('Warning');
      expect(event?.message).toContain(why);
    },
  );

  it('of a Deployment switched to Recreate between the agent read and its patch is not restarted, and is evicted as today with the reason', async () => {
    model.create(deployment('solo'), onN1);
    const kube = afterRead(2, () => {
      const d = server.get<SimDeployment>('deployments', NS, 'solo')!;
      server.update<SimDeployment>('deployments', {
        ...d,
        spec: { ...d.spec, strategy: { type: 'Recreate' } },
      });
    });
    expect((await agent(config(), kube).tick()).kind).toBe('rebooting');
    expect(template('solo')[RESTARTED_AT_ANNOTATION]).toBeUndefined();
    expect(requests('PATCH', '/deployments/solo')).toBe(1);
    expect(events('SingleReplicaRestart')[0]?.message).toContain('strategy Recreate');
  });

  it('restarted by someone else between the agent read and its patch is not restarted again; their rollout is waited for', async () => {
    model.create(deployment('solo'), onN1);
    const kube = afterRead(2, () => {
      const d = server.get<SimDeployment>('deployments', NS, 'solo')!;
      const annotations = { [RESTARTED_AT_ANNOTATION]: 'someone-else' };
      const t = { ...d.spec.template, metadata: { ...d.spec.template.metadata, annotations } };
      server.update<SimDeployment>('deployments', { ...d, spec: { ...d.spec, template: t } });
    });
    expect((await agent(config(), kube).tick()).kind).toBe('rebooting');
    expect(template('solo')[RESTARTED_AT_ANNOTATION]).toBe('someone-else');
    expect(model.unavailableMs().get(`${NS}/solo`) ?? 0).toBe(0);
    expect(requests('POST', '/eviction')).toBe(0);
  });

  it('whose new pod never gets ready is evicted as today after --single-replica-timeout, the reason in an Event', async () => {
    kubeletReady = false;
    model.create(deployment('solo'), onN1);
    // eslint-disable-next-line no-restricted-syntax -- real time: the Deployment model and the agent run on the system clock
    const started = Date.now();
    expect((await agent(config({ singleReplicaTimeoutMs: 400 })).tick()).kind).toBe('rebooting');
    // eslint-disable-next-line no-restricted-syntax -- real time: the Deployment model and the agent run on the system clock
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(requests('POST', '/eviction')).toBe(1);
    const [event] = events('SingleReplicaRestart');
    expect(event?.type).toBe('Warning');
    expect(event?.message).toContain('after --single-replica-timeout');
  });

  it('is restarted once only when the agent restarts mid-wait', async () => {
    kubeletReady = false;
    model.create(deployment('solo'), onN1);
    const abort = new AbortController();
    const patched = new Promise<void>((resolve) => {
      stop.push(
        server.onWrite((e) => {
          if (e.resource === 'deployments' && template('solo')[RESTARTED_AT_ANNOTATION] !== undefined)
            resolve();
        }),
      );
    });
    const first = agent(config()).tick(abort.signal);
    await patched;
    abort.abort(new Error('agent killed'));
    await expect(first).rejects.toThrow();
    const restartedAt = template('solo')[RESTARTED_AT_ANNOTATION];
    const onN2 = (): SimPod[] => server.list<SimPod>('pods', NS).filter((p) => p.spec.nodeName === 'n2');
    await waitFor(() => onN2().length > 0, 'the surge pod is on n2');
    for (const pod of onN2()) makeReady(pod.metadata.name);
    expect((await agent(config()).tick()).kind).toBe('rebooting');
    expect(requests('PATCH', '/deployments/solo')).toBe(1);
    expect(template('solo')[RESTARTED_AT_ANNOTATION]).toBe(restartedAt);
    expect(model.unavailableMs().get(`${NS}/solo`) ?? 0).toBe(0);
  });
});
