// Out of the load balancers before the drain, and no repair during the reboot (issue 44, items 1
// and 5): one agent over the real client against the fake API server. The node is labelled
// node.kubernetes.io/exclude-from-external-load-balancers with its cordon, the drain starts
// --lb-drain-wait later when a Service of type LoadBalancer exists (or the Services cannot be
// listed), and the label and karpenter.sh/do-not-repair go at the end of the cycle, only when ours.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Agent } from '../../../src/agent/agent.js';
import { createAgentDeps } from '../../../src/agent/create-agent.js';
import { SystemClock } from '../../../src/clock/clock.js';
import type { Config } from '../../../src/config/config.js';
import { ClientNodeKube } from '../../../src/kube/client.js';
import type { V1Node, V1Pod, V1Service } from '../../../src/kube/kube.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { CYCLE_ANNOTATION, parseCycle } from '../../../src/node/cycle.js';
import {
  DO_NOT_REPAIR_ANNOTATION as DO_NOT_REPAIR,
  EXCLUDE_LB_LABEL as LB,
} from '../../../src/node/cycle-marks.js';
import type { FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { testConfig } from '../../fakes/config.js';
import { kuredDaemonSet, nodeInfo, readyNode, webPod } from '../../fakes/kube-objects.js';
import { storedNode } from '../../fakes/cluster-reads.js';

/** --lb-drain-wait in these tests: long enough to measure, short enough to run. */
const WAIT_MS = 600;

let server: FakeApiServer;
let required: boolean;
/** When (ms, Date.now) the label appeared on the node, and the first pod left it. */
let labelledAt: number | undefined;
let firstEvictionAt: number | undefined;
let logger: MemoryLogger;
let stopWatching: () => void;

function node(): V1Node {
  return storedNode(server, 'n1');
}

const labels = (): Record<string, string> => ({ ...node().metadata?.labels });
const annotations = (): Record<string, string> => ({ ...node().metadata?.annotations });

function loadBalancerService(): V1Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: 'default' },
    spec: { type: 'LoadBalancer', ports: [{ port: 80 }] },
  };
}

beforeEach(async () => {
  server = await startClusterApiServer();
  required = true;
  labelledAt = undefined;
  firstEvictionAt = undefined;
  logger = new MemoryLogger();
  server.create('daemonsets', kuredDaemonSet());
  server.create<V1Node>('nodes', readyNode('n1'));
  server.create<V1Pod>('pods', webPod('web-1', 'n1'));
  stopWatching = server.onWrite((e) => {
    if (e.resource === 'nodes' && labelledAt === undefined && labels()[LB] !== undefined)
      // eslint-disable-next-line no-restricted-syntax -- real time: the --lb-drain-wait under test passes on the system clock
      labelledAt = Date.now();
    // eslint-disable-next-line no-restricted-syntax -- real time: the --lb-drain-wait under test passes on the system clock
    if (e.resource === 'pods' && e.type === 'DELETED') firstEvictionAt ??= Date.now();
  });
});

afterEach(async () => {
  stopWatching();
  await server.close();
});

/** A fresh agent (as after a pod restart); the host reboots into boot-2, Ready. */
function agent(c: Config): Agent {
  const deps = createAgentDeps(c, {
    kube: new ClientNodeKube(server.kubeConfig()),
    clock: new SystemClock(),
    logger,
    sentinel: { rebootRequired: () => Promise.resolve({ required }) },
    rebooter: {
      reboot: () => {
        const n = node();
        n.status = {
          ...n.status,
          nodeInfo: nodeInfo('boot-2'),
          conditions: [{ type: 'Ready', status: 'True' }],
        };
        server.update('nodes', n);
        required = false;
        return Promise.resolve();
      },
    },
  });
  return new Agent(c, deps);
}

function config(overrides: Partial<Config> = {}): Config {
  return testConfig({ drainTimeoutMs: 5000, blockOnPdb: false, lbDrainWaitMs: WAIT_MS, ...overrides });
}

