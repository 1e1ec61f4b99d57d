// Waves you can trust with a bad kernel (issue 45), through the real seams (client-node,
// KubeNodeOps, DaemonSetLock with its wave census, the wave's store, the health checks) against the
// fake API server, with no coordinator: the gates hold on the nodes' own judgement. A node that fails
// halts the wave; a node that took its slot but has not drained gives it back; `kured-ts resume`
// lets the wave go on; a health check still false after a reboot is a failure; slow start and one
// zone at a time hold with nobody ordering the queue.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import type { CoreV1Event, V1DaemonSet, V1Node } from '../../../src/kube/kube.js';
import { Agent, type Outcome } from '../../../src/agent/agent.js';
import { createAgentDeps } from '../../../src/agent/create-agent.js';
import type { Config } from '../../../src/config/config.js';
import { healthCheck } from '../../../src/config/wave-values.js';
import { ClientNodeKube } from '../../../src/kube/client.js';
import { entriesOf, parseLockAnnotation } from '../../../src/lock/kured-lock-format.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import {
  WAVE_LABEL,
  WAVE_RESUMED_ANNOTATION,
  WAVE_STATE_LABEL,
  parseWaveResume,
} from '../../../src/node/wave.js';
import { FLEET_PAUSE_ANNOTATION, HALT_BY, parseFleetPause } from '../../../src/pause/fleet-pause.js';
import { runResume } from '../../../src/cli/resume.js';
import type { FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { testConfig } from '../../fakes/config.js';
import { kuredDaemonSet, nodeInfo, readyNode } from '../../fakes/kube-objects.js';
import { SteeredClock } from '../../fakes/fake-clock.js';
import { storedNode } from '../../fakes/cluster-reads.js';

const NS = 'kube-system';
const DS = 'kured';
const LOCK = 'weave.works/kured-node-lock';
const MINUTE = 60_000;

let server: FakeApiServer;
let clock: SteeredClock;
/** Nodes whose reboot is required (the sentinel's answer). */
let required: Set<string>;
/** Nodes whose next boot is bad: back with a new boot ID, never Ready. */
let bad: Set<string>;
let agents: Map<string, Agent>;

beforeEach(async () => {
  server = await startClusterApiServer();
  clock = new SteeredClock();
  required = new Set();
  bad = new Set();
  agents = new Map();
  server.create('daemonsets', kuredDaemonSet());
});

afterEach(async () => {
  await server.close();
});

function node(name: string): V1Node {
  return storedNode(server, name);
}

function labels(name: string): Record<string, string> {
  return node(name).metadata?.labels ?? {};
}

function daemonSet(): V1DaemonSet {
  return server.get<V1DaemonSet>('daemonsets', NS, DS)!;
}

function holders(): string[] {
  const text = daemonSet().metadata?.annotations?.[LOCK];
  return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID);
}

/** Nodes that need a reboot, each with `labels` (a zone). */
function nodes(...specs: [name: string, labels?: Record<string, string>][]): void {
  for (const [name, extra] of specs) {
    const n = readyNode(name);
    n.metadata = { ...n.metadata, labels: { 'kubernetes.io/hostname': name, ...extra } };
    server.create<V1Node>('nodes', n);
    required.add(name);
  }
}

/** The host comes back on boot-2: Ready, unless its kernel is bad. */
function reboot(name: string): void {
  const n = node(name);
  n.status = {
    ...n.status,
    nodeInfo: nodeInfo('boot-2'),
    conditions: [{ type: 'Ready', status: bad.has(name) ? 'False' : 'True' }],
  };
  server.update('nodes', n);
  required.delete(name);
}

/** The agent of `name` (one per node for the whole test: it keeps its soak in memory). */
function agent(name: string, c: Partial<Config>): Agent {
  let a = agents.get(name);
  if (a !== undefined) return a;
  const config = testConfig({
    nodeId: name,
    periodMs: 60 * MINUTE,
    coordinator: false,
    blockOnPdb: false,
    ...c,
  });
  const deps = createAgentDeps(config, {
    kube: new ClientNodeKube(server.kubeConfig()),
    clock,
    logger: new MemoryLogger(),
    sentinel: { rebootRequired: () => Promise.resolve({ required: required.has(name) }) },
    rebooter: {
      reboot: () => {
        reboot(name);
        return Promise.resolve();
      },
    },
  });
  a = new Agent(config, deps);
  agents.set(name, a);
  return a;
}

