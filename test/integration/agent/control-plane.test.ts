// Control plane last, one at a time, with quorum (issue 33), through the real client against the
// fake API server, with the world misbehaving: etcd losing a member while a control-plane node waits
// out --reboot-delay, a second control-plane agent racing for a slot, kured holding a slot for
// another control-plane node, a worker still waiting. One pass of the real agent each, built as
// `kured-ts agent` builds it; the host "reboots" by a counter.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { kuredDaemonSet, readyNode } from '../../fakes/kube-objects.js';
import { testConfig } from '../../fakes/config.js';
import { Agent, type Outcome } from '../../../src/agent/agent.js';
import { createAgentDeps, createLock, coordinatorOf } from '../../../src/agent/create-agent.js';
import { SystemClock, type Clock } from '../../../src/clock/clock.js';
import type { Config } from '../../../src/config/config.js';
import type { V1DaemonSet, V1Node, V1Pod } from '../../../src/kube/kube.js';
import { entriesOf, parseLockAnnotation } from '../../../src/lock/kured-lock-format.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { CONTROL_PLANE_LABEL } from '../../../src/node/role.js';
import { STATUS_ANNOTATION, formatStatus } from '../../../src/node/status.js';
import type { FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { storedNode } from '../../fakes/cluster-reads.js';

const NS = 'kube-system';
const LOCK = 'weave.works/kured-node-lock';
const CONTROL_PLANE = ['cp1', 'cp2', 'cp3'];
const REBOOT_DELAY_MS = 60_000;

let server: FakeApiServer;
let reboots: number;

function controlPlaneNode(name: string): V1Node {
  const node = readyNode(name, `boot-${name}`);
  return { ...node, metadata: { ...node.metadata, labels: { [CONTROL_PLANE_LABEL]: '' } } };
}

function etcdPod(on: string): V1Pod {
  return {
    metadata: {
      name: `etcd-${on}`,
      namespace: NS,
      labels: { component: 'etcd' },
      annotations: { 'kubernetes.io/config.mirror': 'x' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: on, uid: on, controller: true }],
    },
    spec: { nodeName: on, containers: [{ name: 'etcd', image: 'etcd' }] },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

beforeEach(async () => {
  server = await startClusterApiServer();
  reboots = 0;
  server.create('daemonsets', { ...kuredDaemonSet(), status: { desiredNumberScheduled: 4 } } as V1DaemonSet);
  for (const name of CONTROL_PLANE) {
    server.create<V1Node>('nodes', reported(controlPlaneNode(name)));
    server.create<V1Pod>('pods', etcdPod(name));
  }
  server.create<V1Node>('nodes', reported(readyNode('w1', 'boot-w1')));
});

/** The node's agent has reported (idle: no reboot needed, or none decided on yet). */
function reported(n: V1Node): V1Node {
  const status = formatStatus({
    phase: 'idle',
    reason: 'reboot not required',
    since: '2026-01-05T08:00:00Z',
    bootID: 'b',
  });
  return { ...n, metadata: { ...n.metadata, annotations: { [STATUS_ANNOTATION]: status } } };
}

afterEach(async () => {
  await server.close();
});

function config(node: string, overrides: Partial<Config> = {}): Config {
  return testConfig({ nodeId: node, periodMs: 60_000, drainTimeoutMs: 5000, ...overrides });
}

/** etcd's member on `node` stops being Ready (its static pod's readiness probe fails). */
function etcdDown(node: string): void {
  const pod = server.get<V1Pod>('pods', NS, `etcd-${node}`)!;
  server.update('pods', {
    ...pod,
    status: { ...pod.status, conditions: [{ type: 'Ready', status: 'False' }] },
  });
}

/** One pass of the real agent of `node` on `clock`. */
async function agentPass(c: Config, clock: Clock = new SystemClock()): Promise<Outcome> {
  const deps = createAgentDeps(c, {
    kube: server.kubeInMemory(),
    clock,
    logger: new MemoryLogger(),
    sentinel: { rebootRequired: () => Promise.resolve({ required: true }) },
    rebooter: {
      reboot: () => {
        reboots++;
        return Promise.resolve();
      },
    },
  });
  return new Agent(c, deps).tick(AbortSignal.timeout(10_000));
}

/** The nodes the lock names now. */
function lockHolders(): string[] {
  const text = server.get<V1DaemonSet>('daemonsets', NS, 'kured')?.metadata?.annotations?.[LOCK];
  return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID);
}

function node(name: string): V1Node {
  return storedNode(server, name);
}

/** The lock holds kured's slot for `holder` (kured's multi form: no role, no group recorded). */
function kuredSlot(holder: string, maxOwners: number): void {
  const text = JSON.stringify({
    maxOwners,
    locks: [{ nodeID: holder, metadata: { unschedulable: false }, created: '2026-01-05T09:00:00Z', TTL: 0 }],
  });
  const ds = server.get<V1DaemonSet>('daemonsets', NS, 'kured')!;
  server.update('daemonsets', { ...ds, metadata: { ...ds.metadata, annotations: { [LOCK]: text } } });
}

/** The worker waits for a slot, as its agent's status says. */
function workerWaiting(name: string): void {
  const status = formatStatus({
    phase: 'waiting-for-lock',
    reason: 'all 1 lock slot(s) held',
    since: '2026-01-05T09:00:00Z',
    bootID: `boot-${name}`,
    requiredSince: '2026-01-05T09:00:00Z',
  });
  const n = node(name);
  server.update('nodes', { ...n, metadata: { ...n.metadata, annotations: { [STATUS_ANNOTATION]: status } } });
}

describe('a control-plane node', () => {
  it('about to reboot when etcd loses a member during --reboot-delay does not reboot: it aborts, undoes its cordon and gives its slot back', async () => {
    const real = new SystemClock();
    // the world moves while the agent waits out --reboot-delay (the sleep returns once it has)
    const clock: Clock = {
      now: () => real.now(),
      sleep: (ms, signal) => {
        if (ms !== REBOOT_DELAY_MS) return real.sleep(ms, signal);
        etcdDown('cp2');
        return Promise.resolve();
      },
    };
    const outcome = await agentPass(config('cp1', { rebootDelayMs: REBOOT_DELAY_MS }), clock);
    expect(outcome).toEqual({
      kind: 'aborted',
      reason:
        'control-plane: etcd member etcd-cp2 on cp2 is not Ready: its quorum has no member to spare before the reboot; cycle ended, cordon undone',
    });
    expect(reboots).toBe(0);
    expect(node('cp1').spec?.unschedulable ?? false).toBe(false);
    expect(lockHolders()).toEqual([]);
  });

  it('whose quorum has a member not Ready takes no slot, and the reason names that member', async () => {
    etcdDown('cp3');
    const outcome = await agentPass(config('cp1'));
    expect(outcome).toEqual({
      kind: 'blocked',
      blocker: 'control-plane',
      reason: 'etcd member etcd-cp3 on cp3 is not Ready: its quorum has no member to spare',
    });
    expect(lockHolders()).toEqual([]);
  });

  it('with every member Ready and no worker waiting takes its slot and reboots', async () => {
    const outcome = await agentPass(config('cp1'));
    expect(outcome.kind).toBe('rebooting');
    expect(lockHolders()).toEqual(['cp1']);
    // the request itself may wait for the next pass: the kubelet's heartbeat can move the node
    // under the guarded write that counts the attempt (as in check-parity)
    expect(reboots).toBeLessThanOrEqual(1);
  });

  it('waits while a worker waits for a slot (control plane last), with slots to spare', async () => {
    workerWaiting('w1');
    const outcome = await agentPass(config('cp1', { concurrency: { count: 3 } }));
    expect(outcome).toMatchObject({
      kind: 'waiting-for-lock',
      reason:
        'control plane last: 1 worker(s) still waiting for a reboot or rebooting (w1); --control-plane-last',
    });
    expect(lockHolders()).toEqual([]);
  });

  it('does not take a slot while kured holds one for another control-plane node, which records no role', async () => {
    kuredSlot('cp2', 3);
    const outcome = await agentPass(config('cp1', { concurrency: { count: 3 } }));
    expect(outcome).toMatchObject({
      kind: 'waiting-for-lock',
      reason: 'control plane one at a time: control-plane node cp2 holds a slot or is in its reboot cycle',
    });
    expect(lockHolders()).toEqual(['cp2']);
  });

  it('racing a second control-plane agent for two free slots: exactly one takes a slot', async () => {
    const io = {
      kube: server.kubeInMemory(),
      clock: new SystemClock(),
      logger: new MemoryLogger(),
    };
    const locks = ['cp1', 'cp2'].map((name) => {
      const c = config(name, { concurrency: { count: 3 }, lockQueue: 'none' });
      return createLock(c, io, coordinatorOf(c, io));
    });
    const results = await Promise.all(
      locks.map((l) => l.acquire({ unschedulable: false, controlPlane: true })),
    );
    expect(results.filter((r) => r.acquired)).toHaveLength(1);
    const refused = results.find((r) => !r.acquired);
    expect(refused).toMatchObject({
      reason: expect.stringMatching(/^control plane one at a time: control-plane node cp[12] /),
    });
    expect(lockHolders()).toHaveLength(1);
  });
});
