// The fleet policies over the real seams: an agent (client-node, KubeNodeOps, DaemonSetLock) and the
// operator commands (approve, history, status) as registered with commander, against the fake API
// server. What one writes is what the other reads.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { commandLine } from '../../fakes/command-line.js';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { Agent } from '../../../src/agent/agent.js';
import { createAgentDeps } from '../../../src/agent/create-agent.js';
import { registerApprove } from '../../../src/cli/approve.js';
import { registerHistory, type HistoryRow } from '../../../src/cli/history.js';
import { type StatusReport } from '../../../src/cli/status.js';
import { registerStatus } from '../../../src/cli/status-command.js';
import { SystemClock } from '../../../src/clock/clock.js';
import type { Config } from '../../../src/config/config.js';
import { READ_ATTEMPTS } from '../../../src/kube/client.js';
import type { V1DaemonSet, V1Node } from '../../../src/kube/kube.js';
import { entriesOf, parseLockAnnotation } from '../../../src/lock/kured-lock-format.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { APPROVAL_ANNOTATION } from '../../../src/node/approval.js';
import { HISTORY_ANNOTATION, parseHistory } from '../../../src/node/history.js';
import { type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { testConfig } from '../../fakes/config.js';
import { kuredDaemonSet, nodeInfo, readyNode } from '../../fakes/kube-objects.js';
import { storedNode } from '../../fakes/cluster-reads.js';

const LOCK = 'weave.works/kured-node-lock';

let server: FakeApiServer;
let required: boolean;
let reboots: number;
let out: string[];
let errs: string[];

function addNode(name: string, ready = 'True'): void {
  server.create<V1Node>('nodes', readyNode(name, `boot-${name}-1`, ready));
}

beforeEach(async () => {
  server = await startClusterApiServer();
  required = true;
  reboots = 0;
  out = [];
  errs = [];
  server.create('daemonsets', kuredDaemonSet());
  addNode('n1');
});

afterEach(async () => {
  await server.close();
});

function node(name = 'n1'): V1Node {
  return storedNode(server, name);
}

function holders(): string[] {
  const text = server.get<V1DaemonSet>('daemonsets', 'kube-system', 'kured')?.metadata?.annotations?.[LOCK];
  return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID);
}

function setReady(name: string, status: string): void {
  const n = node(name);
  n.status = { ...n.status, conditions: [{ type: 'Ready', status }] };
  server.update('nodes', n);
}

/** n1's agent; its host reboots into boot-n1-2 with kernel 6.2. */
function agent(overrides: Partial<Config>): Agent {
  const c = testConfig({ periodMs: 60_000, drainTimeoutMs: 5000, postRebootTimeoutMs: 60_000, ...overrides });
  const deps = createAgentDeps(c, {
    kube: server.kubeInMemory(),
    clock: new SystemClock(),
    logger: new MemoryLogger(),
    sentinel: { rebootRequired: () => Promise.resolve({ required }) },
    rebooter: {
      reboot: () => {
        reboots++;
        const n = node();
        const info = nodeInfo('boot-n1-2');
        n.status = { ...n.status, nodeInfo: info && { ...info, kernelVersion: '6.2' } };
        server.update('nodes', n);
        required = false;
        return Promise.resolve();
      },
    },
  });
  return new Agent(c, deps);
}

/** The operator commands, as `kured-ts` registers them, over client-node. */
function operator(): (args: string[]) => Promise<number | undefined> {
  const run = commandLine([registerApprove, registerHistory, registerStatus], {
    env: {},
    out: (l) => out.push(l),
    err: (l) => errs.push(l),
    connect: () => server.kubeInMemory(),
  });
  return (args) => {
    out = [];
    errs = [];
    return run(args);
  };
}

