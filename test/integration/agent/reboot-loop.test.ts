// No reboot loops (issue 44, item 4), over the real seams (client-node, KubeNodeOps, KubeDrainer,
// DaemonSetLock, Events, prom-client) against the fake API server: a need that survives every
// reboot, an agent that dies between the reboot and the count, a garbled record, a need that goes
// and comes back after a later package run, an operator who releases the node.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import type { CoreV1Event, V1DaemonSet, V1Node } from '../../../src/kube/kube.js';
import { Agent } from '../../../src/agent/agent.js';
import { createAgentDeps } from '../../../src/agent/create-agent.js';
import { SystemClock } from '../../../src/clock/clock.js';
import type { Config } from '../../../src/config/config.js';
import { ClientNodeKube } from '../../../src/kube/client.js';
import { entriesOf, parseLockAnnotation } from '../../../src/lock/kured-lock-format.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { PrometheusMetrics } from '../../../src/metrics/prometheus-metrics.js';
import { CYCLE_ANNOTATION, CYCLE_LABEL, parseCycle } from '../../../src/node/cycle.js';
import { HISTORY_ANNOTATION, parseHistory } from '../../../src/node/history.js';
import { REBOOT_REQUEST_ANNOTATION } from '../../../src/node/reboot-request.js';
import { QUARANTINE_ANNOTATION, QUARANTINE_LABEL, parseQuarantine } from '../../../src/node/quarantine.js';
import { type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { testConfig } from '../../fakes/config.js';
import { samples } from '../../fakes/metric-samples.js';
import { kuredDaemonSet, nodeInfo, readyNode } from '../../fakes/kube-objects.js';
import { realDelay } from '../../fakes/wait-for.js';
import { storedNode } from '../../fakes/cluster-reads.js';

const NS = 'kube-system';
const DS = 'kured';
const LOCK = 'weave.works/kured-node-lock';

function config(overrides: Partial<Config> = {}): Config {
  return testConfig({ periodMs: 60_000, postRebootTimeoutMs: 60_000, maxRebootsPerNeed: 2, ...overrides });
}

let server: FakeApiServer;
/** What the host's sentinel says now. */
let required: boolean;
/** What the sentinel says once the host has rebooted (a stuck need: true). */
let afterBoot: boolean;
let reboots: number;

beforeEach(async () => {
  server = await startClusterApiServer();
  required = true;
  afterBoot = true;
  reboots = 0;
  server.create('daemonsets', kuredDaemonSet());
  server.create<V1Node>('nodes', readyNode('n1'));
});

afterEach(async () => {
  await server.close();
});

function node(): V1Node {
  return storedNode(server, 'n1');
}

function annotation(key: string): string | undefined {
  return node().metadata?.annotations?.[key];
}

function holders(): string[] {
  const text = server.get<V1DaemonSet>('daemonsets', NS, DS)?.metadata?.annotations?.[LOCK];
  return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID);
}

function edit(change: (n: V1Node) => void): void {
  const n = node();
  change(n);
  server.update('nodes', n);
}

/** A fresh agent, as after every reboot; the host reboots into boot-(N+1), Ready at once. */
function agent(c: Config = config(), metrics?: PrometheusMetrics): Agent {
  const deps = createAgentDeps(c, {
    kube: new ClientNodeKube(server.kubeConfig()),
    clock: new SystemClock(),
    ...(metrics === undefined ? {} : { metrics }),
    logger: new MemoryLogger(),
    sentinel: { rebootRequired: () => Promise.resolve({ required }) },
    rebooter: {
      reboot: () => {
        reboots++;
        edit((n) => {
          n.status = {
            ...n.status,
            nodeInfo: nodeInfo(`boot-${reboots + 1}`),
            conditions: [{ type: 'Ready', status: 'True' }],
          };
        });
        required = afterBoot;
        return Promise.resolve();
      },
    },
  });
  return new Agent(c, deps);
}

function events(reason: string): string[] {
  return server
    .list<CoreV1Event>('events', 'default')
    .filter((e) => e.reason === reason)
    .map((e) => e.message ?? '');
}

