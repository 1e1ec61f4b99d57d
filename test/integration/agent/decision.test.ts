// One agent over the real seams (client-node, KubeNodeOps, KubeDrainer, DaemonSetLock, Events)
// against the fake API server: what the cluster records is what a restarted agent continues from.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { waitFor } from '../../fakes/wait-for.js';
import type { V1DaemonSet, V1Node, V1Pod, V1PodDisruptionBudget } from '../../../src/kube/kube.js';
import { Agent } from '../../../src/agent/agent.js';
import { CYCLE_ANNOTATION, CYCLE_LABEL, parseCycle, type CycleRecord } from '../../../src/node/cycle.js';
import { createAgentDeps } from '../../../src/agent/create-agent.js';
import type { Config } from '../../../src/config/config.js';
import { entriesOf, parseLockAnnotation } from '../../../src/lock/kured-lock-format.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { testConfig } from '../../fakes/config.js';
import { samples } from '../../fakes/metric-samples.js';
import { PrometheusMetrics } from '../../../src/metrics/prometheus-metrics.js';
import { parseLabelSelector } from '../../../src/selector/label-selector.js';
import type { CoreV1Event } from '../../../src/kube/kube.js';
import { kuredDaemonSet, nodeInfo, readyNode, webPod } from '../../fakes/kube-objects.js';
import { SteeredClock } from '../../fakes/fake-clock.js';
import { storedNode } from '../../fakes/cluster-reads.js';

const NS = 'kube-system';
const DS = 'kured';
const LOCK = 'weave.works/kured-node-lock';
const TAINT = 'weave.works/kured-node-reboot';

function config(overrides: Partial<Config> = {}): Config {
  return testConfig({
    periodMs: 60_000,
    drainTimeoutMs: 5000,
    preferNoScheduleTaint: TAINT,
    postRebootTimeoutMs: 60_000,
    ...overrides,
  });
}

/**
 * Real timers, but the test moves the wall clock forward by hand, and a sleep of exactly
 * `gateMs` (the reboot delay under test) lasts until the test opens the gate: no assertion waits
 * on how fast the machine is.
 */
class GatedClock extends SteeredClock {
  gateMs = -1;
  gated = false;
  private open: (() => void) | undefined;

  override sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (ms !== this.gateMs) return super.sleep(ms, signal);
    this.gated = true;
    return new Promise((resolve) => (this.open = resolve));
  }

  release(): void {
    this.open?.();
  }
}

let server: FakeApiServer;
let required: boolean;
let reboots: number;
let clock: GatedClock;