describe('--require-approval with kured-ts approve', () => {
  it('waits without a slot until approved, reboots once, records the kernel change and uses up the approval', async () => {
    const c = { requireApproval: true, historyLimit: 10 };
    const run = operator();
    const waiting = await agent(c).tick();
    expect(waiting).toMatchObject({
      kind: 'awaiting-approval',
      reason: 'waiting for approval: run kured-ts approve n1',
    });
    expect(holders()).toEqual([]);
    expect(node().spec?.unschedulable).toBeFalsy();

    expect(await run(['status'])).toBe(0);
    expect(out[0]).toBe('Awaiting approval: n1 (kured-ts approve NODE..., or --all)');
    expect(await run(['approve', '--all', '--by', 'alice'])).toBe(0);
    expect(out).toEqual([
      expect.stringMatching(/^n1: approved by alice at .*; its agent takes a slot when one is free$/),
    ]);
    expect(JSON.parse(node().metadata?.annotations?.[APPROVAL_ANNOTATION] ?? '{}')).toMatchObject({
      by: 'alice',
    });

    expect((await agent(c).tick()).kind).toBe('rebooting');
    expect(reboots).toBe(1);
    expect((await agent(c).tick()).kind).toBe('completed');
    expect(node().metadata?.annotations?.[APPROVAL_ANNOTATION]).toBeUndefined();
    expect(holders()).toEqual([]);

    const history = parseHistory(node().metadata?.annotations?.[HISTORY_ANNOTATION]);
    expect(history).toEqual([
      expect.objectContaining({
        result: 'success',
        bootIDBefore: 'boot-n1-1',
        bootIDAfter: 'boot-n1-2',
        kernelBefore: '6.1',
        kernelAfter: '6.2',
      }),
    ]);
    expect(await run(['history', 'n1', '-o', 'json'])).toBe(0);
    const rows = (JSON.parse(out.join('\n')) as { records: HistoryRow[] }).records;
    expect(rows.map((r) => [r.node, r.result, r.kernelAfter])).toEqual([['n1', 'success', '6.2']]);
    expect(Object.keys(rows[0]?.durationsSeconds ?? {}).sort()).toEqual(['drain', 'ready', 'reboot', 'wait']);
    expect(await run(['status', 'n1'])).toBe(0);
    expect(out).toContain('Reboot history of n1:');
    expect(out.some((l) => l.startsWith('n1') && l.includes('success') && l.includes('6.1 → 6.2'))).toBe(
      true,
    );
  });

  it('an approval older than --approval-ttl does not count, and approve names a node that does not exist', async () => {
    const run = operator();
    // eslint-disable-next-line no-restricted-syntax -- real time: the agents under test judge ages on the system clock
    const old = new Date(Date.now() - 2 * 3_600_000).toISOString();
    await server.kubeInMemory().mergePatchNode('n1', {
      metadata: { annotations: { [APPROVAL_ANNOTATION]: JSON.stringify({ by: 'bob', at: old }) } },
    });
    const outcome = await agent({ requireApproval: true, approvalTtlMs: 3_600_000 }).tick();
    expect(outcome.kind).toBe('awaiting-approval');
    expect(outcome.reason).toBe(
      `approval by bob at ${old} expired (--approval-ttl); run kured-ts approve n1`,
    );
    expect(holders()).toEqual([]);
    expect(await run(['approve', 'n1', 'ghost', '--by', 'carol'])).toBe(1);
    expect(errs).toEqual(['node ghost not found']);
    expect((await agent({ requireApproval: true, approvalTtlMs: 3_600_000 }).tick()).kind).toBe('rebooting');
  });

  it.each([
    [
      "a fresh approval counts though the server's clock runs 31 minutes behind the node's",
      -31,
      0,
      'rebooting',
    ],
    [
      "an approval 31 minutes old by the server's clock has expired though the server runs 31 minutes ahead",
      31,
      -31,
      'awaiting-approval',
    ],
  ])('judges --approval-ttl on the API server clock: %s', async (_name, offsetMin, ageMin, expected) => {
    await server.close();
    server = await startClusterApiServer({ clockOffsetMs: offsetMin * 60_000 });
    server.create('daemonsets', kuredDaemonSet());
    addNode('n1');
    if (ageMin === 0) expect(await operator()(['approve', 'n1', '--by', 'alice'])).toBe(0);
    else {
      // eslint-disable-next-line no-restricted-syntax -- real time: the agents under test judge ages on the system clock
      const at = new Date(Date.now() + (offsetMin + ageMin) * 60_000).toISOString();
      server.update('nodes', {
        ...node(),
        metadata: {
          ...node().metadata,
          annotations: { [APPROVAL_ANNOTATION]: JSON.stringify({ by: 'bob', at }) },
        },
      });
    }
    const outcome = await agent({ requireApproval: true, approvalTtlMs: 30 * 60_000 }).tick();
    expect(outcome.kind).toBe(expected);
  });

  it('approve --revoke takes an approval back before the node used it', async () => {
    const run = operator();
    expect(await run(['approve', 'n1', '--by', 'alice'])).toBe(0);
    expect(out[0]).toMatch(/^n1: approved by alice at .* ahead of time \(phase unknown\)/);
    expect(await run(['approve', 'n1', '--revoke'])).toBe(0);
    expect(out).toEqual(['n1: approval revoked']);
    expect(node().metadata?.annotations?.[APPROVAL_ANNOTATION]).toBeUndefined();
    expect((await agent({ requireApproval: true }).tick()).kind).toBe('awaiting-approval');
    expect(await run(['approve', '--all'])).toBe(0);
    expect(errs).toEqual([]);
  });
});