describe('a need that survives every reboot', () => {
  it('is rebooted --max-reboots-per-need times, then the node is quarantined reboot-loop with its slot released, an Event, the metric and its history', async () => {
    const metrics = new PrometheusMetrics('n1', { processMetrics: false });
    expect((await agent(config(), metrics).tick()).kind).toBe('rebooting');
    expect(reboots).toBe(1);
    // back on boot-2, the sentinel still asks: the same cycle reboots again, the count kept
    expect((await agent(config(), metrics).tick()).kind).toBe('rebooting');
    expect(reboots).toBe(2);
    expect(parseCycle(annotation(CYCLE_ANNOTATION))).toMatchObject({ bootID: 'boot-2', needReboots: 1 });
    expect(node().spec?.unschedulable).toBe(true); // cordoned throughout the loop

    const stopped = await agent(config(), metrics).tick();
    expect(stopped.kind).toBe('reboot-loop');
    expect(stopped.reason).toContain('the need survived 2 reboots (--max-reboots-per-need 2)');
    expect(stopped.reason).toContain('kubectl label node n1 kured-ts.dev/quarantined-');
    expect(reboots).toBe(2);
    expect(node().metadata?.labels?.[QUARANTINE_LABEL]).toBe('reboot-loop');
    expect(parseQuarantine(annotation(QUARANTINE_ANNOTATION))?.kind).toBe('reboot-loop');
    expect(annotation(CYCLE_ANNOTATION)).toBeUndefined();
    expect(node().spec?.unschedulable).toBeUndefined();
    expect(holders()).toEqual([]);
    expect(events('RebootLoop')).toEqual([expect.stringContaining('the need survived 2 reboots')]);
    expect(parseHistory(annotation(HISTORY_ANNOTATION)).at(-1)?.result).toBe('reboot-loop');
    expect((await samples(metrics)).get('kured_ts_reboots_total{result="reboot-loop"}')).toBe(1);

    const held = await agent(config(), metrics).tick();
    expect(held).toMatchObject({ kind: 'blocked', blocker: 'reboot-loop' });
    expect(held.reason).toContain('no reboot until an operator removes the label');
    expect((await samples(metrics)).get('kured_ts_blocked{node="n1",blocker="reboot-loop"}')).toBe(1);
    expect(reboots).toBe(2);
  });

  it('is not released by --quarantine-retry; an operator removing the label is, and the count starts again from 0', async () => {
    const c = config({ quarantineRetryMs: 1 });
    await agent(c).tick();
    await agent(c).tick();
    expect((await agent(c).tick()).kind).toBe('reboot-loop');
    await realDelay(5); // --quarantine-retry long past
    expect(await agent(c).tick()).toMatchObject({ kind: 'blocked', blocker: 'reboot-loop' });
    expect(reboots).toBe(2);

    edit((n) => {
      n.metadata!.labels = Object.fromEntries(
        Object.entries(n.metadata!.labels ?? {}).filter(([k]) => k !== QUARANTINE_LABEL),
      );
    });
    expect((await agent(c).tick()).kind).toBe('rebooting');
    expect(reboots).toBe(3);
    expect(parseCycle(annotation(CYCLE_ANNOTATION))?.needReboots).toBeUndefined();
  });

  it('stops at once with --max-reboots-per-need 1: one reboot, then reboot-loop', async () => {
    const c = config({ maxRebootsPerNeed: 1 });
    expect((await agent(c).tick()).kind).toBe('rebooting');
    expect((await agent(c).tick()).kind).toBe('reboot-loop');
    expect(reboots).toBe(1);
  });
});

