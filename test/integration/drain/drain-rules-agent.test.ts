// Drain rules and --drain-fallback through the whole agent (issues 30, 33): the real seams
// (client-node, KubeDrainer, DaemonSetLock, KubeNodeOps, Events) against the fake API server, with the
// world misbehaving: a node-local agent that must never be evicted, a batch pod that never completes,
// a budget that never allows, a stolen agent token deleting another node's pods.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import type { CoreV1Event, V1Node, V1Pod, V1PodDisruptionBudget } from '../../../src/kube/kube.js';
import { Agent } from '../../../src/agent/agent.js';
import { createAgentDeps } from '../../../src/agent/create-agent.js';
import { SystemClock } from '../../../src/clock/clock.js';
import { defaultConfig } from '../../../src/config/parse.js';
import type { Config } from '../../../src/config/config.js';
import { ClientNodeKube } from '../../../src/kube/client.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { HISTORY_ANNOTATION, parseHistory } from '../../../src/node/history.js';
import { QUARANTINE_LABEL } from '../../../src/node/quarantine.js';
import { NODE_NAME_EXTRA, agentPolicyParams } from '../../../src/admission/agent-policy.js';
import { CelAdmission, boundAgentPolicies } from '../../../src/sim/fake-api/cel-admission.js';
import { startFakeApiServer, type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { testConfig } from '../../fakes/config.js';
import { kuredDaemonSet, nodeInfo, readyNode, webPod } from '../../fakes/kube-objects.js';
import { storedNode } from '../../fakes/cluster-reads.js';

let server: FakeApiServer;
let reboots: number;

function config(overrides: Partial<Config> = {}): Config {
  return testConfig({
    periodMs: 60_000,
    drainTimeoutMs: 300,
    evictionRetryDelayMs: 50,
    blockOnPdb: false,
    postRebootTimeoutMs: 60_000,
    ...overrides,
  });
}

function labelled(name: string, labels: Record<string, string>): V1Pod {
  const pod = webPod(name, 'n1');
  return { ...pod, metadata: { ...pod.metadata, labels: { ...pod.metadata?.labels, app: name, ...labels } } };
}

function node(): V1Node {
  return storedNode(server, 'n1');
}

/** The pods named in requests of `method` whose path ends in `suffix`, in order of arrival. */
function requested(method: string, suffix = ''): string[] {
  return server.requests
    .filter((r) => r.method === method && r.path.includes('/pods/') && r.path.endsWith(suffix))
    .map((r) => /\/pods\/([^/]+)/.exec(r.path)?.[1] ?? '');
}

function events(reason: string): string[] {
  return server
    .list<CoreV1Event>('events', 'default')
    .filter((e) => e.reason === reason)
    .map((e) => e.message ?? '');
}

function agent(c: Config): Agent {
  const deps = createAgentDeps(c, {
    kube: server.kubeInMemory(),
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

beforeEach(async () => {
  server = await startClusterApiServer();
  reboots = 0;
  server.create('daemonsets', kuredDaemonSet());
  server.create<V1Node>('nodes', readyNode('n1'));
  server.create<V1Pod>('pods', webPod('web-1', 'n1'));
});

afterEach(async () => {
  await server.close();
});

describe('a node with drain rules', () => {
  it('is rebooted with its skip pod never evicted, and its history records evicted and skipped pods', async () => {
    server.create<V1Pod>('pods', labelled('node-agent', { 'kured-ts.dev/drain': 'skip' }));
    expect((await agent(config()).tick()).kind).toBe('rebooting');
    expect(reboots).toBe(1);
    expect((await agent(config()).tick()).kind).toBe('completed');
    expect(requested('POST', '/eviction')).toEqual(['web-1']);
    expect(server.get<V1Pod>('pods', 'default', 'node-agent')).toBeDefined();
    const [record] = parseHistory(node().metadata?.annotations?.[HISTORY_ANNOTATION]);
    expect(record).toMatchObject({
      result: 'success',
      drain: {
        evicted: { count: 1, pods: ['default/web-1'] },
        skipped: { count: 1, pods: ['default/node-agent'] },
      },
    });
  });

  it('whose wait-completed pod never completes fails its drain at --drain-timeout and is quarantined; the pod is never evicted', async () => {
    server.create<V1Pod>('pods', labelled('batch', { 'kured-ts.dev/drain': 'wait-completed' }));
    const outcome = await agent(config()).tick();
    expect(outcome.kind).toBe('quarantined');
    expect(outcome.reason).toContain('default/batch');
    expect(node().metadata?.labels?.[QUARANTINE_LABEL]).toBe('drain-failed');
    expect(reboots).toBe(0);
    expect(requested('POST', '/eviction')).toEqual(['web-1']);
    expect(server.get<V1Pod>('pods', 'default', 'batch')).toBeDefined();
    expect(events('DrainFailed')).toEqual([expect.stringContaining('not completed at --drain-timeout')]);
    const [record] = parseHistory(node().metadata?.annotations?.[HISTORY_ANNOTATION]);
    expect(record).toMatchObject({ result: 'drain-failed', drain: { evicted: { count: 1 } } });
  });

  it('whose pod carries a typo in its drain label is not drained at all: the drain fails naming the pod and the value', async () => {
    server.create<V1Pod>('pods', labelled('osd-0', { 'kured-ts.dev/drain': 'skp' }));
    const outcome = await agent(config()).tick();
    expect(outcome.kind).toBe('quarantined');
    expect(outcome.reason).toContain('default/osd-0');
    expect(events('DrainFailed')).toEqual([expect.stringContaining('label kured-ts.dev/drain="skp"')]);
    expect(requested('POST', '/eviction')).toEqual([]);
    expect(reboots).toBe(0);
  });
});

describe('a budget that never allows', () => {
  beforeEach(() => {
    server.create<V1PodDisruptionBudget>('poddisruptionbudgets', {
      metadata: { name: 'web', namespace: 'default' },
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'web' } } },
    });
  });

  it('with --drain-fallback delete: the pod is deleted after --drain-timeout, an Event DrainFallback names it, the node reboots', async () => {
    const outcome = await agent(config({ drainFallback: 'delete' })).tick();
    expect(outcome.kind).toBe('rebooting');
    expect(requested('DELETE')).toEqual(['web-1']);
    expect(events('DrainFallback')).toEqual([expect.stringContaining('default/web-1')]);
    expect(reboots).toBe(1);
  });

  it('without it: no pod is ever deleted, the node is quarantined', async () => {
    const outcome = await agent(config()).tick();
    expect(outcome.kind).toBe('quarantined');
    expect(requested('POST', '/eviction').length).toBeGreaterThanOrEqual(2);
    expect(requested('DELETE')).toEqual([]);
    expect(events('DrainFallback')).toEqual([]);
    expect(server.get<V1Pod>('pods', 'default', 'web-1')).toBeDefined();
  });
});

describe('the admission policy on pod deletions', () => {
  const SA = { namespace: 'kube-system', name: 'kured-ts' };
  const USER = `system:serviceaccount:${SA.namespace}:${SA.name}`;
  let guarded: FakeApiServer;
  let admission: CelAdmission;

  async function start(drainFallback: Config['drainFallback']): Promise<FakeApiServer> {
    const params = agentPolicyParams({ ...defaultConfig(), drainFallback }, { serviceAccount: SA });
    admission = new CelAdmission(boundAgentPolicies(params));
    guarded = await startFakeApiServer({ admission });
    for (const [name, on] of [
      ['here', 'n1'],
      ['there', 'n2'],
    ]) {
      guarded.create<V1Pod>('pods', {
        ...webPod(name ?? '', on ?? ''),
        metadata: { name, namespace: 'default' },
      });
    }
    return guarded;
  }

  afterEach(async () => {
    await guarded.close();
  });

  const agentOf = (s: FakeApiServer, node?: string): ClientNodeKube =>
    s.kubeInMemory().impersonating({
      user: USER,
      ...(node === undefined ? {} : { extra: { [NODE_NAME_EXTRA]: node } }),
    });

  it('with --drain-fallback delete admits the agent deleting a pod bound to its own node', async () => {
    const s = await start('delete');
    await agentOf(s, 'n1').deletePod('default', 'here', {});
    expect(s.get('pods', 'default', 'here')).toBeUndefined();
  });

  it.each([
    [
      'a pod bound to another node',
      'n1',
      'there',
      /agent on node n1 may delete only pods bound to its own node, not default\/there on node n2/,
    ],
    ['with a token that carries no node claim', undefined, 'here', /carries no node claim/],
  ])('with --drain-fallback delete denies the agent deleting %s', async (_what, as, pod, message) => {
    const s = await start('delete');
    await expect(agentOf(s, as).deletePod('default', pod, {})).rejects.toThrow(/HTTP 403/);
    expect(admission.denials.map((d) => d.denied)).toEqual([expect.stringMatching(message)]);
    expect(s.get('pods', 'default', pod)).toBeDefined();
  });

  it('without --drain-fallback delete denies every pod deletion by the agent, even on its own node', async () => {
    const s = await start('none');
    await expect(agentOf(s, 'n1').deletePod('default', 'here', {})).rejects.toThrow(/HTTP 403/);
    expect(admission.denials.map((d) => d.denied)).toEqual([expect.stringMatching(/deletes no pod/)]);
    expect(s.get('pods', 'default', 'here')).toBeDefined();
    // an operator is not the agent: the policy leaves them alone
    await s.kubeInMemory().deletePod('default', 'here', {});
    expect(s.get('pods', 'default', 'here')).toBeUndefined();
  });
});