describe('--max-unhealthy-nodes', () => {
  it('takes no slot while more other nodes than allowed are unhealthy, naming them, then goes once one recovers', async () => {
    addNode('n2', 'False');
    addNode('n3', 'Unknown');
    addNode('n4');
    // the health gate alone: with --count-unavailable (default on) the NotReady n2 would also take
    // the only slot of --concurrency 1
    const c = { maxUnhealthyNodes: { count: 1 }, countUnavailable: false };
    const blocked = await agent(c).tick();
    // it waits for the fleet to recover, in the queue (the coordinator gives no turn meanwhile)
    expect(blocked).toMatchObject({ kind: 'waiting-for-lock', gate: 'max-unhealthy-nodes' });
    expect(blocked.reason).toBe('2 other nodes unhealthy (max 1): n2 not ready, n3 not ready');
    expect(holders()).toEqual([]);
    expect(node().spec?.unschedulable).toBeFalsy();
    setReady('n3', 'True');
    expect((await agent(c).tick()).kind).toBe('rebooting');
  });

  it('takes no slot when the node list fails: an unknown fleet health is not a healthy one', async () => {
    addNode('n2');
    server.injectFailure(
      { method: 'GET', pathIncludes: '/api/v1/nodes?resourceVersion=0' },
      500,
      READ_ATTEMPTS,
    );
    const failed = await agent({ maxUnhealthyNodes: { count: 0 } }).tick();
    expect(failed).toMatchObject({ kind: 'waiting-for-lock', gate: 'fleet-census', wait: { for: 'retry' } });
    expect(failed.reason).toMatch(/^cannot judge the fleet's capacity, so no slot is taken: .*\(500\)/);
    expect(holders()).toEqual([]);
    expect(node().spec?.unschedulable).toBeFalsy();
    expect((await agent({ maxUnhealthyNodes: { count: 0 } }).tick()).kind).toBe('rebooting');
  });

  it('reads every Node once per decision, as printed rows from the watch cache (resourceVersion=0), and the nodes in a cycle afresh', async () => {
    addNode('n2', 'False');
    addNode('n3', 'False');
    server.requests.length = 0;
    const outcome = await agent({ maxUnhealthyNodes: { percent: 34 } }).tick();
    expect(outcome.reason).toBe('2 other nodes unhealthy (max 1): n2 not ready, n3 not ready');
    const lists = server.requests.filter((r) => r.method === 'GET' && r.path === '/api/v1/nodes');
    expect(lists.map((r) => r.query)).toEqual([
      { labelSelector: 'kured-ts.dev/rebooting=true', includeObject: 'None' },
      { resourceVersion: '0', includeObject: 'None' },
    ]);
  });
});

describe('kured-ts history and status NODE', () => {
  it('say so when nothing is recorded, and name a node that does not exist, exit 1', async () => {
    const run = operator();
    expect(await run(['history'])).toBe(0);
    expect(out).toEqual(['no reboot recorded (agents keep the last --history-limit cycles per node)']);
    expect(await run(['history', 'ghost'])).toBe(1);
    expect(errs).toEqual(['node ghost not found']);
    expect(await run(['status', 'ghost', '-o', 'json'])).toBe(1);
    expect(errs).toEqual(['node ghost not found']);
    expect((JSON.parse(out.join('\n')) as StatusReport).nodes).toEqual([]);
  });
});