/** The waits the agent decided, as it logged them. */
function waits(): { waitMs: number; reason: string }[] {
  return logger.entries
    .filter((e) => e.message === 'load balancer wait')
    .map((e) => ({ waitMs: e.fields.waitMs as number, reason: e.fields.reason as string }));
}

describe('out of the load balancers before the drain', () => {
  it('labels the node with its cordon, drains --lb-drain-wait later when a LoadBalancer Service exists, and removes the label at uncordon', async () => {
    server.create<V1Service>('services', loadBalancerService());
    const c = config();
    expect((await agent(c).tick()).kind).toBe('rebooting');
    expect(labels()[LB]).toBe('true');
    expect(node().spec?.unschedulable).toBe(true);
    expect(parseCycle(annotations()[CYCLE_ANNOTATION])?.lbExcludedAt).toBeDefined();
    // from the label on (this host's clock): the list itself took a few ms of it
    const [wait] = waits();
    expect(wait?.waitMs).toBeGreaterThan(WAIT_MS - 100);
    expect(wait?.waitMs).toBeLessThanOrEqual(WAIT_MS);
    expect(wait?.reason).toMatch(
      /^Service default\/web is of type LoadBalancer: waiting \S+ \(--lb-drain-wait\) for the load balancers to drop the node$/,
    );
    expect(firstEvictionAt! - labelledAt!).toBeGreaterThanOrEqual(WAIT_MS - 5);

    expect((await agent(c).tick()).kind).toBe('completed');
    expect(labels()[LB]).toBeUndefined();
    expect(node().spec?.unschedulable).toBeUndefined();
  });

  it('does not wait when the cluster has no Service of type LoadBalancer', async () => {
    server.create<V1Service>('services', {
      ...loadBalancerService(),
      spec: { type: 'ClusterIP', ports: [{ port: 80 }] },
    });
    const c = config({ lbDrainWaitMs: 60_000 });
    expect((await agent(c).tick()).kind).toBe('rebooting');
    expect(labels()[LB]).toBe('true');
    expect(waits()).toEqual([{ waitMs: 0, reason: 'no Service of type LoadBalancer' }]);
    expect((await agent(c).tick()).kind).toBe('completed');
    expect(labels()[LB]).toBeUndefined();
  });

  it('waits when the Services cannot be listed (fail safe)', async () => {
    server.injectFailure({ method: 'GET', pathIncludes: '/api/v1/services' }, 403, 1);
    const c = config();
    expect((await agent(c).tick()).kind).toBe('rebooting');
    const [wait] = waits();
    expect(wait?.waitMs).toBeGreaterThan(WAIT_MS - 100);
    expect(wait?.reason).toMatch(/^the Services cannot be listed \(.*\): assuming load balancers: waiting /);
    expect(firstEvictionAt! - labelledAt!).toBeGreaterThanOrEqual(WAIT_MS - 5);
  });

  it('never removes a label someone else set before the cycle, and does not wait for it', async () => {
    server.create<V1Service>('services', loadBalancerService());
    const n = node();
    server.update<V1Node>('nodes', {
      ...n,
      metadata: { ...n.metadata, labels: { ...n.metadata?.labels, [LB]: 'ops' } },
    });
    const c = config();
    expect((await agent(c).tick()).kind).toBe('rebooting');
    expect(parseCycle(annotations()[CYCLE_ANNOTATION])?.lbExcludedAt).toBeUndefined();
    expect(waits()).toEqual([
      {
        waitMs: 0,
        reason: 'the node was out of the load balancers before this cycle (the label is not ours)',
      },
    ]);
    expect((await agent(c).tick()).kind).toBe('completed');
    expect(labels()[LB]).toBe('ops');
  });

  it('leaves the label as someone set it during the cycle', async () => {
    const c = config();
    expect((await agent(c).tick()).kind).toBe('rebooting');
    await new ClientNodeKube(server.kubeConfig()).mergePatchNode('n1', {
      metadata: { labels: { [LB]: 'ops' } },
    });
    expect((await agent(c).tick()).kind).toBe('completed');
    expect(labels()[LB]).toBe('ops');
  });

  it('an agent killed during the wait after labelling is restarted: it waits only what remains, and still removes its label', async () => {
    server.create<V1Service>('services', loadBalancerService());
    const c = config({ lbDrainWaitMs: 1500 });
    const killed = new AbortController();
    const stop = server.onWrite((e) => {
      const reason = (e.resource === 'nodes' && annotations()['kured-ts.dev/status']) || '';
      if (reason.includes('out of the load balancers')) {
        // eslint-disable-next-line no-restricted-syntax -- real time: the --lb-drain-wait under test passes on the system clock
        setTimeout(() => {
          killed.abort();
        }, 300);
      }
    });
    await agent(c)
      .tick(killed.signal)
      .catch(() => undefined);
    stop();
    expect(labels()[LB]).toBe('true');
    expect(firstEvictionAt).toBeUndefined();

    expect((await agent(c).tick()).kind).toBe('rebooting');
    const [first, second] = waits();
    expect(first?.waitMs).toBeGreaterThan(1400);
    expect(second?.waitMs).toBeGreaterThan(0);
    expect(second?.waitMs).toBeLessThanOrEqual(1500 - 300);
    expect(firstEvictionAt! - labelledAt!).toBeGreaterThanOrEqual(1500 - 5);

    expect((await agent(c).tick()).kind).toBe('completed');
    expect(labels()[LB]).toBeUndefined();
  });

  it('removes its label when the drain fails and the cycle ends', async () => {
    server.injectFailure({ method: 'POST', pathIncludes: '/eviction' }, 403, 100, {
      message: 'denied by a webhook',
    });
    const c = config({ lbDrainWaitMs: 0, drainTimeoutMs: 300 });
    const outcome = await agent(c).tick();
    expect(outcome.kind).not.toBe('rebooting');
    expect(annotations()[CYCLE_ANNOTATION]).toBeUndefined();
    expect(labels()[LB]).toBeUndefined();
  });

  it('with --exclude-from-lb=false neither labels nor lists Services', async () => {
    const c = config({ excludeFromLb: false });
    expect((await agent(c).tick()).kind).toBe('rebooting');
    expect(labels()[LB]).toBeUndefined();
    expect(server.requests.some((r) => r.path.includes('/services'))).toBe(false);
    expect(waits()).toEqual([{ waitMs: 0, reason: '--exclude-from-lb is off' }]);
  });
});

