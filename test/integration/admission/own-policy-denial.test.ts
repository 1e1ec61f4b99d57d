// An agent whose own admission policy denies it (issue 47): the chart's policy is rendered from the
// chart's values, the agent runs with others (a flag given through env or extraArgs). The real agent
// (createAgentDeps: client-node, its blockers, KubeDrainer, DaemonSetLock, Events) against the fake API
// server, which enforces the chart's policy with a CEL engine, each request as the agent's bound
// token. A denial is never a block waited out: a configuration error, reported once (status, Event,
// error log line naming the policy and the flag), and `kured-ts check` shows it.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { NODE_NAME_EXTRA, agentPolicyParams } from '../../../src/admission/agent-policy.js';
import { Agent } from '../../../src/agent/agent.js';
import { createAgentDeps } from '../../../src/agent/create-agent.js';
import { evaluateCheck } from '../../../src/cli/check.js';
import { SystemClock } from '../../../src/clock/clock.js';
import type { Config } from '../../../src/config/config.js';
import { ClientNodeKube } from '../../../src/kube/client.js';
import type { CoreV1Event, V1DaemonSet, V1Node, V1Pod } from '../../../src/kube/kube.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { QUARANTINE_LABEL } from '../../../src/node/quarantine.js';
import { STATUS_ANNOTATION, parseStatus } from '../../../src/node/status.js';
import { CelAdmission, boundAgentPolicies } from '../../../src/sim/fake-api/cel-admission.js';
import { type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { testConfig } from '../../fakes/config.js';
import { kuredDaemonSet, readyNode, webPod } from '../../fakes/kube-objects.js';
import { storedNode } from '../../fakes/cluster-reads.js';

const SA = { namespace: 'kube-system', name: 'kured-ts' };
const LOCK = 'weave.works/kured-node-lock';

let server: FakeApiServer;
let admission: CelAdmission;
let reboots: number;

/** The chart's configuration (what its policy is rendered from) and the agent's, unless a case differs. */
function config(overrides: Partial<Config> = {}): Config {
  return testConfig({ periodMs: 60_000, drainTimeoutMs: 5_000, ...overrides });
}

async function start(chart: Config): Promise<void> {
  admission = new CelAdmission(boundAgentPolicies(agentPolicyParams(chart, { serviceAccount: SA })));
  server = await startClusterApiServer({ admission });
  server.create('daemonsets', kuredDaemonSet());
  server.create<V1Node>('nodes', readyNode('n1'));
  server.create<V1Pod>('pods', webPod('web-1', 'n1'));
}

afterEach(async () => {
  await server.close();
});

beforeEach(() => {
  reboots = 0;
});

function node(): V1Node {
  return storedNode(server, 'n1');
}

function lockHolders(): string {
  return server.get<V1DaemonSet>('daemonsets', 'kube-system', 'kured')?.metadata?.annotations?.[LOCK] ?? '';
}

function events(reason: string): CoreV1Event[] {
  return server.list<CoreV1Event>('events', 'default').filter((e) => e.reason === reason);
}

/** The agent of n1 as its pod-bound token makes it: the chart's ServiceAccount with the node claim. */
function agent(c: Config, logger: MemoryLogger): Agent {
  const kube = new ClientNodeKube(server.kubeConfig()).impersonating({
    user: `system:serviceaccount:${SA.namespace}:${SA.name}`,
    extra: { [NODE_NAME_EXTRA]: 'n1' },
  });
  const deps = createAgentDeps(c, {
    kube,
    clock: new SystemClock(),
    logger,
    sentinel: { rebootRequired: () => Promise.resolve({ required: true }) },
    rebooter: {
      reboot: () => {
        reboots++;
        return Promise.resolve();
      },
    },
  });
  return new Agent(c, deps);
}

describe('an agent whose own admission policy denies one of its requests', () => {
  it.each<[string, Partial<Config>, string, string]>([
    [
      "its PDB pre-flight's dry run: the agent runs with --drain-grace-period=5, the chart with -1",
      { drainGracePeriodSeconds: 5 },
      'kured-ts-agent-eviction',
      '--drain-grace-period',
    ],
    [
      'its drain, without the pre-flight (--block-on-pdb=false): the drain stops, the cycle ends, no quarantine',
      { drainGracePeriodSeconds: 5, blockOnPdb: false },
      'kured-ts-agent-eviction',
      '--drain-grace-period',
    ],
    [
      "its cordon with a pre-reboot label the chart's policy does not know",
      { preRebootNodeLabels: { 'example.com/rebooting': 'true' } },
      'kured-ts-agent-nodes',
      '--pre-reboot-node-labels',
    ],
  ])(
    'reports %s once as a configuration error, never reboots, and leaves the node in service',
    async (_name, agentOnly, policy, option) => {
      await start(config());
      const logger = new MemoryLogger();
      const a = agent(config(agentOnly), logger);
      const outcomes = [await a.tick(), await a.tick(), await a.tick()];
      for (const outcome of outcomes) expect(outcome).toMatchObject({ kind: 'misconfigured', policy });
      expect(outcomes[0]?.reason).toContain(option);
      expect(outcomes[0]?.reason).toContain(policy);
      expect(admission.counts.denied).toBeGreaterThanOrEqual(3);
      // once: one Event, one status, one error log line naming the policy and the flag
      expect(events('ConfigurationError').map((e) => [e.type, e.message])).toEqual([
        ['Warning', outcomes[0]?.reason],
      ]);
      const status = parseStatus(node().metadata?.annotations?.[STATUS_ANNOTATION]);
      expect(status).toMatchObject({ phase: 'failed', deniedBy: policy, reason: outcomes[0]?.reason });
      const errors = logger.entries.filter((e) => e.level === 'error');
      expect(errors.map((e) => [e.fields.policy, e.fields.options])).toEqual([
        [policy, expect.arrayContaining([option])],
      ]);
      // nothing happened to the node: no reboot, in service, no quarantine, its pod where it was
      expect(reboots).toBe(0);
      expect(node().spec?.unschedulable).toBeFalsy();
      expect(node().metadata?.labels?.[QUARANTINE_LABEL]).toBeUndefined();
      expect(server.get<V1Pod>('pods', 'default', 'web-1')).toBeDefined();
      // nor to the wave: no slot held by a node whose every attempt is denied alike
      expect(lockHolders()).not.toContain('"n1"');
    },
  );

  it('goes on as soon as the chart and the agent agree: the same agent reboots the node', async () => {
    await start(config({ drainGracePeriodSeconds: 5 }));
    const outcome = await agent(config({ drainGracePeriodSeconds: 5 }), new MemoryLogger()).tick();
    expect(outcome.kind).toBe('rebooting');
    expect(reboots).toBe(1);
    expect(admission.counts.denied).toBe(0);
  });

  it('is shown by kured-ts check: the agent item and the decision name the policy and the flag', async () => {
    await start(config());
    await agent(config({ drainGracePeriodSeconds: 5 }), new MemoryLogger()).tick();
    const report = await evaluateCheck(
      { node: 'n1', config: config() },
      { kube: new ClientNodeKube(server.kubeConfig()), out: () => undefined, clock: new SystemClock() },
      AbortSignal.timeout(10_000),
    );
    expect(report.items.find((i) => i.name === 'agent')).toMatchObject({
      verdict: 'blocks',
      detail: expect.stringContaining('kured-ts-agent-eviction'),
    });
    expect(report.decision.kind).toBe('misconfigured');
    expect(report.decision.reason).toContain('--drain-grace-period');
  });
});