/** Every agent's start-up pass (the need recorded: each joins the wave), then one pass of `name`. */
async function startAll(c: Partial<Config>, names: readonly string[]): Promise<void> {
  for (const name of names) expect((await agent(name, c).startUp()).kind).toBe('pending');
}

function tick(name: string, c: Partial<Config>): Promise<Outcome> {
  return agent(name, c).tick();
}

describe('a failure budget that halts', () => {
  const budget: Partial<Config> = {
    concurrency: { count: 2 },
    maxFailures: { count: 1 },
    postRebootTimeoutMs: 5 * MINUTE,
  };

  it('a node not back in time halts the wave: a pause by kured-ts names it, an Event says why, the others stop before their slot', async () => {
    nodes(['n1'], ['n2'], ['n3']);
    bad.add('n1');
    await startAll(budget, ['n1', 'n2', 'n3']);
    const wave = labels('n1')[WAVE_LABEL];
    expect(wave).toMatch(/^w\d{8}-\d{6}-[0-9a-f]{6}$/);
    // one wave for all: those that recorded their need after the first joined it
    expect([labels('n2')[WAVE_LABEL], labels('n3')[WAVE_LABEL]]).toEqual([wave, wave]);

    expect((await tick('n1', budget)).kind).toBe('rebooting');
    expect((await tick('n1', budget)).kind).toBe('verifying');
    clock.offsetMs = 6 * MINUTE;
    expect((await tick('n1', budget)).kind).toBe('holding');

    expect(labels('n1')[WAVE_STATE_LABEL]).toBe('failed');
    const halt = parseFleetPause(daemonSet().metadata?.annotations?.[FLEET_PAUSE_ANNOTATION]);
    expect(halt).toMatchObject({ by: HALT_BY, wave, failed: ['n1'] });
    expect(halt?.reason).toContain('n1 failed');
    const events = server.list<CoreV1Event>('events', 'default').filter((e) => e.reason === 'WaveHalted');
    expect(events.map((e) => e.message)).toEqual([expect.stringContaining('not ready 5m after the reboot')]);

    const held = await tick('n2', budget);
    expect(held).toMatchObject({ kind: 'blocked', blocker: 'max-failures' });
    expect(held.reason).toContain('n1 failed');
    expect(holders()).toEqual(['n1']); // the failed node keeps its slot (hold)
  });

  it('a node that took its slot but has not drained when the wave halts gives it back and its cordon', async () => {
    nodes(['n1'], ['n2']);
    await startAll(budget, ['n1', 'n2']);
    const wave = labels('n1')[WAVE_LABEL] ?? '';
    // the halt lands right after n2's slot is written, before its drain
    const stop = server.onWrite((e) => {
      if (e.resource !== 'daemonsets') return;
      const ds = e.object as V1DaemonSet;
      const annotations = ds.metadata?.annotations ?? {};
      if (annotations[FLEET_PAUSE_ANNOTATION] !== undefined || !(annotations[LOCK] ?? '').includes('"n2"'))
        return;
      const reason = `wave ${wave} halted by its failure budget (--max-failures 1): n9 failed; kured-ts resume continues it`;
      // eslint-disable-next-line no-restricted-syntax -- real time: the agents under test run on the system clock (SteeredClock)
      const pause = { reason, by: HALT_BY, since: new Date().toISOString(), wave, failed: ['n9'] };
      queueMicrotask(() => {
        const now = daemonSet();
        now.metadata = {
          ...now.metadata,
          annotations: { ...now.metadata?.annotations, [FLEET_PAUSE_ANNOTATION]: JSON.stringify(pause) },
        };
        server.update('daemonsets', now);
      });
    });
    const outcome = await tick('n2', budget);
    stop();
    expect(outcome.kind).toBe('aborted');
    expect(outcome.reason).toContain('the wave halted before the drain');
    expect(holders()).toEqual([]);
    expect(node('n2').spec?.unschedulable).toBeUndefined();
    expect(labels('n2')[WAVE_STATE_LABEL]).toBe('waiting');
  });

  it('kured-ts resume lifts the halt and acknowledges its failures: the wave goes on, the next failure halts it again', async () => {
    nodes(['n1'], ['n2'], ['n3']);
    bad.add('n1');
    await startAll(budget, ['n1', 'n2', 'n3']);
    await tick('n1', budget);
    await tick('n1', budget);
    clock.offsetMs = 6 * MINUTE;
    expect((await tick('n1', budget)).kind).toBe('holding');
    expect((await tick('n2', budget)).kind).toBe('blocked');

    const out: string[] = [];
    const kube = new ClientNodeKube(server.kubeConfig());
    const code = await runResume(
      { dsNamespace: NS, dsName: DS, by: 'alice' },
      { kube, out: (l) => out.push(l), clock },
    );
    expect(code).toBe(0);
    expect(daemonSet().metadata?.annotations?.[FLEET_PAUSE_ANNOTATION]).toBeUndefined();
    const resumed = parseWaveResume(daemonSet().metadata?.annotations?.[WAVE_RESUMED_ANNOTATION]);
    expect(resumed).toMatchObject({ wave: labels('n1')[WAVE_LABEL], nodes: ['n1'], by: 'alice' });
    expect(out.join('\n')).toContain('no longer count against --max-failures');

    // n1 still failed and holding its slot, but acknowledged: n2 takes the other slot
    expect((await tick('n2', budget)).kind).toBe('rebooting');
    expect(holders().sort()).toEqual(['n1', 'n2']);
    bad.add('n3');
    expect((await tick('n2', budget)).kind).toBe('completed');
    expect((await tick('n3', budget)).kind).toBe('rebooting');
    expect((await tick('n3', budget)).kind).toBe('verifying');
    clock.offsetMs = 12 * MINUTE;
    expect((await tick('n3', budget)).kind).toBe('holding');
    const halt = parseFleetPause(daemonSet().metadata?.annotations?.[FLEET_PAUSE_ANNOTATION]);
    expect(halt?.failed).toEqual(['n3']);
  });
});

