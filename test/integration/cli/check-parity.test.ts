// `kured-ts check --node N` answers as the agent would (issue 31): for each cluster state, check
// runs first and must write nothing, then one pass of the real agent for the same node runs on the
// same state, and both must come to the same verdict, for the same reason where both give one.
// Both go through the real client-node against the fake API server.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { kuredDaemonSet, readyNode } from '../../fakes/kube-objects.js';
import { testConfig } from '../../fakes/config.js';
import { Agent, type Outcome } from '../../../src/agent/agent.js';
import { createAgentDeps } from '../../../src/agent/create-agent.js';
import { evaluateCheck } from '../../../src/cli/check.js';
import type { CheckDecisionKind, CheckReport } from '../../../src/cli/check-report.js';
import type { Config } from '../../../src/config/config.js';
import { healthCheck, nodeCheck } from '../../../src/config/wave-values.js';
import { ClientNodeKube } from '../../../src/kube/client.js';
import type { V1DaemonSet, V1Lease, V1Node, V1Pod, V1PodDisruptionBudget } from '../../../src/kube/kube.js';
import {
  ADVICE_ANNOTATION,
  LEGACY_HEALTH_ANNOTATION,
  coordinatorLeaseName,
} from '../../../src/queue/coordinator-lease.js';
import { TURN_ANNOTATION, formatTurn } from '../../../src/queue/turn.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { CYCLE_ANNOTATION, CYCLE_LABEL } from '../../../src/node/cycle.js';
import { REBOOT_REQUEST_ANNOTATION, formatRebootRequest } from '../../../src/node/reboot-request.js';
import { entriesOf, parseLockAnnotation } from '../../../src/lock/kured-lock-format.js';
import { STATUS_ANNOTATION, formatStatus } from '../../../src/node/status.js';
import { CONTROL_PLANE_LABEL } from '../../../src/node/role.js';
import { WAVE_LABEL, WAVE_STATE_LABEL, type WaveState } from '../../../src/node/wave.js';
import type { FleetGate } from '../../../src/capacity/gates.js';
import { QUARANTINE_ANNOTATION, QUARANTINE_LABEL, formatQuarantine } from '../../../src/node/quarantine.js';
import type { FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { realTimeFrom } from '../../fakes/fake-clock.js';

const NS = 'kube-system';
const LOCK = 'weave.works/kured-node-lock';
const NODES = ['n1', 'n2', 'n3'];

let server: FakeApiServer;
let reboots: number;

beforeEach(async () => {
  server = await startClusterApiServer();
  reboots = 0;
  server.create('daemonsets', kuredDaemonSet());
  for (const name of NODES) server.create<V1Node>('nodes', readyNode(name, `boot-${name}`));
});

afterEach(async () => {
  await server.close();
});

function config(overrides: Partial<Config> = {}): Config {
  return testConfig({ periodMs: 60_000, drainTimeoutMs: 5000, ...overrides });
}

/** Changes node `name` as `change` says (labels, annotations, spec, status). */
function editNode(name: string, change: (node: V1Node) => V1Node): void {
  server.update('nodes', change(server.get<V1Node>('nodes', undefined, name)!));
}

function annotate(name: string, annotations: Record<string, string>): void {
  editNode(name, (n) => ({
    ...n,
    metadata: { ...n.metadata, annotations: { ...n.metadata?.annotations, ...annotations } },
  }));
}

function label(name: string, labels: Record<string, string>): void {
  editNode(name, (n) => ({
    ...n,
    metadata: { ...n.metadata, labels: { ...n.metadata?.labels, ...labels } },
  }));
}

/** The lock annotation: kured's single form for one entry, else its multi form allowing `maxOwners`. */
function lock(entries: { node: string; meta?: Record<string, unknown> }[], maxOwners = 1): void {
  const locks = entries.map((e) => ({
    nodeID: e.node,
    metadata: { unschedulable: false, ...e.meta },
    created: '2026-01-05T09:00:00Z',
    TTL: 0,
  }));
  const text =
    locks.length === 1 && maxOwners === 1 ? JSON.stringify(locks[0]) : JSON.stringify({ maxOwners, locks });
  const ds = server.get<V1DaemonSet>('daemonsets', NS, 'kured')!;
  server.update('daemonsets', { ...ds, metadata: { ...ds.metadata, annotations: { [LOCK]: text } } });
}

/** A live coordinator's Lease, publishing the fleet's health (no unhealthy node unless named). */
function liveCoordinator(unhealthy: string[] = []): void {
  // every field a coordinator publishes, as a thief writing "all healthy" would fill them
  const health = JSON.stringify({
    total: NODES.length,
    count: unhealthy.length,
    unhealthy,
    workersAhead: { count: 0, names: [] },
    reported: NODES.length,
    quarantined: [],
    quarantinedCount: 0,
  });
  server.create<V1Lease>('leases', {
    metadata: {
      name: coordinatorLeaseName('kured'),
      namespace: NS,
      // and advice under its holder's name saying nothing holds the queue back
      annotations: {
        [LEGACY_HEALTH_ANNOTATION]: health,
        [ADVICE_ANNOTATION]: JSON.stringify({ by: 'coordinator-0', seq: 1, nodes: NODES.length }),
      },
    },
    spec: { holderIdentity: 'coordinator-0', leaseDurationSeconds: 30 },
  });
}

/** `name`'s kubelet says it is not Ready. */
function notReady(name: string): void {
  editNode(name, (n) => ({
    ...n,
    status: { ...n.status, conditions: [{ type: 'Ready', status: 'False' }] },
  }));
}

/** `name` waits for a slot, its reboot needed since `since`, and holds the coordinator's turn (or not). */
function waiting(name: string, since: string, turn: boolean): void {
  const status = formatStatus({
    phase: 'waiting-for-lock',
    reason: 'waiting for its turn',
    since,
    bootID: `boot-${name}`,
    requiredSince: since,
  });
  annotate(name, {
    [STATUS_ANNOTATION]: status,
    ...(turn ? { [TURN_ANNOTATION]: formatTurn({ since, by: 'coordinator-0' }) } : {}),
  });
}

/** A PodDisruptionBudget that allows no disruption of the web pod on n1. */
function pdbAllowingNone(): void {
  server.create<V1Pod>('pods', {
    metadata: {
      name: 'web-1',
      namespace: 'default',
      labels: { app: 'web' },
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web', uid: 'rs', controller: true },
      ],
    },
    spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'nginx' }] },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  });
  server.create<V1PodDisruptionBudget>('poddisruptionbudgets', {
    metadata: { name: 'web', namespace: 'default' },
    spec: { minAvailable: 1, selector: { matchLabels: { app: 'web' } } },
  });
}

