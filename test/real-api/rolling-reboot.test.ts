// Rolling reboots on a real kube-apiserver: the chart as `helm template` renders it (RBAC, admission
// policies, DaemonSet), one real agent process per simulated node, each on a pod-bound token of the
// chart's ServiceAccount. This test plays the hosts and the kubelets: a reboot kills the node's
// agent, changes its bootID and starts the agent again. The invariants are checked throughout, and
// the audit log must show no request of an agent denied.
//
// One wave with the chart's defaults, and one per chart value that changes what the admission policy
// admits (issue 47: with configuration.drainGracePeriod set, the policy denied every PDB pre-flight,
// and no node rebooted): each wave installs the chart with its values, waits until kube-apiserver
// enforces that wave's policy, and runs the PDB pre-flight and the drain through it.
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import type { V1DaemonSet, V1Node, V1Pod, V1PodDisruptionBudget } from '../../src/kube/kube.js';
import { entriesOf, parseLockAnnotation } from '../../src/lock/kured-lock-format.js';
import {
  CLUSTER_AUTOSCALER_ANNOTATION as CA,
  KARPENTER_ANNOTATION as KARPENTER,
  PROTECTION_ANNOTATION as PROTECTION,
  parseProtection,
} from '../../src/node/autoscaler.js';
import { KURED_IN_PROGRESS_ANNOTATION, KURED_REBOOT_NEEDED_ANNOTATION } from '../../src/node/node.js';
import {
  chartAgentArgs,
  hostAgentArgs,
  renderChart,
  spawnAgent,
  tokenKubeconfig,
} from '../contract/chart-render.js';
import { TestCluster, send } from '../contract/cluster.js';
import { waitFor } from '../fakes/wait-for.js';

const NS = 'kube-system';
const DS = 'kured-ts';
const SA = { namespace: NS, name: 'kured-ts' };
const LOCK = 'weave.works/kured-node-lock';
const TAINT = 'weave.works/kured-node-reboot';
const AGENT_USER = `system:serviceaccount:${NS}:${SA.name}`;

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: { template?: { spec?: { containers?: { args?: string[] }[] } } };
}

/** One installation of the chart and its wave. */
interface Wave {
  /** Prefix of its nodes' names (each wave has nodes of its own). */
  prefix: string;
  /** `helm template` arguments: --set and --set-json of the chart values. */
  values: string[];
  /** The eviction grace period the chart writes into the policy (configuration.drainGracePeriod). */
  grace: number;
  /**
   * Each node also runs a pod under a PodDisruptionBudget that never allows a disruption: its
   * eviction is refused until configuration.drainTimeout, then configuration.drainFallback deletes it.
   */
  stuckBudget?: boolean;
  /** The node labels the agents must leave on every node after its reboot. */
  labelsAfter?: Record<string, string>;
  /** configuration.concurrency (default 1): at most this many nodes cordoned at once. */
  concurrency?: number;
}

let dir: string;
let cluster: TestCluster | undefined;
const agents = new Map<string, ChildProcess>();
let watching: NodeJS.Timeout | undefined;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'kured-ts-rolling-'));
});

afterEach(async () => {
  if (watching !== undefined) clearInterval(watching);
  watching = undefined;
  for (const child of agents.values()) child.kill('SIGKILL');
  agents.clear();
  await cluster?.close();
  cluster = undefined;
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function real(): TestCluster {
  if (cluster === undefined) throw new Error('no cluster: the wave has not started');
  return cluster;
}

function kubeconfigFor(node: string, token: string): string {
  return tokenKubeconfig(join(dir, `${node}.kubeconfig`), real().server, token);
}

/** The agent token's endpoint, from its kubeconfig. */
function agentEndpoint(kubeconfig: string): { url: string; ca: string | undefined; token: string } {
  const token = /token: "([^"]+)"/.exec(readFileSync(kubeconfig, 'utf8'))?.[1] ?? '';
  return { url: real().server.url, ca: real().server.ca, token };
}

/** The chart's agent arguments for this host, with the waves' shorter retry and readiness bound. */
function agentArgs(chartArgs: readonly string[], node: string): string[] {
  return hostAgentArgs(chartArgs, node, dir, {
    '--eviction-retry-delay': '1s',
    '--post-reboot-timeout': '2m',
  });
}

function startAgent(node: string, args: readonly string[], kubeconfig: string): void {
  agents.set(node, spawnAgent(args, kubeconfig));
}