describe('health checks after the reboot', () => {
  it('a check still false --health-check-timeout after the reboot is a failure of the wave, and halts it', async () => {
    nodes(['n1'], ['n2']);
    const ds = daemonSet();
    ds.metadata = { ...ds.metadata, annotations: { 'example.com/healthy': 'true' } };
    server.update('daemonsets', ds);
    const c: Partial<Config> = {
      concurrency: { count: 2 },
      maxFailures: { count: 1 },
      healthChecks: [
        healthCheck(
          `apps/v1/daemonsets ${NS}/${DS}: self.metadata.annotations['example.com/healthy'] == 'true'`,
        ),
      ],
      healthCheckTimeoutMs: 5 * MINUTE,
    };
    await startAll(c, ['n1', 'n2']);
    expect((await tick('n1', c)).kind).toBe('rebooting');
    // the reboot broke what the check looks at
    const now = daemonSet();
    now.metadata = {
      ...now.metadata,
      annotations: { ...now.metadata?.annotations, 'example.com/healthy': 'false' },
    };
    server.update('daemonsets', now);
    expect((await tick('n1', c)).kind).toBe('completed');
    expect(labels('n1')[WAVE_STATE_LABEL]).toBe('back');
    await tick('n1', c);
    expect(labels('n1')[WAVE_STATE_LABEL]).toBe('back'); // within the timeout: not yet
    clock.offsetMs = 6 * MINUTE;
    await tick('n1', c);
    expect(labels('n1')[WAVE_STATE_LABEL]).toBe('failed');
    expect(parseFleetPause(daemonSet().metadata?.annotations?.[FLEET_PAUSE_ANNOTATION])?.failed).toEqual([
      'n1',
    ]);
    // and before a slot the same check holds the others back, naming it
    const held = await tick('n2', c);
    expect(held.kind).toBe('blocked');
  });

  it('a check that turns true within the timeout lets the node soak and count as settled', async () => {
    nodes(['n1']);
    const c: Partial<Config> = {
      healthChecks: [
        healthCheck(
          `core/v1/nodes n1: self.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')`,
        ),
      ],
    };
    await startAll(c, ['n1']);
    expect((await tick('n1', c)).kind).toBe('rebooting');
    expect((await tick('n1', c)).kind).toBe('completed');
    await tick('n1', c);
    expect(labels('n1')[WAVE_STATE_LABEL]).toBe('soaked');
  });
});

