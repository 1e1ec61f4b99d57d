// DESIGN §10: the safety invariants in a hostile cluster, through the real client against the fake
// API server. Each scenario is one the issue reproduced on the previous version; the watcher below
// checks the invariants on every accepted write, not only at the end.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { WAIT_FOR_MS, waitFor, realDelay } from '../../fakes/wait-for.js';
import {
  connect,
  createServer as createTcpServer,
  type AddressInfo,
  type Server,
  type Socket,
} from 'node:net';
import { Agent, type Outcome } from '../../../src/agent/agent.js';
import { createAgentDeps } from '../../../src/agent/create-agent.js';
import { SystemClock, type Clock } from '../../../src/clock/clock.js';
import { FakeClock } from '../../fakes/fake-clock.js';
import type { Config } from '../../../src/config/config.js';
import { ClientNodeKube, connectKube } from '../../../src/kube/client.js';
import type { Kube, V1DaemonSet, V1Node, V1Pod, V1PodDisruptionBudget } from '../../../src/kube/kube.js';
import { entriesOf, parseLockAnnotation } from '../../../src/lock/kured-lock-format.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { KubeDrainer, MAX_EVICTION_ERRORS } from '../../../src/drain/kube-drainer.js';
import { parseLabelSelector } from '../../../src/selector/label-selector.js';
import { seededRandom } from '../../../src/sim/random.js';
import { NODE_PAUSE_ANNOTATION } from '../../../src/node/node.js';
import { CYCLE_ANNOTATION, CYCLE_LABEL, parseCycle } from '../../../src/node/cycle.js';
import { STATUS_ANNOTATION, parseStatus } from '../../../src/node/status.js';
import { type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { testConfig } from '../../fakes/config.js';
import { RecordingMetrics } from '../../fakes/fake-cluster.js';
import { kuredDaemonSet, nodeInfo, readyNode, webPod } from '../../fakes/kube-objects.js';
import { storedNode } from '../../fakes/cluster-reads.js';

const NS = 'kube-system';
const DS = 'kured';
const LOCK = 'weave.works/kured-node-lock';
const TAINT = 'weave.works/kured-node-reboot';
const NODES = ['n1', 'n2', 'n3'];

let server: FakeApiServer;
/** Per node: does its host need a reboot? */
const required = new Map<string, boolean>();
/** Reboot requests that reached each host. */
const reboots = new Map<string, number>();
let violations: string[];
let unwatch: () => void;
const kubes: ClientNodeKube[] = [];

function config(nodeId: string, overrides: Partial<Config> = {}): Config {
  return testConfig({
    nodeId,
    periodMs: 60_000,
    drainTimeoutMs: 5000,
    preferNoScheduleTaint: TAINT,
    postRebootTimeoutMs: 60_000,
    blockOnPdb: false,
    ...overrides,
  });
}

function node(name: string): V1Node {
  return storedNode(server, name);
}

function holders(): string[] {
  const text = server.get<V1DaemonSet>('daemonsets', NS, DS)?.metadata?.annotations?.[LOCK];
  return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID);
}