async function holders(): Promise<string[]> {
  const text = (await real().get<V1DaemonSet>('daemonsets', NS, DS))?.metadata?.annotations?.[LOCK];
  return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID);
}

async function workloadOn(node: string): Promise<string[]> {
  return (await real().list<V1Pod>('pods', 'default'))
    .filter((p) => p.spec?.nodeName === node)
    .map((p) => p.metadata?.name ?? '');
}

interface AuditEntry {
  user?: { username?: string };
  verb?: string;
  requestURI?: string;
  objectRef?: { resource?: string; subresource?: string };
  responseStatus?: { code?: number };
}

/**
 * The agents' requests in the audit log, in order. The API server is still writing it: its last
 * line may be half written, and is left for the next read (every whole line ends with a newline).
 */
function agentRequests(): AuditEntry[] {
  const log = process.env.REAL_API_AUDIT_LOG ?? '';
  if (!existsSync(log)) return [];
  const text = readFileSync(log, 'utf8');
  return text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as AuditEntry)
    .filter((e) => e.user?.username === AGENT_USER);
}

/** Denied requests of the agents' ServiceAccount, from the audit log. */
function deniedAgentRequests(): string[] {
  return agentRequests()
    .filter((e) => e.responseStatus?.code === 403 || e.responseStatus?.code === 422)
    .map((e) => `${e.verb ?? ''} ${e.requestURI ?? ''} ${e.responseStatus?.code ?? ''}`);
}

/** A running, ready pod of `app` on `node`, as its kubelet reports it. */
async function runningPod(node: string, name: string, app: string): Promise<void> {
  await real().create<V1Pod>('pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels: { app } },
    spec: { nodeName: node, containers: [{ name: 'c', image: 'busybox' }] },
  });
  await real().patchStatus('pods', 'default', name, {
    phase: 'Running',
    conditions: [{ type: 'Ready', status: 'True' }],
  });
}

/** Installs the chart with the wave's values; its nodes, Ready on boot-1, with their pods. */
async function install(wave: Wave): Promise<{ nodes: string[]; chartArgs: string[] }> {
  cluster = TestCluster.real();
  const manifests = renderChart<Manifest>('kured-ts', NS, wave.values);
  for (const m of manifests) await real().apply(m);
  const chartArgs = chartAgentArgs(manifests);
  // the chart passes only what differs from the agent's defaults: its taint and its lock DaemonSet
  expect(chartArgs).toEqual(
    expect.arrayContaining([
      '--prefer-no-schedule-taint=weave.works/kured-node-reboot',
      `--ds-name=${DS}`,
      `--ds-namespace=${NS}`,
    ]),
  );
  const nodes = [1, 2, 3].map((i) => `${wave.prefix}-n${i}`);
  for (const name of nodes) {
    await real().create<V1Node>('nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name } });
    await real().patchStatus('nodes', undefined, name, {
      nodeInfo: { bootID: 'boot-1', kernelVersion: '6.1.0-1', osImage: 'Debian 12' },
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ready' }],
    });
    for (const pod of [`${name}-web`, `${name}-api`]) await runningPod(name, pod, pod);
    if (wave.stuckBudget === true) await runningPod(name, `${name}-db`, `${wave.prefix}-db`);
  }
  if (wave.stuckBudget === true) {
    // every db pod must stay: a budget that allows no disruption, as the disruption controller sees it
    await real().create<V1PodDisruptionBudget>('poddisruptionbudgets', {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: `${wave.prefix}-db`, namespace: 'default' },
      spec: { minAvailable: nodes.length, selector: { matchLabels: { app: `${wave.prefix}-db` } } },
    });
    await real().syncBudget('default', `${wave.prefix}-db`);
  }
  real().startKubelet();
  return { nodes, chartArgs };
}

/** Every agent gets a token bound to its own pod on its node, as the kubelet would mount it. */
async function agentKubeconfigs(nodes: readonly string[]): Promise<Map<string, string>> {
  const kubeconfigs = new Map<string, string>();
  const ds = await real().get<V1DaemonSet>('daemonsets', NS, DS);
  const owner = {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    name: DS,
    uid: ds?.metadata?.uid ?? '',
    controller: true,
  };
  for (const node of nodes) {
    const token = await real().tokenInPod(SA, {
      name: `kured-ts-${node}`,
      node,
      labels: { 'app.kubernetes.io/name': 'kured-ts' },
      owner,
    });
    kubeconfigs.set(node, kubeconfigFor(node, token));
  }
  return kubeconfigs;
}