/** The etcd member on `node`: a static pod's mirror in kube-system, Ready or not. */
function etcdMember(node: string, ready: boolean): void {
  server.create<V1Pod>('pods', {
    metadata: {
      name: `etcd-${node}`,
      namespace: NS,
      labels: { component: 'etcd' },
      annotations: { 'kubernetes.io/config.mirror': 'x' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node, uid: node, controller: true }],
    },
    spec: { nodeName: node, containers: [{ name: 'etcd', image: 'etcd' }] },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  });
}

/** `name` quarantined a minute ago: its drain failed on the pod `pod` (namespace/name, with its UID). */
function quarantined(name: string, pod: { pod: string; uid?: string }): void {
  label(name, { [QUARANTINE_LABEL]: 'drain-failed' });
  annotate(name, {
    [QUARANTINE_ANNOTATION]: formatQuarantine({
      since: new Date(onMonday.now().getTime() - 60_000).toISOString(),
      pods: [{ ...pod, reason: 'still terminating at --drain-timeout' }],
      cordoned: false,
    }),
  });
}

/** The pod web-1 on n1, as the quarantine records it. */
function webPodOfN1(): { pod: string; uid?: string } {
  const uid = server.get<V1Pod>('pods', 'default', 'web-1')?.metadata?.uid;
  return { pod: 'default/web-1', ...(uid === undefined ? {} : { uid }) };
}