function ready(n: V1Node): boolean {
  return (n.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** Out of service: cordoned, or not Ready. */
function down(n: V1Node): boolean {
  return n.spec?.unschedulable === true || !ready(n);
}

/** Watches every accepted write for DESIGN §2 and the readiness gate, at concurrency `c`. */
function watchInvariants(c: number): void {
  const previous = new Map<string, V1Node>();
  unwatch = server.onWrite((e) => {
    if (e.resource !== 'nodes') return;
    const now = e.object as V1Node;
    const name = now.metadata?.name ?? '';
    const before = previous.get(name);
    previous.set(name, now);
    const out = NODES.filter((n) => down(n === name ? now : node(n)));
    if (out.length > c) violations.push(`more than ${c} down: ${out.join(', ')}`);
    const uncordoned = before?.spec?.unschedulable === true && now.spec?.unschedulable !== true;
    if (uncordoned && !ready(now)) violations.push(`${name} uncordoned while not Ready`);
  });
}

beforeEach(async () => {
  server = await startClusterApiServer();
  violations = [];
  unwatch = () => undefined;
  server.create('daemonsets', kuredDaemonSet());
  for (const name of NODES) {
    required.set(name, true);
    reboots.set(name, 0);
    server.create<V1Node>('nodes', readyNode(name));
    server.create<V1Pod>('pods', webPod(`web-${name}`, name));
  }
});

afterEach(async () => {
  unwatch();
  for (const k of kubes.splice(0)) k.close();
  await server.close();
});

/** The host of `name` reboots at once into the next boot, NotReady until `bringUp`. */
function rebootHost(name: string): void {
  reboots.set(name, (reboots.get(name) ?? 0) + 1);
  const n = node(name);
  const boot = Number((n.status?.nodeInfo?.bootID ?? 'boot-1').split('-')[1]) + 1;
  n.status = {
    ...n.status,
    nodeInfo: nodeInfo(`boot-${boot}`),
    conditions: [{ type: 'Ready', status: 'False' }],
  };
  server.update('nodes', n);
  required.set(name, false);
}

function bringUp(name: string): void {
  const n = node(name);
  n.status = { ...n.status, conditions: [{ type: 'Ready', status: 'True' }] };
  server.update('nodes', n);
}

/** A fresh agent process for `name` (a pod start), over its own client. */
function agent(
  name: string,
  overrides: Partial<Config> = {},
  o: { kube?: Kube; drainerEveryMs?: number; random?: () => number; clock?: Clock } = {},
): Agent {
  const c = config(name, overrides);
  const kube =
    o.kube ??
    ((): Kube => {
      const k = server.kubeInMemory();
      kubes.push(k);
      return k;
    })();
  const clock = o.clock ?? new SystemClock();
  const logger = new MemoryLogger();
  const deps = createAgentDeps(c, {
    kube,
    clock,
    logger,
    metrics: new RecordingMetrics(),
    ...(o.random === undefined ? {} : { random: o.random }),
    sentinel: { rebootRequired: () => Promise.resolve({ required: required.get(name) ?? false }) },
    rebooter: {
      reboot: () => {
        rebootHost(name);
        return Promise.resolve();
      },
    },
  });
  if (o.drainerEveryMs !== undefined) {
    deps.drainer = new KubeDrainer({
      kube,
      nodeId: name,
      clock,
      log: logger,
      timeoutMs: c.drainTimeoutMs,
      gracePeriodSeconds: c.drainGracePeriodSeconds,
      podSelector: c.drainPodSelector,
      skipWaitForDeleteTimeoutSeconds: c.skipWaitForDeleteTimeoutSeconds,
      evictionRetryDelayMs: c.evictionRetryDelayMs,
      keepGoingEveryMs: o.drainerEveryMs,
    });
  }
  return new Agent(c, deps);
}

function deleteLock(): void {
  const ds = server.get<V1DaemonSet>('daemonsets', NS, DS)!;
  const annotations = Object.fromEntries(
    Object.entries(ds.metadata?.annotations ?? {}).filter(([key]) => key !== LOCK),
  );
  ds.metadata = { ...ds.metadata, annotations };
  server.update('daemonsets', ds);
}

function writeLock(text: string): void {
  const ds = server.get<V1DaemonSet>('daemonsets', NS, DS)!;
  ds.metadata = { ...ds.metadata, annotations: { ...ds.metadata?.annotations, [LOCK]: text } };
  server.update('daemonsets', ds);
}

/** The agents' clock from the server's now on: the fake API server stamps its objects in real time. */
function serversNow(): FakeClock {
  // eslint-disable-next-line no-restricted-syntax -- real time: the fake API server's timestamps
  return new FakeClock(new Date());
}

describe('a lock slot lost in the middle of a cycle', () => {
  it('keeps a node cordoned until its readiness gate passes when the lock is deleted while it is down, and lets no other node start', async () => {
    watchInvariants(1);
    expect((await agent('n1').tick()).kind).toBe('rebooting'); // n1 is down (NotReady, new boot)
    deleteLock(); // a third party wipes the lock
    const n2 = await agent('n2').tick();
    expect(n2).toMatchObject({ kind: 'waiting-for-lock', holders: ['n1'] });
    expect(n2.reason).toContain('n1 is in a reboot cycle without a slot in the lock');
    const back = await agent('n1').tick(); // n1's agent starts after the boot: not Ready yet
    expect(back.kind).toBe('verifying');
    expect(node('n1').spec?.unschedulable).toBe(true);
    expect(holders()).toEqual(['n1']);
    bringUp('n1');
    expect(await agent('n1').tick()).toMatchObject({ kind: 'completed', uncordoned: true });
    expect(holders()).toEqual([]);
    expect((await agent('n2').tick()).kind).toBe('rebooting');
    expect(violations).toEqual([]);
  });

  it('keeps a node out of service without its slot while another holds it, and finishes once Ready', async () => {
    watchInvariants(2); // an operator's manual lock takes the place while n1 is down
    expect((await agent('n1').tick()).kind).toBe('rebooting');
    writeLock('{"nodeID":"manual"}');
    const lost = await agent('n1').tick();
    expect(lost.kind).toBe('lock-lost');
    expect(lost.reason).toContain('manual lock');
    expect(node('n1').spec?.unschedulable).toBe(true);
    bringUp('n1');
    expect(await agent('n1').tick()).toMatchObject({ kind: 'completed', uncordoned: true });
    expect(node('n1').metadata?.labels?.[CYCLE_LABEL]).toBeUndefined();
    expect(holders()).toEqual(['manual']);
    expect(violations).toEqual([]);
  });

  it('renews its slot while it drains longer than --lock-ttl, so a waiting node never takes it', async () => {
    watchInvariants(1);
    const ttl = { lockTtlMs: 600 };
    const waiter = agent('n2', ttl);
    const controller = new AbortController();
    // n1 waits a --reboot-delay of three TTLs with the lock; n2 watches the lock all along
    // (random 0: the first lock attempt comes at once after start-up)
    const running = agent('n1', { ...ttl, rebootDelayMs: 1_800 }, { random: () => 0 }).run(controller.signal);
    try {
      await waitFor(() => holders().includes('n1'), 'n1 holds the lock');
      // n2 asks again and again until n1 has rebooted: every answer is "wait", however slow the
      // machine makes the ticks
      const kinds = new Set<string>();
      let ticks = 0;
      // eslint-disable-next-line no-restricted-syntax -- real time: n1's agent runs on the system clock
      const deadline = Date.now() + WAIT_FOR_MS;
      // eslint-disable-next-line no-restricted-syntax -- real time: as above
      while ((reboots.get('n1') ?? 0) === 0 && Date.now() < deadline) {
        kinds.add((await waiter.tick()).kind);
        ticks++;
        await realDelay(100); // n1 runs in real time: pace the waiter's ticks until n1 has rebooted (a positive end)
      }
      expect(reboots.get('n1')).toBe(1);
      expect(kinds).toEqual(new Set(['waiting-for-lock']));
      expect(ticks).toBeGreaterThan(1);
    } finally {
      controller.abort();
      await running;
    }
    expect(node('n2').spec?.unschedulable).toBeUndefined();
    expect(violations).toEqual([]);
  }, 15_000);

  it('lets the TTL lapse while a node is down: the node keeps counting, and takes its slot back on return', async () => {
    watchInvariants(1);
    const ttl = { lockTtlMs: 400 };
    // the agents' time, from the server's now on (the fake API server stamps its objects in real time)
    const clock = serversNow();
    const waiter = agent('n2', ttl, { clock }); // one process, watching from before the lapse
    expect((await agent('n1', ttl, { clock }).tick()).kind).toBe('rebooting');
    expect((await waiter.tick()).kind).toBe('waiting-for-lock');
    await clock.advance(600); // n1's slot has gone unrenewed for more than the TTL
    const blocked = await waiter.tick();
    expect(blocked).toMatchObject({ kind: 'waiting-for-lock', holders: ['n1'] });
    const back = await agent('n1', ttl, { clock }).tick();
    expect(back.kind).toBe('verifying');
    expect(holders()).toEqual(['n1']);
    bringUp('n1');
    expect((await agent('n1', ttl, { clock }).tick()).kind).toBe('completed');
    expect(violations).toEqual([]);
  });

  it('stops its drain when its slot is taken by another mid-drain, undoes its cordon and gives up the cycle', async () => {
    watchInvariants(1);
    // web-n1 cannot be evicted (its PDB allows 0): the drain retries until it is told to stop
    server.create<V1PodDisruptionBudget>('poddisruptionbudgets', {
      metadata: { name: 'web', namespace: 'default' },
      spec: { minAvailable: '100%', selector: { matchLabels: { app: 'web' } } },
    });
    const ticking = agent('n1', { drainTimeoutMs: 0 }, { drainerEveryMs: 100 }).tick();
    await waitFor(() => node('n1').spec?.unschedulable === true, 'n1 is cordoned');
    writeLock('{"nodeID":"manual"}');
    const outcome = await ticking;
    expect(outcome.kind).toBe('aborted');
    expect(outcome.reason).toContain('manual lock');
    expect(node('n1').spec?.unschedulable).toBeUndefined();
    expect(node('n1').metadata?.annotations?.[CYCLE_ANNOTATION]).toBeUndefined();
    expect(reboots.get('n1')).toBe(0);
    expect(violations).toEqual([]);
  });

  it('takes its slot back mid-drain when the lock is wiped and nobody else can take it, and carries on', async () => {
    watchInvariants(1);
    let wiped = false;
    const unsubscribe = server.onWrite((e) => {
      const p = e.object as V1Pod;
      if (
        !wiped &&
        e.resource === 'pods' &&
        p.metadata?.deletionTimestamp === undefined &&
        e.type === 'DELETED'
      ) {
        wiped = true;
        queueMicrotask(deleteLock); // right after the first eviction
      }
    });
    try {
      const outcome = await agent('n1', {}, { drainerEveryMs: 0 }).tick();
      expect(wiped).toBe(true);
      expect(outcome.kind).toBe('rebooting');
      expect(holders()).toEqual(['n1']);
    } finally {
      unsubscribe();
    }
    expect(violations).toEqual([]);
  });
});

describe('an undrainable pod', () => {
  function twoPdbs(): void {
    for (const name of ['web-a', 'web-b']) {
      server.create<V1PodDisruptionBudget>('poddisruptionbudgets', {
        metadata: { name, namespace: 'default' },
        spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'web' } } },
      });
    }
  }

  it('fails the drain at once when a pod is covered by two PodDisruptionBudgets, naming the pod and the answer', async () => {
    twoPdbs();
    const outcome = await agent('n1', { drainTimeoutMs: 0 }).tick();
    expect(outcome.kind).toBe('quarantined');
    expect(outcome.reason).toContain('default/web-n1');
    expect(outcome.reason).toContain('more than one PodDisruptionBudget');
    // At once: the eviction is asked the bounded number of times, each answered 500, and no more (with no drain timeout, retrying an answer that cannot change
    // would go on for ever).
    const evictions = server.requests.filter(
      (r) => r.method === 'POST' && r.path.endsWith('/web-n1/eviction'),
    );
    expect(evictions.map((r) => r.status)).toEqual(Array<number>(MAX_EVICTION_ERRORS).fill(500));
    expect(node('n1').spec?.unschedulable).toBeUndefined();
    expect(holders()).toEqual([]);
  });

  it('is caught by the PDB pre-flight, which names both budgets and takes no slot', async () => {
    twoPdbs();
    const outcome = await agent('n1', { blockOnPdb: true }).tick();
    expect(outcome).toMatchObject({ kind: 'blocked', blocker: 'pdb' });
    expect(outcome.reason).toContain('default/web-a, default/web-b');
    expect(holders()).toEqual([]);
  });
});