/** The answer's status to a merge patch of node `node` with the agent token of `kubeconfig`. */
async function agentPatchNode(kubeconfig: string, node: string, body: object): Promise<number> {
  const answer = await send(agentEndpoint(kubeconfig), {
    method: 'PATCH',
    path: `/api/v1/nodes/${node}`,
    body,
    contentType: 'application/merge-patch+json',
  });
  return answer.status;
}

/** The answer's status to a dry-run eviction of pod `name` (default/) with the agent token, with `grace`. */
async function agentDryRunEviction(kubeconfig: string, name: string, grace?: number): Promise<number> {
  const deleteOptions = { dryRun: ['All'], ...(grace === undefined ? {} : { gracePeriodSeconds: grace }) };
  const answer = await send(agentEndpoint(kubeconfig), {
    method: 'POST',
    path: `/api/v1/namespaces/default/pods/${name}/eviction?dryRun=All`,
    body: {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name, namespace: 'default' },
      deleteOptions,
    },
  });
  return answer.status;
}

/**
 * Waits until kube-apiserver enforces this wave's policies (it loads a new admission policy
 * asynchronously; the previous wave's were just deleted): the agent of `node` may not cordon `other`,
 * and of two dry-run evictions of its own pod only the one with the wave's grace period (none for
 * -1) passes, which no other wave's eviction policy says. The denials are in the audit log before
 * the wave starts.
 */
async function policyInForce(kubeconfig: string, wave: Wave, nodes: readonly string[]): Promise<boolean> {
  const [node = '', other = ''] = nodes;
  const own = wave.grace < 0 ? undefined : wave.grace;
  const another = wave.grace < 0 ? 0 : undefined;
  for (let i = 0; i < 60; i++) {
    const cordon = await agentPatchNode(kubeconfig, other, { spec: { unschedulable: true } });
    if (cordon === 200) await real().patch('nodes', undefined, other, { spec: { unschedulable: null } });
    const admitted = await agentDryRunEviction(kubeconfig, `${node}-web`, own);
    const denied = await agentDryRunEviction(kubeconfig, `${node}-web`, another);
    if ([403, 422].includes(cordon) && admitted === 201 && [403, 422].includes(denied)) return true;
    // poll once a second of real time
    await new Promise((r) => setTimeout(r, 1_000));
  }
  return false;
}

/**
 * Plays the hosts: when a node's reboot command has run, its agent dies, its bootID changes and
 * the agent starts again. Checks the invariants of each reboot, and that at most `concurrency` nodes
 * are cordoned at once.
 */
function hosts(
  nodes: readonly string[],
  concurrency: number,
  args: (node: string) => string[],
  kubeconfigs: Map<string, string>,
): { rebooted: Set<string>; violations: string[]; check: () => Promise<void> } {
  const rebooted = new Set<string>();
  const violations: string[] = [];
  const reboot = async (node: string): Promise<void> => {
    agents.get(node)?.kill('SIGKILL');
    rebooted.add(node);
    const held = await holders();
    if (!held.includes(node))
      violations.push(`${node} rebooted without the lock (held by ${held.join(',')})`);
    const left = await workloadOn(node);
    if (left.length > 0) violations.push(`${node} rebooted with pods still on it: ${left.join(',')}`);
    rmSync(join(dir, `${node}.reboot-required`), { force: true });
    await real().patchStatus('nodes', undefined, node, { nodeInfo: { bootID: 'boot-2' } });
    startAgent(node, args(node), kubeconfigs.get(node) ?? '');
  };
  let checking = false;
  const check = async (): Promise<void> => {
    if (checking) return;
    checking = true;
    try {
      const list = await real().list<V1Node>('nodes');
      const cordoned = list.filter(
        (n) => nodes.includes(n.metadata?.name ?? '') && n.spec?.unschedulable === true,
      );
      if (cordoned.length > concurrency) violations.push(`${cordoned.length} nodes cordoned at once`);
      for (const node of nodes) {
        if (!rebooted.has(node) && existsSync(join(dir, `${node}.rebooting`))) await reboot(node);
      }
    } finally {
      checking = false;
    }
  };
  return { rebooted, violations, check };
}