/** The wave every row's nodes are in (a wave id as src/node/wave.ts makes them). */
const WAVE = 'w20260105-090000-abc123';

/** `name` says on itself that it is in WAVE at `state` (as its own agent writes it). */
function inWave(name: string, state: WaveState): void {
  label(name, { [WAVE_LABEL]: WAVE, [WAVE_STATE_LABEL]: state });
}

/** Every list of the Nodes fails (their GETs by name do not): nobody can count the fleet. */
function nodeListsFail(): void {
  server.injectFailure({ method: 'GET', pathIncludes: '/api/v1/nodes?' }, 500, 1_000, {
    message: 'etcdserver: request timed out',
  });
}

/** A --health-check on n3's label example.com/healthy (fails unless n3 says 'true'). */
const HEALTH_CHECK: Partial<Config> = {
  healthChecks: [healthCheck(`core/v1/nodes n3: self.metadata.labels['example.com/healthy'] == 'true'`)],
};

/** An admin asked for n1's reboot with --now (`kured-ts reboot n1 --now`). */
function requestedNow(): void {
  annotate('n1', {
    [REBOOT_REQUEST_ANNOTATION]: formatRebootRequest({
      by: 'alice@example.com',
      reason: 'CVE-2026-0001',
      at: '2026-01-05T09:00:00Z',
      now: true,
    }),
  });
}

/** A maintenance window that never opens. */
const CLOSED: Partial<Config> = { window: { ...testConfig().window, days: [] } };

/**
 * The agent's and check's time: real timers from Monday 2026-01-05 10:00 UTC on, whatever today is
 * (a window judged on the real date would turn with the calendar).
 */
const onMonday = realTimeFrom('2026-01-05T10:00:00Z');

/** A maintenance window open on Wednesdays only (UTC): closed on the test's Monday. */
const LATER: Partial<Config> = {
  window: { ...testConfig().window, timeZone: 'UTC', days: [3] },
};

/** An at-slot --node-check: no degraded Longhorn volume (docs/storage.md's recipe). */
const NODE_CHECK: Partial<Config> = {
  nodeChecks: [
    nodeCheck(
      "at-slot longhorn.io/v1beta2/volumes longhorn-system: self.items.all(v, v.status.robustness != 'degraded')",
    ),
  ],
};

/** A Longhorn Volume of this robustness (as Longhorn writes its status). */
function longhornVolume(robustness: string): void {
  server.create('volumes', {
    apiVersion: 'longhorn.io/v1beta2',
    kind: 'Volume',
    metadata: { name: 'pvc-data', namespace: 'longhorn-system' },
    status: { currentNodeID: 'n2', robustness },
  });
}

/** n3 says it is not healthy: HEALTH_CHECK fails. */
function unhealthyN3(): void {
  label('n3', { 'example.com/healthy': 'false' });
}

/** The nodes the lock names now. */
function lockHolders(): string[] {
  const text = server.get<V1DaemonSet>('daemonsets', NS, 'kured')?.metadata?.annotations?.[LOCK];
  return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID);
}

function cycleRecorded(name: string): boolean {
  return (
    server.get<V1Node>('nodes', undefined, name)?.metadata?.annotations?.[CYCLE_ANNOTATION] !== undefined
  );
}

/** Every request since `from` that could change something (reads and dry runs excluded). */
function writesSince(from: number): string[] {
  return server.requests
    .slice(from)
    .filter((r) => r.method !== 'GET' && r.query.dryRun !== 'All')
    .map((r) => `${r.method} ${r.path}`);
}