describe('an API server that accepts connections and never answers', () => {
  let proxy: Server;
  let hang = false;
  const sockets = new Set<Socket>();

  beforeEach(async () => {
    const target = new URL(server.url);
    proxy = createTcpServer((client) => {
      sockets.add(client);
      client.on('close', () => sockets.delete(client));
      if (hang) return; // accepted, and then nothing
      const upstream = connect(Number(target.port), target.hostname);
      client.pipe(upstream).pipe(client);
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  });

  afterEach(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => proxy.close(r));
    hang = false;
  });

  it('fails the tick within the request deadline, then goes on once the server answers again', async () => {
    const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    hang = true;
    const kube = connectKube({ url, deadlineMs: 300 });
    kubes.push(kube);
    const failed = await agent('n1', {}, { kube }).tick();
    expect(failed.kind).toBe('error');
    expect(failed.reason).toContain('no complete answer within 300 ms');
    // The tick gave up: no request of it is still waiting on the hung server.
    expect(server.requests).toHaveLength(0);
    kube.close(); // the hung connections go; new ones reach the server
    hang = false;
    expect((await agent('n1', {}, { kube }).tick()).kind).toBe('rebooting');
  });
});

describe('an API server that answers a fifth of the reads 429 or 500', () => {
  it('completes a rolling reboot of three nodes with no failed tick and the invariants held', async () => {
    watchInvariants(1);
    server.chaos({ fraction: 0.2, statuses: [429, 500], method: 'GET', random: seededRandom(7) });
    const outcomes: Outcome[] = [];
    for (const name of NODES) {
      outcomes.push(await agent(name).tick()); // drains and reboots
      bringUp(name);
      outcomes.push(await agent(name).tick()); // proves the reboot, uncordons, releases
    }
    server.chaos(undefined);
    expect(outcomes.map((o) => o.kind)).toEqual(NODES.flatMap(() => ['rebooting', 'completed']));
    expect(server.requests.filter((r) => r.status === 429 || r.status === 500).length).toBeGreaterThan(3);
    expect(violations).toEqual([]);
  }, 60_000);
});

