// A node whose drain fails is quarantined and passed over (issue 33), over the real seams
// (client-node, KubeNodeOps, KubeDrainer, DaemonSetLock, Events) against the fake API server, with
// the world misbehaving: the pods that stopped the drain finally go, a third party removes the
// label, the retry period passes, too many nodes are quarantined.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import type {
  CoreV1Event,
  V1DaemonSet,
  V1Node,
  V1Pod,
  V1PodDisruptionBudget,
} from '../../../src/kube/kube.js';
import { Agent } from '../../../src/agent/agent.js';
import { createAgentDeps } from '../../../src/agent/create-agent.js';
import type { Config } from '../../../src/config/config.js';
import { entriesOf, parseLockAnnotation } from '../../../src/lock/kured-lock-format.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { PrometheusMetrics } from '../../../src/metrics/prometheus-metrics.js';
import {
  QUARANTINE_ANNOTATION,
  QUARANTINE_LABEL,
  formatQuarantine,
  parseQuarantine,
} from '../../../src/node/quarantine.js';
import { type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { testConfig } from '../../fakes/config.js';
import { samples } from '../../fakes/metric-samples.js';
import { kuredDaemonSet, nodeInfo, readyNode, webPod } from '../../fakes/kube-objects.js';
import { SteeredClock } from '../../fakes/fake-clock.js';
import { storedNode } from '../../fakes/cluster-reads.js';

const NS = 'kube-system';
const DS = 'kured';
const LOCK = 'weave.works/kured-node-lock';

/** A drain that cannot finish while the budget stands: it fails after 300 ms. */
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

let server: FakeApiServer;
let required: boolean;
let reboots: number;
let clock: SteeredClock;

beforeEach(async () => {
  server = await startClusterApiServer();
  required = true;
  reboots = 0;
  clock = new SteeredClock();
  server.create('daemonsets', kuredDaemonSet());
  server.create<V1Node>('nodes', readyNode('n1'));
  server.create<V1Pod>('pods', webPod('web-1', 'n1'));
  // a budget that never allows: the eviction of web-1 is refused until the budget or the pod goes
  server.create<V1PodDisruptionBudget>('poddisruptionbudgets', {
    metadata: { name: 'web', namespace: 'default' },
    spec: { minAvailable: 1, selector: { matchLabels: { app: 'web' } } },
  });
});

afterEach(async () => {
  await server.close();
});

function node(name = 'n1'): V1Node {
  return storedNode(server, name);
}

function labels(name = 'n1'): Record<string, string> {
  return node(name).metadata?.labels ?? {};
}

function holders(): string[] {
  const text = server.get<V1DaemonSet>('daemonsets', NS, DS)?.metadata?.annotations?.[LOCK];
  return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID);
}

/** A third party edits the node (as kubectl would, a whole update). */
function edit(name: string, change: (n: V1Node) => void): void {
  const n = node(name);
  change(n);
  server.update('nodes', n);
}

/** `labels` without the quarantine label (as `kubectl label node n1 kured-ts.dev/quarantined-` leaves them). */
function withoutQuarantineLabel(labels: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(labels ?? {}).filter(([k]) => k !== QUARANTINE_LABEL));
}

/** The pods that stopped the drain go (their owner scaled them away). */
function podsGo(): void {
  server.delete('pods', 'default', 'web-1');
}

/** A fresh agent, as after a pod restart; the host reboots into boot-2 and is Ready at once. */
function agent(c: Config, metrics?: PrometheusMetrics): Agent {
  const deps = createAgentDeps(c, {
    kube: server.kubeInMemory(),
    clock,
    ...(metrics === undefined ? {} : { metrics }),
    logger: new MemoryLogger(),
    sentinel: { rebootRequired: () => Promise.resolve({ required }) },
    rebooter: {
      reboot: () => {
        reboots++;
        edit(c.nodeId, (n) => {
          n.status = {
            ...n.status,
            nodeInfo: nodeInfo('boot-2'),
            conditions: [{ type: 'Ready', status: 'True' }],
          };
        });
        required = false;
        return Promise.resolve();
      },
    },
  });
  return new Agent(c, deps);
}