/** One pass of the real agent of n1, built as `kured-ts agent` builds it; the host "reboots" by a counter. */
async function agentPass(c: Config): Promise<Outcome> {
  const deps = createAgentDeps(c, {
    kube: new ClientNodeKube(server.kubeConfig()),
    clock: onMonday,
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

/** What the agent's pass does, for each decision of check: a slot taken (or a cycle carried on) ends in the reboot request. */
const AGENT_KIND: Readonly<Partial<Record<CheckDecisionKind, Outcome['kind']>>> = {
  'outside-window': 'outside-window',
  'waiting-for-lock': 'waiting-for-lock',
  blocked: 'blocked',
  'would-reboot': 'rebooting',
  'in-progress': 'rebooting',
};

/** check's deciding reason in the agent's words: a blocker's reason is prefixed with its name. */
function agentReason(outcome: Outcome): string {
  return outcome.kind === 'blocked' ? `${outcome.blocker}: ${outcome.reason}` : outcome.reason;
}

interface Row {
  /** The cluster as it stands when check and then the agent look at it. */
  arrange: () => void;
  /** Flags beyond testConfig's, for both. */
  flags?: Partial<Config>;
  /** check's decision (the agent's outcome follows from it by AGENT_KIND). */
  verdict: CheckDecisionKind;
  /**
   * The fleet gate that holds n1 back ('waiting-for-lock' only): check's lock item names it, and so
   * does the agent's outcome (as kured_ts_blocked does); neither names one when this is absent.
   */
  gate?: FleetGate;
}

const rows: [string, Row][] = [
  ['a free slot: both take it, drain and reboot', { arrange: () => undefined, verdict: 'would-reboot' }],
  [
    'the live coordinator gives n1 the turn: both take the free slot',
    {
      arrange: () => {
        liveCoordinator();
        waiting('n1', '2026-01-05T09:10:00Z', true);
      },
      verdict: 'would-reboot',
    },
  ],
  [
    'a free slot under the coordinated queue, the turn held by n2 whose need is older: both wait behind it',
    {
      arrange: () => {
        liveCoordinator();
        waiting('n2', '2026-01-05T09:10:00Z', true);
        waiting('n1', '2026-01-05T09:30:00Z', false);
      },
      verdict: 'waiting-for-lock',
    },
  ],
  [
    "n1's group full under --group-concurrency, with slots free elsewhere: both wait for the group",
    {
      arrange: () => {
        label('n1', { zone: 'a' });
        label('n2', { zone: 'a' });
        lock([{ node: 'n2', meta: { group: 'a', bootID: 'boot-n2' } }], 3);
      },
      flags: { concurrency: { count: 3 }, groupLabel: 'zone', groupConcurrency: { count: 1 } },
      verdict: 'waiting-for-lock',
      gate: 'group-concurrency',
    },
  ],
  [
    'more other nodes unhealthy than --max-unhealthy-nodes allows (no coordinator: one read of the rows): both wait, held back by the health gate',
    {
      arrange: () => {
        notReady('n3');
      },
      flags: { maxUnhealthyNodes: { count: 0 } },
      verdict: 'waiting-for-lock',
      gate: 'max-unhealthy-nodes',
    },
  ],
  [
    'the live coordinator publishes a healthy fleet while n3 is not Ready, n1 holding the turn: both judge the Nodes, not the Lease, and wait under --max-unhealthy-nodes',
    {
      arrange: () => {
        liveCoordinator([]);
        notReady('n3');
        waiting('n1', '2026-01-05T09:10:00Z', true);
      },
      flags: { maxUnhealthyNodes: { count: 0 } },
      verdict: 'waiting-for-lock',
      gate: 'max-unhealthy-nodes',
    },
  ],
  [
    'the live coordinator publishes a healthy fleet while n3 is not Ready, n1 holding the turn, --concurrency 1: both count n3 against the only slot (--count-unavailable)',
    {
      arrange: () => {
        liveCoordinator([]);
        notReady('n3');
        waiting('n1', '2026-01-05T09:10:00Z', true);
      },
      flags: { countUnavailable: true },
      verdict: 'waiting-for-lock',
      gate: 'count-unavailable',
    },
  ],
  [
    'the lock names n1 and no cycle of its own proves it, the slot otherwise free: both judge it a new acquisition and take it',
    {
      arrange: () => {
        lock([{ node: 'n1', meta: { bootID: 'boot-n1' } }]);
      },
      verdict: 'would-reboot',
    },
  ],
  [
    'the lock names n1 unproven while n2 holds the turn: both wait for the turn (the agent drops the entry)',
    {
      arrange: () => {
        liveCoordinator();
        waiting('n2', '2026-01-05T09:10:00Z', true);
        lock([{ node: 'n1', meta: { bootID: 'boot-n1' } }]);
      },
      verdict: 'waiting-for-lock',
    },
  ],
  [
    'the lock names n1 unproven, the only slot counted for n3 in a cycle, and a PodDisruptionBudget allows no disruption: both are held back by the PDB',
    {
      arrange: () => {
        lock([{ node: 'n1', meta: { bootID: 'boot-n1' } }]);
        label('n3', { [CYCLE_LABEL]: 'true' });
        pdbAllowingNone();
      },
      verdict: 'blocked',
    },
  ],
  [
    'control-plane n1 with a free slot while worker n2 waits for one (no coordinator: one list of the Nodes): both wait, control plane last',
    {
      arrange: () => {
        label('n1', { [CONTROL_PLANE_LABEL]: '' });
        waiting('n2', '2026-01-05T09:10:00Z', false);
      },
      flags: { concurrency: { count: 2 } },
      verdict: 'waiting-for-lock',
      gate: 'control-plane-last',
    },
  ],
  [
    'control-plane n1 with the etcd member on control-plane n2 not Ready: both are held back, naming that member',
    {
      arrange: () => {
        label('n1', { [CONTROL_PLANE_LABEL]: '' });
        label('n2', { [CONTROL_PLANE_LABEL]: '' });
        etcdMember('n1', true);
        etcdMember('n2', false);
      },
      verdict: 'blocked',
    },
  ],
  [
    'n1 quarantined, the pod that stopped its drain still there: both pass it over, held back by the quarantine',
    {
      arrange: () => {
        pdbAllowingNone();
        quarantined('n1', webPodOfN1());
      },
      flags: { blockOnPdb: false },
      verdict: 'blocked',
    },
  ],
  [
    'a NotReady node takes the only slot under --count-unavailable: both wait, naming it',
    {
      arrange: () => {
        editNode('n3', (n) => ({
          ...n,
          status: { ...n.status, conditions: [{ type: 'Ready', status: 'False' }] },
        }));
      },
      verdict: 'waiting-for-lock',
      gate: 'count-unavailable',
    },
  ],
  [
    'n1 quarantined, the pod that stopped its drain gone since: both take the free slot',
    {
      arrange: () => {
        quarantined('n1', { pod: 'default/stuck-1', uid: 'gone-uid' });
      },
      verdict: 'would-reboot',
    },
  ],
  [
    'more other nodes quarantined than --max-quarantined allows: both wait, new cycles halted',
    {
      arrange: () => {
        quarantined('n2', { pod: 'default/stuck-2' });
        quarantined('n3', { pod: 'default/stuck-3' });
      },
      flags: { maxQuarantined: { count: 1 } },
      verdict: 'waiting-for-lock',
      gate: 'max-quarantined',
    },
  ],
  [
    "kured's slot for n1, which kured cordoned: both adopt it as a cycle under way and go on to the reboot",
    {
      arrange: () => {
        lock([{ node: 'n1' }]);
        editNode('n1', (n) => ({ ...n, spec: { ...n.spec, unschedulable: true } }));
      },
      verdict: 'in-progress',
    },
  ],
  [
    "n1's group full under --group-concurrency by n2 of its group in its cycle, with no entry in the lock: both wait for the group",
    {
      arrange: () => {
        label('n1', { zone: 'a' });
        label('n2', { zone: 'a', [CYCLE_LABEL]: 'true' });
      },
      flags: { concurrency: { count: 3 }, groupLabel: 'zone', groupConcurrency: { count: 1 } },
      verdict: 'waiting-for-lock',
      gate: 'group-concurrency',
    },
  ],
  [
    'control-plane n1 while control-plane n2 holds a slot, another slot free: both wait, one control-plane node at a time',
    {
      arrange: () => {
        label('n1', { [CONTROL_PLANE_LABEL]: '' });
        label('n2', { [CONTROL_PLANE_LABEL]: '' });
        lock([{ node: 'n2', meta: { controlPlane: true, bootID: 'boot-n2' } }], 2);
      },
      flags: { concurrency: { count: 2 } },
      verdict: 'waiting-for-lock',
      gate: 'control-plane',
    },
  ],
  [
    "n2 of n1's wave failed, which spends its --max-failures: both wait, the wave halted",
    {
      arrange: () => {
        inWave('n1', 'waiting');
        inWave('n2', 'failed');
      },
      flags: { maxFailures: { count: 1 } },
      verdict: 'waiting-for-lock',
      gate: 'max-failures',
    },
  ],
  [
    "n2, the first step of n1's wave under --wave-start 1, back but not yet soaked: both wait for the next step",
    {
      arrange: () => {
        inWave('n1', 'waiting');
        inWave('n2', 'back');
      },
      flags: { concurrency: { count: 3 }, waveStart: 1, waveGrowth: { kind: 'double' }, soakMs: 10 * 60_000 },
      verdict: 'waiting-for-lock',
      gate: 'slow-start',
    },
  ],
  [
    "n2 of group a waits in n1's wave, n1 of group b, under --group-order sequential: both wait, group a goes first",
    {
      arrange: () => {
        label('n1', { zone: 'b' });
        label('n2', { zone: 'a' });
        inWave('n1', 'waiting');
        inWave('n2', 'waiting');
      },
      flags: { concurrency: { count: 3 }, groupLabel: 'zone', groupOrder: { kind: 'sequential', order: [] } },
      verdict: 'waiting-for-lock',
      gate: 'group-order',
    },
  ],
  [
    'no list of the Nodes can be read, a slot free under --count-unavailable: both wait, the fleet not judged',
    {
      arrange: () => {
        nodeListsFail();
      },
      verdict: 'waiting-for-lock',
      gate: 'fleet-census',
    },
  ],
  [
    'a failing --health-check while the only slot is taken by n2: both wait for the lock, the check asked only at the slot',
    {
      arrange: () => {
        unhealthyN3();
        lock([{ node: 'n2', meta: { bootID: 'boot-n2' } }]);
      },
      flags: HEALTH_CHECK,
      verdict: 'waiting-for-lock',
    },
  ],
  [
    'a failing --health-check with the slot free: both are held back by it, for the same reason',
    {
      arrange: () => {
        unhealthyN3();
      },
      flags: HEALTH_CHECK,
      verdict: 'blocked',
    },
  ],
  [
    'an at-slot --node-check false (a Longhorn volume degraded): both are held back by it, for the same reason',
    {
      arrange: () => {
        longhornVolume('degraded');
      },
      flags: NODE_CHECK,
      verdict: 'blocked',
    },
  ],
  [
    'an at-slot --node-check true: both take the free slot',
    {
      arrange: () => {
        longhornVolume('healthy');
      },
      flags: NODE_CHECK,
      verdict: 'would-reboot',
    },
  ],
  [
    "an admin's --now request with the window closed: both pass the window and take the free slot",
    { arrange: requestedNow, flags: CLOSED, verdict: 'would-reboot' },
  ],
  [
    'the window closed for two days and no request: both wait for the window, naming when it opens',
    { arrange: () => undefined, flags: LATER, verdict: 'outside-window' },
  ],
  [
    "an admin's --now request and a failing --health-check: both are held back by it (--now never passes the operator's availability gates)",
    {
      arrange: () => {
        requestedNow();
        unhealthyN3();
      },
      flags: { ...CLOSED, ...HEALTH_CHECK },
      verdict: 'blocked',
    },
  ],
  [
    "an admin's --now request and a failing --health-check under --taint-timing unblocked (judged before the lock): both are held back by it",
    {
      arrange: () => {
        requestedNow();
        unhealthyN3();
      },
      flags: { ...HEALTH_CHECK, taintTiming: 'unblocked' },
      verdict: 'blocked',
    },
  ],
];

describe('kured-ts check and one pass of the agent, on the same cluster', () => {
  it.each(rows)('%s', async (_name, row) => {
    row.arrange();
    const c = config(row.flags);
    const from = server.requests.length;
    const io = {
      kube: new ClientNodeKube(server.kubeConfig()),
      out: () => undefined,
      clock: onMonday,
    };
    const report: CheckReport = await evaluateCheck(
      { node: 'n1', config: c },
      io,
      AbortSignal.timeout(10_000),
    );
    // check writes nothing: the agent's pass below sees the cluster exactly as check saw it
    expect(writesSince(from)).toEqual([]);
    expect(report.decision.kind).toBe(row.verdict);

    const outcome = await agentPass(c);
    expect(outcome.kind).toBe(AGENT_KIND[report.decision.kind]);
    // the agent took (or kept) the slot and began its cycle exactly when check said it would go
    // (its reboot request itself may wait for the next pass: the kubelet's heartbeat can move the
    // node under the guarded write that counts the attempt)
    const goes = outcome.kind === 'rebooting';
    expect({ holds: lockHolders().includes('n1'), inCycle: cycleRecorded('n1') }).toEqual({
      holds: goes,
      inCycle: goes,
    });
    expect(reboots).toBeLessThanOrEqual(goes ? 1 : 0);
    // where both say why the node is held back, they say the same
    if (['waiting-for-lock', 'blocked', 'outside-window'].includes(outcome.kind)) {
      expect(report.decision.reason).toBe(agentReason(outcome));
    }
    // where both wait for the lock, both name the fleet gate that holds n1 back, the same one (or none)
    if (outcome.kind === 'waiting-for-lock') {
      const lockItem = report.items.find((i) => i.name === 'lock');
      expect({ check: lockItem?.gate, agent: outcome.gate }).toEqual({ check: row.gate, agent: row.gate });
    } else {
      expect(row.gate).toBeUndefined();
    }
  });

  it('is one runner: check and the agent both run runToSlot, and check runs none of its steps itself', () => {
    // two implementations that agree on every row above could still part on the next one: check
    // must not put the steps in order, only render what the agent's own runner answers
    const source = (path: string): string => readFileSync(join(process.cwd(), path), 'utf8');
    const check = source('src/cli/check.ts');
    const agent = source('src/agent/decision/first-pass.ts');
    const runner =
      /import \{[^}]*\brunToSlot\b[^}]*\} from '[./]*agent\/decision\/to-slot\.js'|from '\.\/to-slot\.js'/;
    for (const text of [check, agent]) {
      expect(text).toMatch(runner);
      expect(text).toMatch(/\brunToSlot\(/);
    }
    const steps = [
      'judgeBeforeLock',
      'decideBeforeLock',
      'judgeAtSlot',
      'approvalCheck',
      'waitingFor',
      '.contains(',
    ];
    expect(steps.filter((step) => check.includes(step))).toEqual([]);
  });

  it('has a row for every fleet gate', () => {
    // a new gate without its entry here does not compile
    const every: Record<FleetGate, true> = {
      'count-unavailable': true,
      'group-concurrency': true,
      'control-plane': true,
      'control-plane-last': true,
      'max-unhealthy-nodes': true,
      'max-quarantined': true,
      'max-failures': true,
      'slow-start': true,
      'group-order': true,
      'fleet-census': true,
    };
    const covered = new Set(rows.flatMap(([, row]) => (row.gate === undefined ? [] : [row.gate])));
    expect([...covered].sort()).toEqual(Object.keys(every).sort());
  });
});