describe('a kubelet writing the Node between the re-verify and the count of the reboot attempt', () => {
  /** An agent over a client that lets a "kubelet" write n1's status just before each of the first `n` counting writes. */
  function racedAgent(n: number): { agent: Agent; raced: () => number } {
    let raced = 0;
    const inner = server.kubeInMemory();
    kubes.push(inner);
    const kube = new Proxy(inner, {
      get(target, prop, receiver): unknown {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (prop !== 'mergePatchNode' || typeof value !== 'function') return value;
        return (name: string, patch: object, signal?: AbortSignal) => {
          const counts = JSON.stringify(patch).includes('\\"attempts\\":1');
          if (counts && raced < n) {
            raced++;
            const heartbeat = node(name);
            heartbeat.status = {
              ...heartbeat.status,
              conditions: [{ type: 'Ready', status: 'True', reason: `beat ${raced}` }],
            };
            server.update('nodes', heartbeat);
          }
          return (value as (...a: unknown[]) => Promise<unknown>).call(target, name, patch, signal);
        };
      },
    });
    return { agent: agent('n1', {}, { kube }), raced: () => raced };
  }

  it('verifies again on a fresh read and reboots in the same pass', async () => {
    watchInvariants(1);
    const { agent: a, raced } = racedAgent(1);
    const outcome = await a.tick();
    expect(raced()).toBe(1);
    expect(outcome).toEqual({ kind: 'rebooting', reason: 'reboot attempt 1 of 3 (bootID boot-1)' });
    expect(reboots.get('n1')).toBe(1);
    expect(parseCycle(node('n1').metadata?.annotations?.[CYCLE_ANNOTATION])?.attempts).toBe(1);
    expect(violations).toEqual([]);
  });

  it('ends the pass without a reboot after four, and the next pass reboots once', async () => {
    watchInvariants(1);
    const { agent: a, raced } = racedAgent(4);
    const first = await a.tick();
    expect(raced()).toBe(4);
    expect(first).toMatchObject({
      kind: 'rebooting',
      reason: expect.stringContaining('looking again') as unknown,
    });
    expect(reboots.get('n1')).toBe(0);
    expect(node('n1').spec?.unschedulable).toBe(true); // still cordoned, the slot still held
    expect(holders()).toEqual(['n1']);
    expect((await a.tick()).kind).toBe('rebooting');
    expect(reboots.get('n1')).toBe(1);
    expect(parseCycle(node('n1').metadata?.annotations?.[CYCLE_ANNOTATION])?.attempts).toBe(1);
    expect(violations).toEqual([]);
  });
});

describe('two agents for one node (a DaemonSet rollout with maxSurge)', () => {
  it('a second agent started mid-cycle neither aborts nor leaves a cordon, and the boot is rebooted once', async () => {
    watchInvariants(1);
    const outcomes: Outcome[] = [];
    // the second agent starts right after the first one's cordon lands
    let second: Promise<Outcome> | undefined;
    const unsubscribe = server.onWrite((e) => {
      if (
        second === undefined &&
        e.resource === 'nodes' &&
        (e.object as V1Node).spec?.unschedulable === true
      ) {
        second = agent('n1').startUp();
      }
    });
    try {
      outcomes.push(await agent('n1', { rebootDelayMs: 200 }).tick());
      outcomes.push(await second!);
    } finally {
      unsubscribe();
    }
    expect(outcomes.map((o) => o.kind)).not.toContain('aborted');
    expect(reboots.get('n1')).toBe(1);
    expect(parseCycle(node('n1').metadata?.annotations?.[CYCLE_ANNOTATION])?.attempts).toBe(1);
    bringUp('n1');
    const both = await Promise.all([agent('n1').tick(), agent('n1').tick()]);
    expect(both.map((o) => o.kind)).toContain('completed');
    expect(node('n1').spec?.unschedulable).toBeUndefined();
    expect(node('n1').metadata?.labels?.[CYCLE_LABEL]).toBeUndefined();
    expect(holders()).toEqual([]);
    expect(violations).toEqual([]);
  });
  it('a second agent started as the reboot attempt is counted does not request the same boot again', async () => {
    watchInvariants(1);
    let second: Promise<Outcome> | undefined;
    const unsubscribe = server.onWrite((e) => {
      const annotations = (e.object as V1Node).metadata?.annotations ?? {};
      const counted = parseCycle(annotations[CYCLE_ANNOTATION])?.attempts === 1;
      if (second === undefined && e.resource === 'nodes' && counted) second = agent('n1').startUp();
    });
    try {
      expect((await agent('n1').tick()).kind).toBe('rebooting');
      expect(await second!).toMatchObject({
        kind: 'rebooting',
        reason: expect.stringContaining('waiting for it') as unknown,
      });
    } finally {
      unsubscribe();
    }
    expect(reboots.get('n1')).toBe(1);
    expect(parseCycle(node('n1').metadata?.annotations?.[CYCLE_ANNOTATION])?.attempts).toBe(1);
    expect(violations).toEqual([]);
  });
});