/** Every node on its new boot, uncordoned, without our taint, and the lock free. */
async function waveDone(nodes: readonly string[]): Promise<boolean> {
  const mine = (await real().list<V1Node>('nodes')).filter((n) => nodes.includes(n.metadata?.name ?? ''));
  const settled = mine.every(
    (n) =>
      n.status?.nodeInfo?.bootID === 'boot-2' &&
      n.spec?.unschedulable !== true &&
      !(n.spec?.taints ?? []).some((t) => t.key === TAINT),
  );
  return settled && (await holders()).length === 0;
}

/**
 * Autoscaler protection (chart default on, --settle-time 10m): a rebooted, drained node still carries
 * both annotations, written by its agent through the chart's policy, its settle running.
 */
async function expectSettling(node: string): Promise<void> {
  const annotations = (await real().get<V1Node>('nodes', undefined, node))?.metadata?.annotations ?? {};
  expect(annotations).toMatchObject({ [CA]: 'true', [KARPENTER]: 'true' });
  expect(parseProtection(annotations[PROTECTION])).toEqual({
    added: [CA, KARPENTER],
    until: expect.any(String),
  });
}

/**
 * Runs the wave: every node needs a reboot, its agent starts; resolves when every node has rebooted,
 * is back in service and the lock is free, or as soon as the audit log shows an agent request denied
 * (a denied agent waits for ever: the wave would only time out). Returns what the wave left: the
 * invariants broken, the nodes rebooted, the agents' requests and those denied.
 */
async function runWave(
  nodes: readonly string[],
  chartArgs: readonly string[],
  kubeconfigs: Map<string, string>,
  concurrency = 1,
): Promise<{ violations: string[]; rebooted: string[]; requests: AuditEntry[]; denied: string[] }> {
  const before = agentRequests().length;
  const deniedBefore = deniedAgentRequests().length;
  const argsOf = (node: string): string[] => agentArgs(chartArgs, node);
  for (const node of nodes) writeFileSync(join(dir, `${node}.reboot-required`), '');
  const { rebooted, violations, check } = hosts(nodes, concurrency, argsOf, kubeconfigs);
  watching = setInterval(() => void check(), 100);
  for (const node of nodes) startAgent(node, argsOf(node), kubeconfigs.get(node) ?? '');
  let done = false;
  let denied: string[] = [];
  const poll = setInterval(() => {
    denied = deniedAgentRequests().slice(deniedBefore);
    void waveDone(nodes).then((d) => (done = d && rebooted.size === nodes.length));
  }, 250);
  try {
    await waitFor(
      () => done || denied.length > 0,
      'every node rebooted, uncordoned and the lock free',
      180_000,
    );
  } finally {
    clearInterval(poll);
    clearInterval(watching);
    watching = undefined;
  }
  return {
    violations,
    rebooted: [...rebooted].sort(),
    requests: agentRequests().slice(before),
    denied: deniedAgentRequests().slice(deniedBefore),
  };
}

it('reboots every node once, one at a time, with the chart RBAC and admission policy and no agent request denied', async () => {
  const wave: Wave = { prefix: 'real', values: [], grace: -1 };
  const { nodes, chartArgs } = await install(wave);
  const kubeconfigs = await agentKubeconfigs(nodes);
  const [n1 = '', n2 = ''] = nodes;
  const n1Kube = kubeconfigs.get(n1) ?? '';
  // the policy enforces before any agent starts: n1's token may not cordon n2, and the denial is
  // in the audit log, where the check at the end looks
  expect(await policyInForce(n1Kube, wave, nodes)).toBe(true);
  // the quarantine (issue 33): its label (with drain-failed, no other word) and record on its own
  // node only
  const quarantine = (value: string): object => ({
    metadata: {
      labels: { 'kured-ts.dev/quarantined': value },
      annotations: {
        'kured-ts.dev/quarantine': '{"since":"2026-01-05T10:00:00Z","pods":[],"cordoned":false}',
      },
    },
  });
  expect(await agentPatchNode(n1Kube, n1, quarantine('drain-failed'))).toBe(200);
  expect([403, 422]).toContain(await agentPatchNode(n1Kube, n1, quarantine('gave-up')));
  expect([403, 422]).toContain(await agentPatchNode(n1Kube, n2, quarantine('drain-failed')));
  await real().patch('nodes', undefined, n1, {
    metadata: {
      labels: { 'kured-ts.dev/quarantined': null },
      annotations: { 'kured-ts.dev/quarantine': null },
    },
  });
  expect(deniedAgentRequests().length).toBeGreaterThan(0);

  const { violations, rebooted, requests, denied } = await runWave(nodes, chartArgs, kubeconfigs);
  expect(denied).toEqual([]);
  expect(violations).toEqual([]);
  expect(rebooted).toEqual(nodes);
  for (const node of nodes) expect(await workloadOn(node)).toEqual([]);
  for (const node of nodes) await expectSettling(node);
  // the PDB pre-flight ran: a dry-run eviction of every pod before its node took the lock
  const dryRuns = requests.filter((e) => e.requestURI?.includes('/eviction?dryRun=All'));
  expect(dryRuns.length).toBeGreaterThanOrEqual(2 * nodes.length);
}, 240_000);