describe('a node whose drain failed', () => {
  it('is quarantined: labelled, its pods recorded and named in an Event, uncordoned, its slot released; it takes no slot while they stay', async () => {
    const metrics = new PrometheusMetrics('n1', { processMetrics: false });
    const first = await agent(config(), metrics).tick();
    expect(first.kind).toBe('quarantined');
    expect(first.reason).toContain('default/web-1');
    expect(labels()[QUARANTINE_LABEL]).toBe('drain-failed');
    const record = parseQuarantine(node().metadata?.annotations?.[QUARANTINE_ANNOTATION]);
    expect(record?.pods.map((p) => p.pod)).toEqual(['default/web-1']);
    expect(record?.pods[0]?.uid).toBe(server.get<V1Pod>('pods', 'default', 'web-1')?.metadata?.uid);
    expect(node().spec?.unschedulable).toBeUndefined();
    expect(holders()).toEqual([]);
    const events = server.list<CoreV1Event>('events', 'default').filter((e) => e.reason === 'DrainFailed');
    expect(events.map((e) => e.message)).toEqual([expect.stringContaining('default/web-1')]);

    const again = await agent(config(), metrics).tick();
    expect(again).toMatchObject({ kind: 'blocked', blocker: 'quarantine' });
    expect(again.reason).toContain('default/web-1');
    expect(holders()).toEqual([]);
    expect(node().spec?.unschedulable).toBeUndefined();
    expect((await samples(metrics)).get('kured_ts_blocked{node="n1",blocker="quarantine"}')).toBe(1);
  });

  it('takes a slot again once those pods are gone, reboots, and the quarantine ends with the cycle', async () => {
    expect((await agent(config()).tick()).kind).toBe('quarantined');
    podsGo();
    expect((await agent(config()).tick()).kind).toBe('rebooting');
    expect(reboots).toBe(1);
    expect(labels()[QUARANTINE_LABEL]).toBe('drain-failed'); // until the cycle succeeds
    expect((await agent(config()).tick()).kind).toBe('completed');
    expect(labels()[QUARANTINE_LABEL]).toBeUndefined();
    expect(node().metadata?.annotations?.[QUARANTINE_ANNOTATION]).toBeUndefined();
    expect(node().spec?.unschedulable).toBeUndefined();
  });

  it('is released by a third party removing the label: it takes a slot at the next pass', async () => {
    expect((await agent(config()).tick()).kind).toBe('quarantined');
    edit('n1', (n) => {
      n.metadata!.labels = withoutQuarantineLabel(n.metadata!.labels);
    });
    // drained again (the budget still stands): quarantined again, not passed over
    const outcome = await agent(config()).tick();
    expect(outcome.kind).toBe('quarantined');
    expect(server.list<CoreV1Event>('events', 'default').filter((e) => e.reason === 'Draining')).toHaveLength(
      2,
    );
    expect(labels()[QUARANTINE_LABEL]).toBe('drain-failed');
  });

  it('tries again once --quarantine-retry has passed, though its pods stayed', async () => {
    const c = config({ quarantineRetryMs: 60_000 });
    expect((await agent(c).tick()).kind).toBe('quarantined');
    clock.offsetMs = 59_000;
    expect(await agent(c).tick()).toMatchObject({ kind: 'blocked', blocker: 'quarantine' });
    clock.offsetMs = 61_000;
    expect((await agent(c).tick()).kind).toBe('quarantined'); // drained, and failed, again
    const record = parseQuarantine(node().metadata?.annotations?.[QUARANTINE_ANNOTATION]);
    // eslint-disable-next-line no-restricted-syntax -- real time: the agents under test run on the system clock (SteeredClock)
    expect(Date.parse(record?.since ?? '')).toBeGreaterThan(Date.now() + 60_000);
  });

  it('with --quarantine-cordon stays cordoned as ours, and its next cycle uncordons it at the end', async () => {
    const c = config({ quarantineCordon: true });
    const outcome = await agent(c).tick();
    expect(outcome.kind).toBe('quarantined');
    expect(node().spec?.unschedulable).toBe(true);
    expect(holders()).toEqual([]);
    expect(parseQuarantine(node().metadata?.annotations?.[QUARANTINE_ANNOTATION])?.cordoned).toBe(true);
    podsGo();
    expect((await agent(c).tick()).kind).toBe('rebooting');
    expect(await agent(c).tick()).toMatchObject({ kind: 'completed', uncordoned: true });
    expect(node().spec?.unschedulable).toBeUndefined();
    expect(labels()[QUARANTINE_LABEL]).toBeUndefined();
  });

  it('is no longer quarantined once no reboot is needed (it was rebooted some other way)', async () => {
    expect((await agent(config()).tick()).kind).toBe('quarantined');
    required = false;
    expect((await agent(config()).tick()).kind).toBe('idle');
    expect(labels()[QUARANTINE_LABEL]).toBeUndefined();
    expect(node().metadata?.annotations?.[QUARANTINE_ANNOTATION]).toBeUndefined();
  });

  it('with --on-drain-failure requeue is not labelled and asks for the slot again at the next pass', async () => {
    const c = config({ onDrainFailure: 'requeue' });
    expect((await agent(c).tick()).kind).toBe('drain-failed');
    expect(labels()[QUARANTINE_LABEL]).toBeUndefined();
    expect((await agent(c).tick()).kind).toBe('drain-failed');
  });
});