describe('with no coordinator', () => {
  it('slow start holds: the first node of the wave goes alone, the next step only once it has soaked', async () => {
    const c: Partial<Config> = {
      concurrency: { count: 3 },
      waveStart: 1,
      waveGrowth: { kind: 'double' },
      soakMs: 10 * MINUTE,
    };
    nodes(['n1'], ['n2'], ['n3'], ['n4']);
    await startAll(c, ['n1', 'n2', 'n3', 'n4']);
    expect((await tick('n1', c)).kind).toBe('rebooting');
    const refused = await tick('n2', c);
    expect(refused).toMatchObject({ kind: 'waiting-for-lock', gate: 'slow-start' });
    expect(refused.reason).toContain('1 node(s) of wave');
    expect((await tick('n1', c)).kind).toBe('completed');
    expect(labels('n1')[WAVE_STATE_LABEL]).toBe('back');
    // back but not soaked: the next step waits (slots are free)
    expect(await tick('n2', c)).toMatchObject({ kind: 'waiting-for-lock', gate: 'slow-start' });
    clock.offsetMs = 9 * MINUTE;
    await tick('n1', c);
    expect(labels('n1')[WAVE_STATE_LABEL]).toBe('back');
    clock.offsetMs = 11 * MINUTE;
    await tick('n1', c);
    expect(labels('n1')[WAVE_STATE_LABEL]).toBe('soaked');
    // step 2: two nodes, and not a third
    expect((await tick('n2', c)).kind).toBe('rebooting');
    expect((await tick('n3', c)).kind).toBe('rebooting');
    expect(await tick('n4', c)).toMatchObject({ kind: 'waiting-for-lock', gate: 'slow-start' });
    expect(holders().sort()).toEqual(['n2', 'n3']);
  });

  it('one zone at a time: a node of a later zone waits while one of an earlier zone waits or reboots', async () => {
    const c: Partial<Config> = {
      concurrency: { count: 3 },
      groupLabel: 'zone',
      groupOrder: { kind: 'sequential', order: [] },
    };
    nodes(['a1', { zone: 'a' }], ['b1', { zone: 'b' }], ['x1']);
    await startAll(c, ['b1', 'a1', 'x1']);
    const first = await tick('b1', c);
    expect(first).toMatchObject({ kind: 'waiting-for-lock', gate: 'group-order' });
    expect(first.reason).toContain('group a goes first (a1 waits)');
    expect(await tick('x1', c)).toMatchObject({ kind: 'waiting-for-lock', gate: 'group-order' });
    expect((await tick('a1', c)).kind).toBe('rebooting');
    clock.offsetMs += 11_000; // a refused node looks again within a minute: past the census' 10 s reuse
    const busy = await tick('b1', c);
    expect(busy).toMatchObject({ kind: 'waiting-for-lock', gate: 'group-order' });
    expect(busy.reason).toContain('a1 of another group not done yet');
    expect((await tick('a1', c)).kind).toBe('completed');
    clock.offsetMs += 11_000;
    expect((await tick('b1', c)).kind).toBe('rebooting');
    // the nodes without the label go last: after zone b
    expect(await tick('x1', c)).toMatchObject({ kind: 'waiting-for-lock', gate: 'group-order' });
  });
});