/** The chart values that change what the agent's admission policy admits, each non-default. */
const WAVES: { name: string; wave: Wave }[] = [
  {
    name: 'a drain grace period (configuration.drainGracePeriod=5): the PDB pre-flight and the drain both carry it',
    wave: { prefix: 'grace', values: ['--set', 'configuration.drainGracePeriod=5'], grace: 5 },
  },
  {
    name: "kured's progress annotations and pre- and post-reboot labels, with a drain grace period, two at a time (the setup of issue 47)",
    wave: {
      prefix: 'labels',
      values: [
        '--set',
        'configuration.concurrency=2',
        '--set',
        'configuration.drainGracePeriod=5',
        '--set',
        'configuration.annotateNodes=true',
        '--set-json',
        'configuration.preRebootNodeLabels=["example.com/rebooting=true"]',
        '--set-json',
        'configuration.postRebootNodeLabels=["example.com/rebooting=false","example.com/patched=yes"]',
      ],
      grace: 5,
      labelsAfter: { 'example.com/rebooting': 'false', 'example.com/patched': 'yes' },
      concurrency: 2,
    },
  },
  {
    name: 'the drain fallback deleting the pods a budget holds (configuration.drainFallback=delete), with a drain grace period',
    wave: {
      prefix: 'fallback',
      values: [
        '--set',
        'configuration.drainGracePeriod=5',
        '--set',
        'configuration.drainFallback=delete',
        '--set',
        'configuration.drainTimeout=10s',
        // the budget never allows a disruption: the pre-flight would hold every node back for good
        '--set',
        'configuration.blockOnPdb=false',
      ],
      grace: 5,
      stuckBudget: true,
    },
  },
];

it.each(WAVES)(
  'reboots every node with $name, and no agent request is denied',
  async ({ wave }) => {
    const { nodes, chartArgs } = await install(wave);
    const kubeconfigs = await agentKubeconfigs(nodes);
    expect(await policyInForce(kubeconfigs.get(nodes[0] ?? '') ?? '', wave, nodes)).toBe(true);

    const waved = await runWave(nodes, chartArgs, kubeconfigs, wave.concurrency);
    const { violations, rebooted, requests, denied } = waved;
    expect(denied).toEqual([]);
    expect(violations).toEqual([]);
    expect(rebooted).toEqual(nodes);
    for (const node of nodes) expect(await workloadOn(node)).toEqual([]);
    const evictions = requests.filter((e) => e.objectRef?.subresource === 'eviction');
    expect(evictions.length).toBeGreaterThan(0);
    if (wave.stuckBudget === true) {
      // each db pod's eviction was refused until the drain timed out, then deleted on its own node
      const deleted = requests.filter(
        (e) => e.verb === 'delete' && e.objectRef?.resource === 'pods' && e.responseStatus?.code === 200,
      );
      expect(deleted.length).toBe(nodes.length);
    } else {
      // the PDB pre-flight ran: a dry-run eviction of every pod before its node took the lock
      const dryRuns = evictions.filter((e) => e.requestURI?.includes('dryRun=All'));
      expect(dryRuns.length).toBeGreaterThanOrEqual(2 * nodes.length);
    }
    for (const node of nodes) {
      const after = (await real().get<V1Node>('nodes', undefined, node))?.metadata;
      if (wave.labelsAfter !== undefined) expect(after?.labels).toMatchObject(wave.labelsAfter);
      if (wave.values.includes('configuration.annotateNodes=true')) {
        // kured's annotations: written at the cordon, the one in progress taken off after the reboot
        expect(after?.annotations?.[KURED_REBOOT_NEEDED_ANNOTATION]).toEqual(expect.any(String));
        expect(after?.annotations?.[KURED_IN_PROGRESS_ANNOTATION]).toBeUndefined();
      }
    }
  },
  240_000,
);