describe('--max-quarantined', () => {
  /** `name` as an agent quarantined it. */
  function quarantined(name: string): void {
    const n = readyNode(name);
    n.metadata!.labels = { [QUARANTINE_LABEL]: 'drain-failed' };
    n.metadata!.annotations = {
      [QUARANTINE_ANNOTATION]: formatQuarantine({
        // eslint-disable-next-line no-restricted-syntax -- real time: the agents under test run on the system clock (SteeredClock)
        since: new Date().toISOString(),
        pods: [{ pod: `default/stuck-${name}`, reason: 'still terminating at --drain-timeout' }],
        cordoned: false,
      }),
    };
    server.create<V1Node>('nodes', n);
  }

  it('starts no new cycle while more other nodes are quarantined, names them, and goes on once fewer are', async () => {
    server.delete('poddisruptionbudgets', 'default', 'web');
    quarantined('n2');
    quarantined('n3');
    const c = config({ maxQuarantined: { count: 1 } });
    const metrics = new PrometheusMetrics('n1', { processMetrics: false });
    const halted = await agent(c, metrics).tick();
    expect(halted).toMatchObject({ kind: 'waiting-for-lock', gate: 'max-quarantined' });
    expect(halted.reason).toContain('2 other nodes quarantined (--max-quarantined 1): n2, n3');
    expect(holders()).toEqual([]);
    expect((await samples(metrics)).get('kured_ts_blocked{node="n1",blocker="max-quarantined"}')).toBe(1);
    // an operator releases n3
    edit('n3', (n) => {
      n.metadata!.labels = withoutQuarantineLabel(n.metadata!.labels);
    });
    expect((await agent(c).tick()).kind).toBe('rebooting');
  });

  it('counts a percentage of the fleet, rounded down', async () => {
    server.delete('poddisruptionbudgets', 'default', 'web');
    quarantined('n2');
    for (const name of ['n3', 'n4', 'n5']) server.create<V1Node>('nodes', readyNode(name));
    // 5 nodes: 20 % allows one other quarantined node, 19 % none
    expect((await agent(config({ maxQuarantined: { percent: 19 } })).tick()).kind).toBe('waiting-for-lock');
    expect((await agent(config({ maxQuarantined: { percent: 20 } })).tick()).kind).toBe('rebooting');
  });
});