describe('the reboot attempt counted but answered 500 (committed all the same)', () => {
  /** n1's agent over a client where the write counting attempt 1 is committed and answered 500 (then `then`). */
  function ambiguousAgent(then: 'the client retries into a 409' | 'every retry is answered 500'): Agent {
    const kube = server.kubeInMemory();
    kubes.push(kube);
    const ambiguous = new Proxy(kube, {
      get(target, key, receiver) {
        const value: unknown = Reflect.get(target, key, receiver);
        if (key !== 'mergePatchNode' || typeof value !== 'function') return value;
        return (
          name: string,
          patch: { metadata?: { annotations?: Record<string, string> } },
          signal?: AbortSignal,
        ) => {
          const text = patch.metadata?.annotations?.[CYCLE_ANNOTATION];
          if (parseCycle(text)?.attempts === 1) {
            server.injectFailure({ method: 'PATCH', pathIncludes: '/nodes/n1' }, 500, 1, {
              mode: 'commit-then-fail',
            });
            if (then === 'every retry is answered 500')
              server.injectFailure({ method: 'PATCH', pathIncludes: '/nodes/n1' }, 500, 100);
          }
          return (value as Kube['mergePatchNode']).call(target, name, patch, signal);
        };
      },
    });
    return agent('n1', {}, { kube: ambiguous });
  }

  // client-node repeats the guarded PATCH, which meets our own committed write (409): the agent
  // cannot tell from the answers who wrote it, only from what it tried to write
  it('is asked for in the same pass when the retry of the write meets it', async () => {
    watchInvariants(1);
    const first = await ambiguousAgent('the client retries into a 409').tick();
    expect(first).toMatchObject({
      kind: 'rebooting',
      reason: expect.stringContaining('counted by this agent') as unknown,
    });
    expect(reboots.get('n1')).toBe(1);
    expect(parseCycle(node('n1').metadata?.annotations?.[CYCLE_ANNOTATION])?.attempts).toBe(1);
    expect(violations).toEqual([]);
  });

  it("is asked for at the agent's next pass when every retry failed, not waited for as another agent's", async () => {
    watchInvariants(1);
    const n1 = ambiguousAgent('every retry is answered 500');
    const first = await n1.tick();
    expect(first.kind).toBe('error');
    expect(reboots.get('n1')).toBe(0);
    expect(parseCycle(node('n1').metadata?.annotations?.[CYCLE_ANNOTATION])?.attempts).toBe(1);
    server.clearFailures();
    const second = await n1.tick();
    expect(second).toMatchObject({
      kind: 'rebooting',
      reason: expect.stringContaining('counted by this agent') as unknown,
    });
    expect(reboots.get('n1')).toBe(1);
    expect(parseCycle(node('n1').metadata?.annotations?.[CYCLE_ANNOTATION])?.attempts).toBe(1);
    expect(violations).toEqual([]);
  });
});

describe('the node changed during --reboot-delay (the re-verify judges its phase as every pass does)', () => {
  const cases: [string, () => void, { kind: string; reboots: number; holders: string[] }][] = [
    [
      'reboots nothing when an operator removed the cycle label: the node is left to them, the slot released',
      () => {
        const n = node('n1');
        const labels = Object.entries(n.metadata?.labels ?? {}).filter(([k]) => k !== CYCLE_LABEL);
        n.metadata = { ...n.metadata, labels: Object.fromEntries(labels) };
        server.update('nodes', n);
      },
      { kind: 'released', reboots: 0, holders: [] },
    ],
    [
      'asks for no second reboot when the host was rebooted meanwhile: on to its readiness, slot kept',
      () => {
        rebootHost('n1');
      },
      { kind: 'verifying', reboots: 1, holders: ['n1'] },
    ],
  ];

  it("reboots no node uncordoned during the delay when the cordon it began with was someone else's", async () => {
    watchInvariants(1);
    const cordon = (unschedulable: boolean): void => {
      const n = node('n1');
      n.spec = { ...n.spec, unschedulable };
      server.update('nodes', n);
    };
    cordon(true); // an admin's, before the cycle: the record says the cordon is not ours
    const clock = serversNow();
    const ticking = agent('n1', { rebootDelayMs: 60_000 }, { clock }).tick();
    await waitFor(
      () => node('n1').metadata?.labels?.[CYCLE_LABEL] !== undefined && clock.pending > 0,
      'n1 waits out --reboot-delay',
    );
    cordon(false); // the admin uncordons meanwhile
    await clock.advance(60_000);
    const outcome = await ticking;
    expect(outcome.kind).toBe('aborted');
    expect(reboots.get('n1')).toBe(0);
    expect(node('n1').spec?.unschedulable).not.toBe(true);
    expect(holders()).toEqual([]);
    expect(violations).toEqual([]);
  });

  it.each(cases)('%s', async (_name, change, expected) => {
    watchInvariants(1);
    const clock = serversNow();
    const ticking = agent('n1', { rebootDelayMs: 60_000 }, { clock }).tick();
    // the drain done, the agent waits out the delay on its clock
    await waitFor(
      () => node('n1').metadata?.labels?.[CYCLE_LABEL] !== undefined && clock.pending > 0,
      'n1 waits out --reboot-delay',
    );
    change();
    await clock.advance(60_000);
    const outcome = await ticking;
    expect(outcome.kind).toBe(expected.kind);
    expect(reboots.get('n1') ?? 0).toBe(expected.reboots);
    expect(holders()).toEqual(expected.holders);
    expect(violations).toEqual([]);
  });
});