/** The coordinator's bound token, as the chart's Deployment would mount it into a replica's pod. */
async function coordinatorEndpoint(): Promise<{ url: string; ca: string | undefined; token: string }> {
  const sa = { namespace: NS, name: `${DS}-coordinator` };
  const token = await real().tokenInPod(sa, { name: 'kured-ts-coordinator-stolen' });
  return { url: real().server.url, ca: real().server.ca, token };
}

it('with the coordinator token stolen (its Lease taken, turns on every waiter), no node reboots while another is NotReady, and the wave completes once it is Ready', async () => {
  const wave: Wave = { prefix: 'thief', values: [], grace: -1 };
  const { nodes, chartArgs } = await install(wave);
  const [n1 = '', n2 = '', n3 = ''] = nodes;
  // n3 is down from the start (its kubelet says NotReady; its agent does not run)
  await real().patchStatus('nodes', undefined, n3, {
    conditions: [{ type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: 'down' }],
  });
  const kubeconfigs = await agentKubeconfigs([n1, n2]);
  expect(await policyInForce(kubeconfigs.get(n1) ?? '', wave, nodes)).toBe(true);
  // the thief: the coordinator's Lease as its own (within what the policy admits), advice saying
  // nothing holds the queue, and a turn on each waiting node, renewed every 2 s
  const thief = await coordinatorEndpoint();
  const lease = `${DS}-coordinator`;
  const path = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`;
  let seq = 0;
  const steal = async (): Promise<number[]> => {
    seq++;
    const advice = JSON.stringify({ by: 'attacker', seq, nodes: nodes.length });
    const body = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: lease, namespace: NS, annotations: { 'kured-ts.dev/fleet-advice': advice } },
      spec: { holderIdentity: 'attacker', leaseDurationSeconds: 60 },
    };
    const created = await send(thief, { method: 'POST', path, body });
    const codes = [created.status];
    if (created.status === 409) {
      const read = await send(thief, { method: 'GET', path: `${path}/${lease}` });
      const current = read.body as { metadata?: { resourceVersion?: string } } | undefined;
      const update = {
        ...body,
        metadata: { ...body.metadata, resourceVersion: current?.metadata?.resourceVersion },
      };
      codes.push((await send(thief, { method: 'PUT', path: `${path}/${lease}`, body: update })).status);
    }
    const turn = JSON.stringify({ since: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), by: 'attacker' });
    for (const node of [n1, n2])
      codes.push(
        (
          await send(thief, {
            method: 'PATCH',
            path: `/api/v1/nodes/${node}`,
            body: { metadata: { annotations: { 'kured-ts.dev/lock-turn': turn } } },
            contentType: 'application/merge-patch+json',
          })
        ).status,
      );
    return codes;
  };
  const first = await steal();
  // admitted: a thief within the policy's bounds is what the agents must withstand on their own
  expect(first.every((c) => c === 200 || c === 201 || c === 409)).toBe(true);
  const stealing = setInterval(() => void steal(), 2_000);
  try {
    const waving = runWave([n1, n2], chartArgs, kubeconfigs);
    // for 25 s (twelve periods of the agents) no node is cordoned or rebooted: n3 fills the only slot
    const until = Date.now() + 25_000;
    while (Date.now() < until) {
      const list = await real().list<V1Node>('nodes');
      const cordoned = list.filter((n) => n.spec?.unschedulable === true).map((n) => n.metadata?.name);
      expect(cordoned).toEqual([]);
      expect(existsSync(join(dir, `${n1}.rebooting`)) || existsSync(join(dir, `${n2}.rebooting`))).toBe(
        false,
      );
      await new Promise((r) => setTimeout(r, 500));
    }
    const status = (await real().get<V1Node>('nodes', undefined, n1))?.metadata?.annotations?.[
      'kured-ts.dev/status'
    ];
    expect(status).toMatch(/waiting-for-lock/);
    expect(status).toMatch(new RegExp(`${n3} unavailable`));
    // n3 comes back: the wave completes, one at a time, the thief still at work
    await real().patchStatus('nodes', undefined, n3, {
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ready' }],
    });
    const { violations, rebooted, denied } = await waving;
    expect(denied).toEqual([]);
    expect(violations).toEqual([]);
    expect(rebooted).toEqual([n1, n2]);
  } finally {
    clearInterval(stealing);
  }
}, 240_000);
