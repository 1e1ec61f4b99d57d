// Three real agents (createAgent: real client-node, KubeNodeOps, KubeDrainer, DaemonSetLock, Events)
// against the fake API server, with simulated host reboots that change the node's bootID. Each agent
// acts as itself (its ServiceAccount with its node's claim), and the server enforces the chart's
// admission policy on every write it makes.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { waitFor } from '../../fakes/wait-for.js';
import type { CoreV1Event, V1DaemonSet, V1Node, V1Pod } from '../../../src/kube/kube.js';
import { createAgent } from '../../../src/agent/create-agent.js';
import { SystemClock } from '../../../src/clock/clock.js';
import type { Config } from '../../../src/config/config.js';
import { entriesOf, parseLockAnnotation } from '../../../src/lock/kured-lock-format.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import type { Rebooter } from '../../../src/reboot/rebooter.js';
import type { Sentinel } from '../../../src/sentinel/sentinel.js';
import { type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { testConfig } from '../../fakes/config.js';
import { agentPolicyParams, NODE_NAME_EXTRA } from '../../../src/admission/agent-policy.js';
import { CelAdmission, boundAgentPolicies } from '../../../src/sim/fake-api/cel-admission.js';
import { kuredDaemonSet, nodeInfo, readyNode, webPod } from '../../fakes/kube-objects.js';

const NS = 'kube-system';
const DS = 'kured';
const LOCK = 'weave.works/kured-node-lock';
const TAINT = 'weave.works/kured-node-reboot';
const NODES = ['n1', 'n2', 'n3'];
const SA = { namespace: NS, name: 'kured-ts' };

function config(nodeId: string, concurrency: number): Config {
  return testConfig({
    nodeId,
    periodMs: 300,
    rebootDelayMs: 20,
    drainTimeoutMs: 10_000,
    concurrency: { count: concurrency },
    preferNoScheduleTaint: TAINT,
    postRebootTimeoutMs: 60_000,
  });
}

let server: FakeApiServer;
let admission: CelAdmission;
const timers = new Set<NodeJS.Timeout>();

/** The fake API server with the admission policies the chart renders for --concurrency `concurrency`. */
async function start(concurrency: number): Promise<void> {
  const values = agentPolicyParams(config('', concurrency), { serviceAccount: SA });
  admission = new CelAdmission(boundAgentPolicies(values));
  server = await startClusterApiServer({ admission });
  server.create('daemonsets', kuredDaemonSet());
  for (const name of NODES) {
    server.create<V1Node>('nodes', readyNode(name));
    server.create<V1Pod>('pods', webPod(`web-${name}`, name));
  }
}

afterEach(async () => {
  for (const t of timers) clearTimeout(t);
  timers.clear();
  await server.close();
});

function holders(): string[] {
  const text = server.get<V1DaemonSet>('daemonsets', NS, DS)?.metadata?.annotations?.[LOCK];
  return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID);
}

/** The host: the reboot request takes the node down (NotReady, new bootID) and back up 100 ms later. */
function simulatedHost(name: string, required: { value: boolean }): Rebooter {
  return {
    reboot: () => {
      // eslint-disable-next-line no-restricted-syntax -- real time: the simulated kubelets of this wave run on real timers
      const timer = setTimeout(() => {
        timers.delete(timer);
        const node = server.get<V1Node>('nodes', undefined, name)!;
        const boot = Number((node.status?.nodeInfo?.bootID ?? 'boot-1').split('-')[1]) + 1;
        node.status = {
          ...node.status,
          nodeInfo: nodeInfo(`boot-${boot}`),
          conditions: [{ type: 'Ready', status: 'False' }],
        };
        required.value = false;
        server.update('nodes', node);
        // eslint-disable-next-line no-restricted-syntax -- real time: the simulated kubelets of this wave run on real timers
        const up = setTimeout(() => {
          timers.delete(up);
          const again = server.get<V1Node>('nodes', undefined, name)!;
          again.status = {
            ...again.status,
            // eslint-disable-next-line no-restricted-syntax -- real time: the simulated kubelets of this wave run on real timers
            conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date().toISOString() }],
          };
          server.update('nodes', again);
        }, 100);
        timers.add(up);
      }, 30);
      timers.add(timer);
      return Promise.resolve();
    },
  };
}

describe.each([1, 2])('a rolling reboot of three nodes with concurrency %i', (concurrency) => {
  beforeEach(() => start(concurrency));

  it('reboots every node, never more than C at once, and leaves nothing cordoned or locked', async () => {
    const violations: string[] = [];
    let maxHolders = 0;
    const unsubscribe = server.onWrite((e) => {
      const now = holders();
      maxHolders = Math.max(maxHolders, now.length);
      if (now.length > concurrency) violations.push(`holders ${now.join(',')}`);
      if (e.resource !== 'nodes') return;
      const node = e.object as V1Node;
      const name = node.metadata?.name ?? '';
      if (node.spec?.unschedulable === true && !now.includes(name))
        violations.push(`${name} cordoned without lock`);
    });
    const controller = new AbortController();
    const logger = new MemoryLogger();
    const runs = NODES.map((name) => {
      const required = { value: true };
      const sentinel: Sentinel = { rebootRequired: () => Promise.resolve({ required: required.value }) };
      const agent = createAgent(config(name, concurrency), {
        kube: server.kubeInMemory().impersonating({
          user: `system:serviceaccount:${SA.namespace}:${SA.name}`,
          extra: { [NODE_NAME_EXTRA]: name },
        }),
        clock: new SystemClock(),
        logger,
        sentinel,
        rebooter: simulatedHost(name, required),
      });
      return agent.run(controller.signal);
    });
    const bootIDs = (): string[] =>
      NODES.map((n) => server.get<V1Node>('nodes', undefined, n)?.status?.nodeInfo?.bootID ?? '');
    const cordoned = (): boolean =>
      NODES.some((n) => server.get<V1Node>('nodes', undefined, n)?.spec?.unschedulable === true);
    const tainted = (): boolean =>
      NODES.some((n) => (server.get<V1Node>('nodes', undefined, n)?.spec?.taints ?? []).length > 0);
    // Each agent logs its completion after its release reached the server: wait for the logs too, or
    // the abort below may cut a release in flight (a write accepted, its answer not yet read).
    const completions = (): number =>
      logger.entries.filter((e) => e.message === 'reboot completed; lock released').length;
    try {
      await waitFor(
        () =>
          bootIDs().every((b) => b === 'boot-2') &&
          holders().length === 0 &&
          !cordoned() &&
          !tainted() &&
          completions() === 3,
        'all three nodes rebooted, uncordoned and released',
        60_000,
      );
    } finally {
      controller.abort();
      await Promise.all(runs);
      unsubscribe();
    }
    expect(violations).toEqual([]);
    expect(bootIDs()).toEqual(['boot-2', 'boot-2', 'boot-2']);
    expect(maxHolders).toBeGreaterThan(0);
    expect(maxHolders).toBeLessThanOrEqual(concurrency);
    expect(server.list<V1Pod>('pods').filter((p) => p.metadata?.name?.startsWith('web-'))).toEqual([]);
    const reasons = server.list<CoreV1Event>('events').map((e) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(['LockAcquired', 'Rebooting', 'RebootCompleted']));
    expect(completions()).toBe(3);
    expect(admission.counts.denied).toBe(0);
    expect(admission.counts.admitted).toBeGreaterThan(3 * 5);
  }, 30_000);
});