describe('the count of reboots for one need', () => {
  it('survives an agent that dies between the reboot and the write that counts it: the next agent counts that reboot once', async () => {
    expect((await agent().tick()).kind).toBe('rebooting');
    // the first pass on boot-2 cannot write the node: it dies with nothing counted
    server.injectFailure({ method: 'PATCH', pathIncludes: '/nodes/n1' }, 500, 100);
    await expect(agent().tick()).resolves.toMatchObject({ kind: 'error' });
    server.clearFailures();
    expect(parseCycle(annotation(CYCLE_ANNOTATION))).toMatchObject({ bootID: 'boot-1', attempts: 1 });
    expect(parseCycle(annotation(CYCLE_ANNOTATION))?.needReboots).toBeUndefined();

    expect((await agent().tick()).kind).toBe('rebooting');
    expect(parseCycle(annotation(CYCLE_ANNOTATION))?.needReboots).toBe(1);
    expect((await agent().tick()).kind).toBe('reboot-loop');
    expect(reboots).toBe(2);
  });

  it('read from a garbled record is unknown, and unknown stops the loop: no reboot, quarantined reboot-loop', async () => {
    expect((await agent().tick()).kind).toBe('rebooting');
    edit((n) => {
      n.metadata!.annotations![CYCLE_ANNOTATION] = '{"bootID": garbage';
    });
    const outcome = await agent().tick();
    expect(outcome.kind).toBe('reboot-loop');
    expect(outcome.reason).toContain('the count of reboots for this need cannot be read');
    expect(reboots).toBe(1);
    expect(node().metadata?.labels?.[QUARANTINE_LABEL]).toBe('reboot-loop');
    expect(node().metadata?.labels?.[CYCLE_LABEL]).toBeUndefined();
    expect(holders()).toEqual([]);
  });

  it('lost with its record (the annotation removed, our label left) is unknown: no reboot, quarantined reboot-loop', async () => {
    expect((await agent().tick()).kind).toBe('rebooting');
    edit((n) => {
      n.metadata!.annotations = Object.fromEntries(
        Object.entries(n.metadata!.annotations ?? {}).filter(([k]) => k !== CYCLE_ANNOTATION),
      );
    });
    const outcome = await agent().tick();
    expect(outcome.kind).toBe('reboot-loop');
    expect(reboots).toBe(1);
    expect(node().metadata?.labels?.[QUARANTINE_LABEL]).toBe('reboot-loop');
    expect(node().metadata?.labels?.[CYCLE_LABEL]).toBeUndefined();
    expect(holders()).toEqual([]);
  });

  it('read from a record whose count field is not a number is unknown too', async () => {
    expect((await agent().tick()).kind).toBe('rebooting');
    edit((n) => {
      const record = JSON.parse(n.metadata!.annotations![CYCLE_ANNOTATION]!) as Record<string, unknown>;
      n.metadata!.annotations![CYCLE_ANNOTATION] = JSON.stringify({ ...record, needReboots: 'lots' });
    });
    // the reboot came (boot-2): the node waits for readiness, then stops instead of rebooting again
    expect((await agent().tick()).kind).toBe('reboot-loop');
    expect(reboots).toBe(1);
  });

  it('starts again from 0 for a need that went away at the first check after the reboot and came back after a later package run', async () => {
    // the first need survives one reboot and is gone after the second
    expect((await agent().tick()).kind).toBe('rebooting');
    afterBoot = false;
    expect((await agent().tick()).kind).toBe('rebooting');
    expect((await agent().tick()).kind).toBe('completed');
    expect(reboots).toBe(2);
    expect(node().spec?.unschedulable).toBeUndefined();

    // a later package run: a new need that survives its reboot; counted from 0, so it reboots again
    required = true;
    afterBoot = true;
    expect((await agent().tick()).kind).toBe('rebooting');
    expect((await agent().tick()).kind).toBe('rebooting');
    expect(reboots).toBe(4);
    expect(parseCycle(annotation(CYCLE_ANNOTATION))?.needReboots).toBe(1);
    expect(node().metadata?.labels?.[QUARANTINE_LABEL]).toBeUndefined();
  });

  it('does not count an admin reboot request answered by the reboot as a need that survived it', async () => {
    required = false;
    afterBoot = false;
    edit((n) => {
      n.metadata!.annotations = {
        ...n.metadata!.annotations,
        [REBOOT_REQUEST_ANNOTATION]: JSON.stringify({
          reason: 'kernel test',
          by: 'admin',
          // eslint-disable-next-line no-restricted-syntax -- real time: the agent under test runs on the system clock
          at: new Date().toISOString(),
        }),
      };
    });
    expect((await agent().tick()).kind).toBe('rebooting');
    expect((await agent().tick()).kind).toBe('completed');
    expect(reboots).toBe(1);
  });
});