beforeEach(async () => {
  server = await startClusterApiServer();
  required = true;
  reboots = 0;
  clock = new GatedClock();
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

function cycle(): CycleRecord | undefined {
  return parseCycle(node().metadata?.annotations?.[CYCLE_ANNOTATION]);
}

function lockMetadata(): Record<string, unknown>[] {
  const text = server.get<V1DaemonSet>('daemonsets', NS, DS)?.metadata?.annotations?.[LOCK];
  return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.metadata);
}

/** A fresh agent, as after a pod restart; the host reboots into `bootAs` with Ready=`ready`. */
function agent(
  c: Config,
  host: { bootAs?: string; ready?: string } = {},
  metrics?: PrometheusMetrics,
): Agent {
  const deps = createAgentDeps(c, {
    kube: server.kubeInMemory(),
    clock,
    ...(metrics === undefined ? {} : { metrics }),
    logger: new MemoryLogger(),
    sentinel: { rebootRequired: () => Promise.resolve({ required }) },
    rebooter: {
      reboot: () => {
        reboots++;
        if (host.bootAs === undefined) return Promise.resolve();
        const n = node();
        n.status = {
          ...n.status,
          nodeInfo: nodeInfo(host.bootAs),
          conditions: [{ type: 'Ready', status: host.ready ?? 'True' }],
        };
        server.update('nodes', n);
        required = false;
        return Promise.resolve();
      },
    },
  });
  return new Agent(c, deps);
}

describe('agent over the real seams', () => {
  it('keeps the post-reboot clock in the cycle record: a restarted agent still times out and holds', async () => {
    const c = config({ postRebootTimeoutMs: 60_000 });
    expect((await agent(c, { bootAs: 'boot-2', ready: 'False' }).tick()).kind).toBe('rebooting');
    expect(server.list<V1Pod>('pods')).toEqual([]);
    expect((await agent(c).tick()).kind).toBe('verifying');
    const since = cycle()?.verifyingSince;
    expect(typeof since).toBe('string');
    expect((await agent(c).tick()).kind).toBe('verifying');
    clock.offsetMs += 61_000;
    const held = await agent(c).tick();
    expect(held.kind).toBe('holding');
    expect(lockMetadata()).toEqual([{ unschedulable: false, bootID: 'boot-1' }]);
    expect(cycle()).toMatchObject({ bootID: 'boot-1', cordoned: true, attempts: 1, verifyingSince: since });
    expect(node().spec?.unschedulable).toBe(true);
    const status = JSON.parse(node().metadata?.annotations?.['kured-ts.dev/status'] ?? '{}') as {
      phase?: string;
    };
    expect(status.phase).toBe('failed');
  });

  it('aborts when someone uncordons the node during the reboot delay, leaving it as they set it', async () => {
    const c = config({ rebootDelayMs: 45_000 });
    clock.gateMs = 45_000;
    const ticking = agent(c, { bootAs: 'boot-2' }).tick();
    await waitFor(() => clock.gated);
    expect(node().spec?.unschedulable).toBe(true);
    await server.kubeInMemory().mergePatchNode('n1', { spec: { unschedulable: null } });
    clock.release();
    const outcome = await ticking;
    expect(outcome.kind).toBe('aborted');
    expect(reboots).toBe(0);
    expect(lockMetadata()).toEqual([]);
    expect(node().spec?.unschedulable).toBeFalsy();
    expect(node().metadata?.annotations?.[CYCLE_ANNOTATION]).toBeUndefined();
    expect(node().metadata?.labels?.[CYCLE_LABEL]).toBeUndefined();
  });

  it('keeps a pre-cordoned node cordoned and a user taint in place, and removes only our taint', async () => {
    const n = node();
    n.spec = { unschedulable: true, taints: [{ key: 'team/maintenance', effect: 'NoSchedule' }] };
    server.update('nodes', n);
    const c = config();
    expect((await agent(c, { bootAs: 'boot-2' }).tick()).kind).toBe('rebooting');
    expect(node().spec?.taints?.map((t) => t.key)).toEqual(['team/maintenance', TAINT]);
    expect((await agent(c).tick()).kind).toBe('completed');
    expect(node().spec?.unschedulable).toBe(true);
    expect(node().spec?.taints?.map((t) => t.key)).toEqual(['team/maintenance']);
    expect(lockMetadata()).toEqual([]);
  });

  it('on a drain refused by a PDB uncordons the node before it releases the lock', async () => {
    server.create<V1PodDisruptionBudget>('poddisruptionbudgets', {
      metadata: { name: 'web', namespace: 'default' },
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'web' } } },
    });
    const steps: string[] = [];
    let cordoned = false;
    let held = false;
    const unsubscribe = server.onWrite((e) => {
      if (e.resource === 'nodes') {
        const now = (e.object as V1Node).spec?.unschedulable === true;
        if (cordoned !== now) steps.push(now ? 'cordon' : 'uncordon');
        cordoned = now;
      }
      if (e.resource === 'daemonsets') {
        const now = lockMetadata().length > 0;
        if (held !== now) steps.push(now ? 'acquire' : 'release');
        held = now;
      }
    });
    const c = config({ blockOnPdb: false, drainTimeoutMs: 300, lockReleaseDelayMs: 60_000 });
    const outcome = await agent(c, { bootAs: 'boot-2' }).tick();
    unsubscribe();
    expect(outcome.kind).toBe('quarantined');
    expect(outcome.reason).toContain('default/web-1');
    expect(reboots).toBe(0);
    expect(steps).toEqual(['acquire', 'cordon', 'uncordon', 'release']);
    expect(node().metadata?.annotations?.[CYCLE_ANNOTATION]).toBeUndefined();
    expect(node().metadata?.labels?.[CYCLE_LABEL]).toBeUndefined();
  });

  it('with the PDB pre-flight does not take the lock while the PDB allows no disruption', async () => {
    server.create<V1PodDisruptionBudget>('poddisruptionbudgets', {
      metadata: { name: 'web', namespace: 'default' },
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'web' } } },
    });
    const outcome = await agent(config()).tick();
    expect(outcome).toEqual({
      kind: 'blocked',
      blocker: 'pdb',
      reason: 'PodDisruptionBudget default/web allows no disruption of pod default/web-1',
    });
    expect(lockMetadata()).toEqual([]);
    expect(node().spec?.taints?.map((t) => t.key)).toEqual([TAINT]);
  });

  it('sends no API request on idle ticks after start-up, and taints at start-up when a reboot is needed', async () => {
    required = false;
    const a = agent(config());
    expect((await a.startUp()).kind).toBe('idle');
    const afterStartUp = server.requests.length;
    for (let i = 0; i < 20; i++) expect((await a.tick()).kind).toBe('idle');
    expect(server.requests.slice(afterStartUp)).toEqual([]);

    required = true;
    const b = agent(config());
    expect((await b.startUp()).kind).toBe('pending');
    expect(node().spec?.taints?.map((t) => t.key)).toEqual([TAINT]);
    expect(lockMetadata()).toEqual([]);
  });

  it('counts the age of a reboot need across agent restarts, and past --reboot-deadline says it is overdue once per period', async () => {
    const HOUR = 3_600_000;
    const c = config({
      rebootDeadlineMs: 2 * HOUR,
      periodMs: HOUR,
      blockingPodSelectors: [parseLabelSelector('app=web')],
    });
    const statusOf = (): { phase?: string; requiredSince?: string; due?: string } =>
      JSON.parse(node().metadata?.annotations?.['kured-ts.dev/status'] ?? '{}') as object;
    const overdueEvents = (): CoreV1Event[] =>
      server.list<CoreV1Event>('events', 'default').filter((e) => e.reason === 'RebootOverdue');
    const metrics = new PrometheusMetrics('n1', {
      processMetrics: false,
      nowMs: () => clock.now().getTime(),
    });

    expect((await agent(c, {}, metrics).tick()).kind).toBe('blocked');
    const first = statusOf();
    expect(first.phase).toBe('blocked');
    const since = Date.parse(first.requiredSince ?? '');
    expect(Date.parse(first.due ?? '')).toBe(since + 2 * HOUR);
    expect(overdueEvents()).toEqual([]);

    clock.offsetMs += 3 * HOUR; // a restarted agent, three hours on
    const restarted = new PrometheusMetrics('n1', {
      processMetrics: false,
      nowMs: () => clock.now().getTime(),
    });
    expect((await agent(c, {}, restarted).tick()).kind).toBe('blocked');
    expect(statusOf().requiredSince).toBe(first.requiredSince);
    const scraped = await samples(restarted);
    expect(scraped.get('kured_ts_reboot_overdue{node="n1"}')).toBe(1);
    expect(scraped.get('kured_ts_reboot_required_seconds{node="n1"}')).toBeGreaterThanOrEqual(3 * 3600);
    const [event, ...more] = overdueEvents();
    expect(more).toEqual([]);
    expect(event).toMatchObject({ type: 'Warning', involvedObject: { kind: 'Node', name: 'n1' } });
    expect(event?.message).toMatch(/^reboot required for 3h00m, past the deadline of 2h00m: blocked: /);

    required = false; // the need goes away: no age, no deadline
    expect((await agent(c, {}, restarted).tick()).kind).toBe('idle');
    expect(statusOf()).not.toHaveProperty('requiredSince');
    expect((await samples(restarted)).get('kured_ts_reboot_overdue{node="n1"}')).toBe(0);
  });
});
