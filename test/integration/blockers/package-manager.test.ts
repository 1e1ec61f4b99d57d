// Waiting for the host's package manager (issue 44, item 3), over the real seams (client-node,
// KubeNodeOps, KubeDrainer, DaemonSetLock, Events, prom-client) against the fake API server, with
// the host in memory: dpkg at work before the cordon, and a run that starts during the drain.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import type { CoreV1Event, V1DaemonSet, V1Node, V1Pod } from '../../../src/kube/kube.js';
import { Agent } from '../../../src/agent/agent.js';
import { createAgentDeps } from '../../../src/agent/create-agent.js';
import { SystemClock } from '../../../src/clock/clock.js';
import type { Config } from '../../../src/config/config.js';
import { ClientNodeKube } from '../../../src/kube/client.js';
import { entriesOf, parseLockAnnotation } from '../../../src/lock/kured-lock-format.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { PrometheusMetrics } from '../../../src/metrics/prometheus-metrics.js';
import { CYCLE_ANNOTATION } from '../../../src/node/cycle.js';
import { STATUS_ANNOTATION, parseStatus } from '../../../src/node/status.js';
import { type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { testConfig } from '../../fakes/config.js';
import { FakeHost } from '../../fakes/fake-host.js';
import { evaluateCheck } from '../../../src/cli/check.js';
import type { CheckDecisionKind } from '../../../src/cli/check-report.js';
import type { Outcome } from '../../../src/agent/outcome.js';
import { samples } from '../../fakes/metric-samples.js';
import { kuredDaemonSet, nodeInfo, readyNode, webPod } from '../../fakes/kube-objects.js';
import { storedNode } from '../../fakes/cluster-reads.js';

const LOCK_FILE = '/var/lib/dpkg/lock-frontend';

let server: FakeApiServer;
let host: FakeHost;
let reboots: number;

beforeEach(async () => {
  server = await startClusterApiServer();
  host = FakeHost.debian();
  reboots = 0;
  server.create('daemonsets', kuredDaemonSet());
  server.create<V1Node>('nodes', readyNode('n1'));
  server.create<V1Pod>('pods', webPod('web-1', 'n1'));
});

afterEach(async () => {
  await server.close();
});

function node(): V1Node {
  return storedNode(server, 'n1');
}

function holders(): string[] {
  const text = server.get<V1DaemonSet>('daemonsets', 'kube-system', 'kured')?.metadata?.annotations?.[
    'weave.works/kured-node-lock'
  ];
  return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID);
}

function agent(c: Config = testConfig({ periodMs: 60_000 }), metrics?: PrometheusMetrics): Agent {
  const deps = createAgentDeps(c, {
    kube: new ClientNodeKube(server.kubeConfig()),
    clock: new SystemClock(),
    logger: new MemoryLogger(),
    host,
    ...(metrics === undefined ? {} : { metrics }),
    sentinel: { rebootRequired: () => Promise.resolve({ required: reboots === 0 }) },
    rebooter: {
      reboot: () => {
        reboots++;
        const n = node();
        n.status = { ...n.status, nodeInfo: nodeInfo('boot-2') };
        server.update('nodes', n);
        return Promise.resolve();
      },
    },
  });
  return new Agent(c, deps);
}

describe('the host package manager', () => {
  it('holds the node back before the cordon while dpkg holds its lock, with the reason in status, an Event and kured_ts_blocked; it reboots once dpkg is done', async () => {
    const metrics = new PrometheusMetrics('n1', { processMetrics: false });
    host.hold(LOCK_FILE, 4242);
    const held = await agent(undefined, metrics).tick();
    expect(held).toMatchObject({ kind: 'blocked', blocker: 'package-manager' });
    expect(held.reason).toContain('dpkg/apt (/var/lib/dpkg/lock-frontend locked by pid 4242)');
    expect(node().spec?.unschedulable).toBeUndefined();
    expect(holders()).toEqual([]);
    const status = parseStatus(node().metadata?.annotations?.[STATUS_ANNOTATION]);
    expect(status).toMatchObject({ phase: 'blocked' });
    expect(status?.reason).toContain('locked by pid 4242');
    const events = server.list<CoreV1Event>('events', 'default').filter((e) => e.reason === 'RebootBlocked');
    expect(events.map((e) => e.message)).toEqual([expect.stringContaining('package manager at work')]);
    expect((await samples(metrics)).get('kured_ts_blocked{node="n1",blocker="package-manager"}')).toBe(1);

    host.releaseAll();
    expect((await agent(undefined, metrics).tick()).kind).toBe('rebooting');
    expect(reboots).toBe(1);
  });

  it('does not reboot when a package run takes the lock during the drain: the pre-reboot check ends the cycle and gives the slot back', async () => {
    // apt starts as the node is cordoned (an unattended-upgrades timer, say)
    const stop = server.onWrite((e) => {
      if (e.resource === 'nodes' && (e.object as V1Node).spec?.unschedulable === true) {
        host.hold(LOCK_FILE, 777);
        stop();
      }
    });
    const outcome = await agent().tick();
    expect(outcome.kind).toBe('aborted');
    expect(outcome.reason).toContain('package-manager');
    expect(outcome.reason).toContain('before the reboot');
    expect(reboots).toBe(0);
    expect(node().spec?.unschedulable).toBeUndefined();
    expect(node().metadata?.annotations?.[CYCLE_ANNOTATION]).toBeUndefined();
    expect(holders()).toEqual([]);

    expect(await agent().tick()).toMatchObject({ kind: 'blocked', blocker: 'package-manager' });
    expect(reboots).toBe(0);
    host.releaseAll();
    expect((await agent().tick()).kind).toBe('rebooting');
    expect(reboots).toBe(1);
  });

  it('does not hold back a host without any package manager', async () => {
    host = new FakeHost();
    expect((await agent().tick()).kind).toBe('rebooting');
  });

  it.each<[string, boolean, CheckDecisionKind, Outcome['kind']]>([
    [
      "kured-ts check --local on a host where dpkg is at work says blocked, for the agent's reason",
      true,
      'blocked',
      'blocked',
    ],
    [
      'kured-ts check --local on a host where dpkg is done says it would reboot, as the agent does',
      false,
      'would-reboot',
      'rebooting',
    ],
  ])('%s', async (_name, busy, decision, agentKind) => {
    if (busy) host.hold(LOCK_FILE, 4242);
    const c = testConfig({ periodMs: 60_000 });
    const report = await evaluateCheck(
      { node: 'n1', config: c, local: true },
      {
        kube: new ClientNodeKube(server.kubeConfig()),
        out: () => undefined,
        clock: new SystemClock(),
        sentinel: { rebootRequired: () => Promise.resolve({ required: true }) },
        hostView: { host },
      },
      AbortSignal.timeout(10_000),
    );
    expect(report.decision.kind).toBe(decision);
    expect(report.items.find((i) => i.name === 'package-manager')?.verdict).toBe(busy ? 'blocks' : 'ok');
    const outcome = await agent(c).tick();
    expect(outcome.kind).toBe(agentKind);
    if (outcome.kind === 'blocked')
      expect(report.decision.reason).toBe(`${outcome.blocker}: ${outcome.reason}`);
  });
});