describe('no repair in the middle of a planned reboot', () => {
  it('sets karpenter.sh/do-not-repair for the cycle and removes it at the end', async () => {
    const c = config({ settleTimeMs: 0 });
    expect((await agent(c).tick()).kind).toBe('rebooting');
    expect(annotations()[DO_NOT_REPAIR]).toBe('true');
    expect(parseCycle(annotations()[CYCLE_ANNOTATION])?.doNotRepair).toBe(true);
    expect((await agent(c).tick()).kind).toBe('completed');
    expect(annotations()[DO_NOT_REPAIR]).toBeUndefined();
  });

  it('never removes a do-not-repair someone else set, before the cycle or during it', async () => {
    const n = node();
    server.update<V1Node>('nodes', {
      ...n,
      metadata: { ...n.metadata, annotations: { [DO_NOT_REPAIR]: 'true' } },
    });
    const c = config({ settleTimeMs: 0 });
    expect((await agent(c).tick()).kind).toBe('rebooting');
    expect(parseCycle(annotations()[CYCLE_ANNOTATION])?.doNotRepair).toBeUndefined();
    expect((await agent(c).tick()).kind).toBe('completed');
    expect(annotations()[DO_NOT_REPAIR]).toBe('true');
  });

  it('with --autoscaler-protection=false sets no do-not-repair', async () => {
    const c = config({ autoscalerProtection: false });
    expect((await agent(c).tick()).kind).toBe('rebooting');
    expect(annotations()[DO_NOT_REPAIR]).toBeUndefined();
  });
});