describe("a third party writing the wave's records (fail safe: at worst the wave halts)", () => {
  const c: Partial<Config> = {
    concurrency: { count: 3 },
    waveStart: 1,
    waveGrowth: { kind: 'double' },
    soakMs: 10 * MINUTE,
    maxFailures: { count: 1 },
  };

  /** `labels` written on node `name` by someone else (an admin, a stolen token of that node). */
  function relabel(name: string, extra: Record<string, string>): void {
    const n = node(name);
    server.update<V1Node>('nodes', {
      ...n,
      metadata: { ...n.metadata, labels: { ...n.metadata?.labels, ...extra } },
    });
  }

  function annotateDaemonSet(extra: Record<string, string>): void {
    const ds = daemonSet();
    server.update<V1DaemonSet>('daemonsets', {
      ...ds,
      metadata: { ...ds.metadata, annotations: { ...ds.metadata?.annotations, ...extra } },
    });
  }

  it('a node said soaked while it is not Ready opens no next step', async () => {
    nodes(['n1'], ['n2']);
    bad.add('n1');
    await startAll(c, ['n1', 'n2']);
    expect((await tick('n1', c)).kind).toBe('rebooting');
    relabel('n1', { [WAVE_STATE_LABEL]: 'soaked' });
    expect(await tick('n2', c)).toMatchObject({ kind: 'waiting-for-lock', gate: 'slow-start' });
    expect(holders()).toEqual(['n1']);
  });

  it('a node of the wave said failed by someone else spends the budget: the wave halts', async () => {
    nodes(['n1'], ['n2']);
    await startAll(c, ['n1', 'n2']);
    relabel('n2', { [WAVE_STATE_LABEL]: 'failed' });
    const refused = await tick('n1', c);
    expect(refused).toMatchObject({ kind: 'waiting-for-lock', gate: 'max-failures' });
    expect(refused.reason).toContain('n2');
    expect(holders()).toEqual([]);
  });

  it('labels of no wave id and of another word count for nothing, neither as gone nor as settled', async () => {
    nodes(['n1'], ['n2'], ['x1']);
    required.delete('x1');
    await startAll(c, ['n1', 'n2']);
    const wave = labels('n1')[WAVE_LABEL] ?? '';
    // x1 never went: calling it soaked under a forged id or with a bent word lets nobody past the first step
    relabel('x1', { [WAVE_LABEL]: `${wave}x`, [WAVE_STATE_LABEL]: 'soaked' });
    expect((await tick('n1', c)).kind).toBe('rebooting');
    relabel('x1', { [WAVE_LABEL]: wave, [WAVE_STATE_LABEL]: 'Soaked' });
    expect(await tick('n2', c)).toMatchObject({ kind: 'waiting-for-lock', gate: 'slow-start' });
  });

  it('a halt forged as not JSON still pauses every node, and no agent writes over it', async () => {
    nodes(['n1'], ['n2']);
    await startAll(c, ['n1', 'n2']);
    const forged = `by ${HALT_BY}: ${'x'.repeat(100_000)}`;
    annotateDaemonSet({ [FLEET_PAUSE_ANNOTATION]: forged });
    const held = await tick('n1', c);
    expect(held).toMatchObject({ kind: 'blocked' });
    expect(held.reason.length).toBeLessThan(1_000);
    expect(daemonSet().metadata?.annotations?.[FLEET_PAUSE_ANNOTATION]).toBe(forged);
    expect(holders()).toEqual([]);
  });

  it('a DaemonSet claiming more nodes than any cluster has leaves --max-failures 10% a budget of 1', async () => {
    const share: Partial<Config> = { ...c, maxFailures: { percent: 10 } };
    nodes(['n1'], ['n2']);
    const ds = daemonSet();
    server.update<V1DaemonSet>('daemonsets', {
      ...ds,
      status: {
        desiredNumberScheduled: 2_147_483_647,
        currentNumberScheduled: 2,
        numberMisscheduled: 0,
        numberReady: 2,
      },
    });
    await startAll(share, ['n1', 'n2']);
    relabel('n2', { [WAVE_STATE_LABEL]: 'failed' });
    const refused = await tick('n1', share);
    expect(refused).toMatchObject({ kind: 'waiting-for-lock', gate: 'max-failures' });
    expect(refused.reason).toContain('--max-failures 1');
  });
});