describe('the hold after the drain (--hold-after-drain-annotation, before --reboot-delay)', () => {
  const HOLD = 'example.com/firmware';
  const holdConfig = { holdAfterDrainAnnotations: [HOLD], holdTimeoutMs: 120_000, rebootDelayMs: 0 };

  /** The external worker sets (a value) or removes (undefined) its annotation on n1. */
  function worker(value: string | undefined): void {
    const n = node('n1');
    const others = Object.entries(n.metadata?.annotations ?? {}).filter(([key]) => key !== HOLD);
    const annotations = Object.fromEntries(value === undefined ? others : [...others, [HOLD, value]]);
    n.metadata = { ...n.metadata, annotations };
    server.update('nodes', n);
  }

  const status = (): ReturnType<typeof parseStatus> =>
    parseStatus(node('n1').metadata?.annotations?.[STATUS_ANNOTATION]);

  /** Starts n1's tick on `clock`; `next()` moves the clock past the agent's next look (30 s, its longest wait). */
  function holding(clock: FakeClock, overrides: Partial<Config> = {}, signal?: AbortSignal) {
    let settled = false;
    const ticking = agent('n1', { ...holdConfig, ...overrides }, { clock })
      .tick(signal)
      .finally(() => {
        settled = true;
      });
    const asleep = (what: string): Promise<void> => waitFor(() => settled || clock.pending > 0, what);
    return {
      ticking,
      settled: () => settled,
      held: () => waitFor(() => status()?.phase === 'held-after-drain' && clock.pending > 0, 'n1 is held'),
      next: async (): Promise<void> => {
        await clock.advance(30_000);
        await asleep('n1 looks again or ends its tick');
      },
    };
  }

  it('holds a drained node, cordoned and with its slot, while the hold annotation stands, and reboots once it goes', async () => {
    watchInvariants(1);
    worker('bios-2.1');
    const clock = serversNow();
    const run = holding(clock);
    await run.held();
    for (let look = 0; look < 3; look++) {
      expect(status()).toMatchObject({
        phase: 'held-after-drain',
        reason: expect.stringContaining(`node annotation ${HOLD}=bios-2.1 stands`),
      });
      expect(node('n1').spec?.unschedulable).toBe(true);
      expect(server.list<V1Pod>('pods').filter((p) => p.spec?.nodeName === 'n1')).toEqual([]);
      expect(holders()).toEqual(['n1']);
      expect(reboots.get('n1')).toBe(0);
      expect(run.settled()).toBe(false);
      await run.next();
    }
    worker(undefined);
    await run.next();
    expect((await run.ticking).kind).toBe('rebooting');
    expect(reboots.get('n1')).toBe(1);
    expect(violations).toEqual([]);
  });

  it('holds again when the annotation is removed and set again before the agent looks, naming its new value', async () => {
    worker('bios-2.1');
    const clock = serversNow();
    const run = holding(clock);
    await run.held();
    worker(undefined);
    worker('bios-2.2');
    await run.next();
    expect(status()).toMatchObject({
      phase: 'held-after-drain',
      reason: expect.stringContaining(`node annotation ${HOLD}=bios-2.2 stands`),
    });
    expect(holders()).toEqual(['n1']);
    expect(reboots.get('n1')).toBe(0);
    worker(undefined);
    await run.next();
    expect((await run.ticking).kind).toBe('rebooting');
    expect(reboots.get('n1')).toBe(1);
  });

  it.each([
    ['requeue', 'drain-failed'],
    ['quarantine', 'quarantined'],
  ] as const)(
    'ends the cycle as a failed drain when the hold outlasts --hold-timeout (--on-drain-failure %s: %s)',
    async (onDrainFailure, kind) => {
      watchInvariants(1);
      worker('bios-2.1');
      const clock = serversNow();
      const run = holding(clock, { onDrainFailure });
      await run.held();
      // 120 s of hold, looked at every 5, 10, 20, 30 s at most: ten moves of 30 s are more than enough
      for (let move = 0; move < 10 && !run.settled(); move++) await run.next();
      const outcome = await run.ticking;
      expect(outcome).toMatchObject({
        kind,
        reason: expect.stringContaining(`--hold-timeout 2m: node annotation ${HOLD}=bios-2.1 still stands`),
      });
      expect(reboots.get('n1')).toBe(0);
      expect(node('n1').metadata?.labels?.[CYCLE_LABEL]).toBeUndefined();
      expect(node('n1').metadata?.annotations?.[CYCLE_ANNOTATION]).toBeUndefined();
      expect(node('n1').spec?.unschedulable).not.toBe(true);
      expect(holders()).toEqual([]);
      expect(violations).toEqual([]);
    },
  );

  const requeue = { onDrainFailure: 'requeue' } as const;

  /** n1 held on `clock` for `moves` looks (30 s each), then its agent's pod restarted (SIGTERM). */
  async function heldThenRestarted(clock: FakeClock, moves: number): Promise<void> {
    const shutdown = new AbortController();
    const first = holding(clock, requeue, shutdown.signal);
    await first.held();
    for (let move = 0; move < moves; move++) await first.next();
    expect(first.settled()).toBe(false);
    shutdown.abort(new Error('SIGTERM'));
    await expect(first.ticking).rejects.toThrow('SIGTERM');
    expect(node('n1').spec?.unschedulable).toBe(true);
    expect(holders()).toEqual(['n1']);
  }

  it("goes on counting --hold-timeout from the hold's start when the agent restarts while held", async () => {
    watchInvariants(1);
    worker('bios-2.1');
    const clock = serversNow();
    // 90 s of the 120 s held, then the agent's pod is restarted
    await heldThenRestarted(clock, 3);
    // the new agent resumes the cycle (drain again, a no-op) and is held for what is left: 30 s, not 120 s
    const second = holding(clock, requeue);
    await second.held();
    for (let move = 0; move < 2 && !second.settled(); move++) await second.next();
    expect(second.settled()).toBe(true);
    expect(await second.ticking).toMatchObject({
      kind: 'drain-failed',
      reason: expect.stringContaining(`--hold-timeout 2m: node annotation ${HOLD}=bios-2.1 still stands`),
    });
    expect(reboots.get('n1')).toBe(0);
    expect(node('n1').spec?.unschedulable).not.toBe(true);
    expect(holders()).toEqual([]);
    expect(violations).toEqual([]);
  });

  it('counts the hold from now when the recorded start is ahead of the clock (set back since), bounded all the same', async () => {
    worker('bios-2.1');
    const clock = serversNow();
    await heldThenRestarted(clock, 0);
    // the record says the hold began an hour from now: as if the clock had been set back an hour
    const n = node('n1');
    const record = parseCycle(n.metadata?.annotations?.[CYCLE_ANNOTATION]);
    const ahead = new Date(clock.now().getTime() + 3_600_000).toISOString();
    n.metadata = {
      ...n.metadata,
      annotations: {
        ...n.metadata?.annotations,
        [CYCLE_ANNOTATION]: JSON.stringify({ ...record, heldSince: ahead }),
      },
    };
    server.update('nodes', n);
    const second = holding(clock, requeue);
    await second.held();
    for (let move = 0; move < 6 && !second.settled(); move++) await second.next();
    expect(second.settled()).toBe(true);
    expect(await second.ticking).toMatchObject({ kind: 'drain-failed' });
    expect(reboots.get('n1')).toBe(0);
  });

  it('passes a node quarantined by its hold over while the annotation stands, and takes it again once it goes', async () => {
    watchInvariants(1);
    worker('bios-2.1');
    const clock = serversNow();
    const run = holding(clock, { onDrainFailure: 'quarantine' });
    await run.held();
    for (let move = 0; move < 10 && !run.settled(); move++) await run.next();
    expect((await run.ticking).kind).toBe('quarantined');
    // the annotation stands: no pod of the node can change, so nothing but its going lifts it
    const again = await agent('n1', holdConfig, { clock }).tick();
    expect(again).toMatchObject({ kind: 'blocked', blocker: 'quarantine' });
    expect(again.reason).toContain(`held after the drain past --hold-timeout by ${HOLD}`);
    expect(holders()).toEqual([]);
    worker(undefined);
    const after = await agent('n1', holdConfig, { clock }).tick();
    expect(after.kind).toBe('rebooting');
    expect(reboots.get('n1')).toBe(1);
    expect(violations).toEqual([]);
  });
});

describe("an admin's cordon made during our cycle", () => {
  const asAdmin = async (body: object): Promise<void> => {
    const res = await fetch(`${server.url}/api/v1/nodes/n1?fieldManager=kubectl-cordon`, {
      method: 'PATCH',
      headers: { 'Content-Type': 'application/merge-patch+json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
  };

  it('survives it when made during --drain-delay, before our cordon', async () => {
    let done = false;
    const unsubscribe = server.onWrite((e) => {
      const labels = (e.object as V1Node).metadata?.labels ?? {};
      if (!done && e.resource === 'nodes' && labels.phase === 'pre') {
        done = true;
        void asAdmin({ spec: { unschedulable: true } });
      }
    });
    try {
      const overrides = { drainDelayMs: 200, preRebootNodeLabels: { phase: 'pre' } };
      let outcome = await agent('n1', overrides).tick();
      // a kubelet heartbeat between the read and the guarded count of the reboot attempt makes the
      // agent look again (as its loop would at the next tick) before it requests the reboot
      for (let i = 0; i < 5 && outcome.reason.includes('looking again'); i++)
        outcome = await agent('n1', overrides).tick();
      expect(outcome).toMatchObject({
        kind: 'rebooting',
        reason: expect.stringMatching(/^reboot attempt 1 of/),
      });
    } finally {
      unsubscribe();
    }
    bringUp('n1');
    expect(await agent('n1').tick()).toMatchObject({ kind: 'completed', uncordoned: false });
    expect(node('n1').spec?.unschedulable).toBe(true);
  });

  it('survives it when the admin uncordons and cordons again while the node is verifying', async () => {
    expect((await agent('n1').tick()).kind).toBe('rebooting');
    expect((await agent('n1').tick()).kind).toBe('verifying');
    await asAdmin({ spec: { unschedulable: null } });
    await asAdmin({ spec: { unschedulable: true } });
    bringUp('n1');
    expect(await agent('n1').tick()).toMatchObject({ kind: 'completed', uncordoned: false });
    expect(node('n1').spec?.unschedulable).toBe(true);
  });

  it('survives it when the node is paused (the way to keep a node cordoned that we cordoned)', async () => {
    expect((await agent('n1').tick()).kind).toBe('rebooting');
    const n = node('n1');
    n.metadata = {
      ...n.metadata,
      annotations: { ...n.metadata?.annotations, [NODE_PAUSE_ANNOTATION]: 'true' },
    };
    server.update('nodes', n);
    bringUp('n1');
    expect(await agent('n1').tick()).toMatchObject({ kind: 'completed', uncordoned: false });
    expect(node('n1').spec?.unschedulable).toBe(true);
    expect(holders()).toEqual([]);
  });
});

/** A lock entry as kured or a forger writes it, created now. */
function entry(nodeID: string, created = serversNow().now().toISOString()): object {
  return { nodeID, metadata: { unschedulable: false }, created, TTL: 0 };
}

describe('a forged lock (DESIGN §12: a slot counts only when the cluster proves it)', () => {
  it('lets none of three waiting nodes cordon when the lock names them all beyond its maxOwners', async () => {
    watchInvariants(1);
    writeLock(JSON.stringify({ maxOwners: 1, locks: NODES.map((n) => entry(n)) }));
    const outcomes = await Promise.all(NODES.map((n) => agent(n).tick()));
    for (const o of outcomes) {
      expect(o.kind).toBe('waiting-for-lock');
      expect(o.reason).toContain('more than its maxOwners 1 allows: forged');
    }
    for (const n of NODES) expect(node(n).spec?.unschedulable).toBeUndefined();
    expect(violations).toEqual([]);
  });

  it('lets none cordon when the lock claims more slots than --concurrency, within its own maxOwners', async () => {
    watchInvariants(1);
    writeLock(JSON.stringify({ maxOwners: 3, locks: NODES.map((n) => entry(n)) }));
    const outcomes = await Promise.all(NODES.map((n) => agent(n).tick()));
    expect(outcomes.map((o) => o.kind)).toEqual(['waiting-for-lock', 'waiting-for-lock', 'waiting-for-lock']);
    expect(outcomes[0]?.reason).toContain('more than --concurrency 1 allows');
    for (const n of reboots.values()) expect(n).toBe(0);
    expect(violations).toEqual([]);
  });

  it('does not let a node named in a rewritten lock start while another node is down in its cycle', async () => {
    watchInvariants(1);
    expect((await agent('n1').tick()).kind).toBe('rebooting'); // n1 is down
    writeLock(JSON.stringify(entry('n2'))); // the lock now names n2 alone
    const n2 = await agent('n2').tick();
    expect(n2.kind).toBe('waiting-for-lock');
    expect(n2.reason).toContain('n1 is in a reboot cycle without a slot');
    expect(node('n2').spec?.unschedulable).toBeUndefined();
    expect(holders()).toEqual([]); // n2's unproven entry went with the refusal
    bringUp('n1');
    expect((await agent('n1').tick()).kind).toBe('completed');
    expect((await agent('n2').tick()).kind).toBe('rebooting');
    expect(violations).toEqual([]);
  });

  it('takes no slot back from the others for a node named in the lock that needs no reboot', async () => {
    watchInvariants(1);
    required.set('n2', false);
    writeLock(JSON.stringify(entry('n2')));
    expect((await agent('n2').tick()).kind).toBe('idle');
    expect(holders()).toEqual([]);
    expect((await agent('n1').tick()).kind).toBe('rebooting');
    expect(violations).toEqual([]);
  });

  it('takes no slot for a node named in the lock while a blocker holds it back, and frees the entry', async () => {
    watchInvariants(1);
    writeLock(JSON.stringify(entry('n2')));
    const blocked = await agent('n2', { blockingPodSelectors: [parseLabelSelector('app=web')] }).tick();
    expect(blocked).toMatchObject({ kind: 'blocked', blocker: 'pods' });
    expect(node('n2').spec?.unschedulable).toBeUndefined();
    expect(holders()).toEqual([]);
    expect((await agent('n1').tick()).kind).toBe('rebooting');
    expect(violations).toEqual([]);
  });

  it("coexists with kured's own multi-slot lock up to its maxOwners", async () => {
    watchInvariants(2);
    server.create<V1Node>('nodes', { ...readyNode('k1'), spec: { unschedulable: true } });
    writeLock(JSON.stringify({ maxOwners: 2, locks: [entry('k1')] })); // kured is rebooting k1
    expect((await agent('n1', { concurrency: { count: 2 } }).tick()).kind).toBe('rebooting');
    expect(holders()).toEqual(['k1', 'n1']);
    expect((await agent('n2', { concurrency: { count: 2 } }).tick()).kind).toBe('waiting-for-lock');
    const lock = JSON.parse(
      server.get<V1DaemonSet>('daemonsets', NS, DS)?.metadata?.annotations?.[LOCK] ?? '{}',
    ) as {
      maxOwners: number;
    };
    expect(lock.maxOwners).toBe(2);
    expect(violations.filter((v) => !v.includes('k1'))).toEqual([]);
  });

  it('resumes after a crash right after a legitimate acquisition, before its cycle began', async () => {
    watchInvariants(1);
    writeLock(JSON.stringify(entry('n1'))); // what n1's agent wrote before it was killed
    expect((await agent('n1').tick()).kind).toBe('rebooting');
    expect(holders()).toEqual(['n1']);
    expect(violations).toEqual([]);
  });
});
