// A rolling reboot on a real kube-apiserver: the chart as `helm template` renders it with default
// values (RBAC, admission policies, DaemonSet), one real agent process per simulated node, each on
// a pod-bound token of the chart's ServiceAccount. This test plays the hosts and the kubelets: a
// reboot kills the node's agent, changes its bootID and starts the agent again. The invariants are
// checked throughout, and the audit log must show no request of an agent denied.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { parseAllDocuments } from 'yaml';
import type { V1DaemonSet, V1Node, V1Pod } from '../../src/kube/kube.js';
import { entriesOf, parseLockAnnotation } from '../../src/lock/kured-lock-format.js';
import {
  CLUSTER_AUTOSCALER_ANNOTATION as CA,
  KARPENTER_ANNOTATION as KARPENTER,
  PROTECTION_ANNOTATION as PROTECTION,
  parseProtection,
} from '../../src/node/autoscaler.js';
import { TestCluster, send } from '../contract/cluster.js';
import { waitFor } from '../fakes/wait-for.js';

const NS = 'kube-system';
const DS = 'kured-ts';
const SA = { namespace: NS, name: 'kured-ts' };
const LOCK = 'weave.works/kured-node-lock';
const TAINT = 'weave.works/kured-node-reboot';
const NODES = ['real-n1', 'real-n2', 'real-n3'];
const AGENT_USER = `system:serviceaccount:${NS}:${SA.name}`;

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: { template?: { spec?: { containers?: { args?: string[] }[] } } };
}

let cluster: TestCluster;
let dir: string;
const agents = new Map<string, ChildProcess>();
const violations: string[] = [];
let watching: NodeJS.Timeout | undefined;

function render(): Manifest[] {
  const helm = spawnSync(process.execPath, ['scripts/ensure-helm.mjs'], { encoding: 'utf8' }).stdout.trim();
  const out = spawnSync(
    helm,
    ['template', 'kured-ts', 'charts/kured-ts', '--namespace', NS, '--kube-version', '1.32.0'],
    {
      encoding: 'utf8',
    },
  );
  if (out.status !== 0) throw new Error(`helm template failed: ${out.stderr}`);
  return parseAllDocuments(out.stdout)
    .map((d) => d.toJS() as Manifest | null)
    .filter((o): o is Manifest => o !== null);
}

function kubeconfigFor(node: string, token: string): string {
  const { url, ca } = cluster.server;
  const path = join(dir, `${node}.kubeconfig`);
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters: [{ name: real, cluster: { server: "${url}", certificate-authority-data: "${Buffer.from(ca ?? '').toString('base64')}" } }]
users: [{ name: agent, user: { token: "${token}" } }]
contexts: [{ name: real, context: { cluster: real, user: agent } }]
current-context: real
`,
  );
  return path;
}

/** The chart's agent arguments, with this host's sentinel and reboot command, and a short period. */
function agentArgs(chartArgs: readonly string[], node: string): string[] {
  const replaced: Record<string, string> = {
    '--period': '2s',
    '--reboot-sentinel': join(dir, `${node}.reboot-required`),
    '--reboot-command': `/usr/bin/touch ${join(dir, `${node}.rebooting`)}`,
    '--host-exec': 'direct',
    '--metrics-port': '0',
    '--eviction-retry-delay': '1s',
    '--post-reboot-timeout': '2m',
  };
  const args = chartArgs.filter((a) => !(a.split('=')[0]! in replaced));
  return [...args, ...Object.entries(replaced).map(([k, v]) => `${k}=${v}`), `--node-id=${node}`];
}

function startAgent(node: string, args: readonly string[], kubeconfig: string): void {
  const child = spawn(process.execPath, ['dist/cli.js', 'agent', ...args], {
    env: { ...process.env, KUBECONFIG: kubeconfig },
    stdio: ['ignore', 'ignore', 'ignore'],
  });
  agents.set(node, child);
}

async function holders(): Promise<string[]> {
  const text = (await cluster.get<V1DaemonSet>('daemonsets', NS, DS))?.metadata?.annotations?.[LOCK];
  return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID);
}

async function workloadOn(node: string): Promise<string[]> {
  return (await cluster.list<V1Pod>('pods', 'default'))
    .filter((p) => p.spec?.nodeName === node)
    .map((p) => p.metadata?.name ?? '');
}

/** Denied requests of the agents' ServiceAccount, from the audit log. */
function deniedAgentRequests(): string[] {
  const log = process.env.REAL_API_AUDIT_LOG ?? '';
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map(
      (l) =>
        JSON.parse(l) as {
          user?: { username?: string };
          verb?: string;
          requestURI?: string;
          responseStatus?: { code?: number };
        },
    )
    .filter(
      (e) =>
        e.user?.username === AGENT_USER && (e.responseStatus?.code === 403 || e.responseStatus?.code === 422),
    )
    .map((e) => `${e.verb ?? ''} ${e.requestURI ?? ''} ${e.responseStatus?.code ?? ''}`);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kured-ts-rolling-'));
  cluster = TestCluster.real();
  const manifests = render();
  for (const m of manifests) await cluster.apply(m);
  const chartArgs =
    manifests.find((m) => m.kind === 'DaemonSet')?.spec?.template?.spec?.containers?.[0]?.args ?? [];
  // the chart passes only what differs from the agent's defaults: its taint and its lock DaemonSet
  expect(chartArgs).toEqual(
    expect.arrayContaining([
      '--prefer-no-schedule-taint=weave.works/kured-node-reboot',
      `--ds-name=${DS}`,
      `--ds-namespace=${NS}`,
    ]),
  );
  for (const name of NODES) {
    await cluster.create<V1Node>('nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name } });
    await cluster.patchStatus('nodes', undefined, name, {
      nodeInfo: { bootID: 'boot-1', kernelVersion: '6.1.0-1', osImage: 'Debian 12' },
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ready' }],
    });
    for (const pod of [`${name}-web`, `${name}-api`]) {
      await cluster.create<V1Pod>('pods', {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: pod, namespace: 'default', labels: { app: pod } },
        spec: { nodeName: name, containers: [{ name: 'c', image: 'busybox' }] },
      });
      await cluster.patchStatus('pods', 'default', pod, {
        phase: 'Running',
        conditions: [{ type: 'Ready', status: 'True' }],
      });
    }
  }
  cluster.startKubelet();
}, 120_000);

afterAll(async () => {
  if (watching !== undefined) clearInterval(watching);
  for (const child of agents.values()) child.kill('SIGKILL');
  await cluster.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Every agent gets a token bound to its own pod on its node, as the kubelet would mount it. */
async function agentKubeconfigs(): Promise<Map<string, string>> {
  const kubeconfigs = new Map<string, string>();
  const ds = await cluster.get<V1DaemonSet>('daemonsets', NS, DS);
  const owner = {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    name: DS,
    uid: ds?.metadata?.uid ?? '',
    controller: true,
  };
  for (const node of NODES) {
    const pod = await cluster.create<V1Pod>('pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: `kured-ts-${node}`,
        namespace: NS,
        labels: { 'app.kubernetes.io/name': 'kured-ts' },
        ownerReferences: [owner],
      },
      spec: {
        nodeName: node,
        serviceAccountName: SA.name,
        containers: [{ name: 'kured-ts', image: 'kured-ts' }],
      },
    });
    const token = await cluster.podToken(SA, {
      name: pod.metadata?.name ?? '',
      uid: pod.metadata?.uid ?? '',
    });
    kubeconfigs.set(node, kubeconfigFor(node, token));
  }
  return kubeconfigs;
}

/** Does the admission policy deny `kubeconfig`'s agent a cordon of `other`? Retried while the policy syncs. */
async function cordonOfOtherDenied(kubeconfig: string, other: string): Promise<boolean> {
  const token = /token: "([^"]+)"/.exec(readFileSync(kubeconfig, 'utf8'))?.[1] ?? '';
  const endpoint = { url: cluster.server.url, ca: cluster.server.ca, token };
  for (let i = 0; i < 60; i++) {
    const answer = await send(endpoint, {
      method: 'PATCH',
      path: `/api/v1/nodes/${other}`,
      body: { spec: { unschedulable: true } },
      contentType: 'application/merge-patch+json',
    });
    if (answer.status === 403 || answer.status === 422) return true;
    if (answer.status === 200)
      await cluster.patch('nodes', undefined, other, { spec: { unschedulable: null } });
    // kube-apiserver loads a new admission policy asynchronously: poll once a second of real time
    await new Promise((r) => setTimeout(r, 1_000));
  }
  return false;
}

/** The answer's status to a merge patch of node `node` with the agent token of `kubeconfig`. */
async function agentPatchNode(kubeconfig: string, node: string, body: object): Promise<number> {
  const token = /token: "([^"]+)"/.exec(readFileSync(kubeconfig, 'utf8'))?.[1] ?? '';
  const endpoint = { url: cluster.server.url, ca: cluster.server.ca, token };
  const answer = await send(endpoint, {
    method: 'PATCH',
    path: `/api/v1/nodes/${node}`,
    body,
    contentType: 'application/merge-patch+json',
  });
  return answer.status;
}

/**
 * Plays the hosts: when a node's reboot command has run, its agent dies, its bootID changes and
 * the agent starts again. Checks the invariants of each reboot, and that at most one node is cordoned.
 */
function hosts(
  args: (node: string) => string[],
  kubeconfigs: Map<string, string>,
): { rebooted: Set<string>; check: () => Promise<void> } {
  const rebooted = new Set<string>();
  const reboot = async (node: string): Promise<void> => {
    agents.get(node)?.kill('SIGKILL');
    rebooted.add(node);
    const held = await holders();
    if (!held.includes(node))
      violations.push(`${node} rebooted without the lock (held by ${held.join(',')})`);
    const left = await workloadOn(node);
    if (left.length > 0) violations.push(`${node} rebooted with pods still on it: ${left.join(',')}`);
    rmSync(join(dir, `${node}.reboot-required`), { force: true });
    await cluster.patchStatus('nodes', undefined, node, { nodeInfo: { bootID: 'boot-2' } });
    startAgent(node, args(node), kubeconfigs.get(node) ?? '');
  };
  let checking = false;
  const check = async (): Promise<void> => {
    if (checking) return;
    checking = true;
    try {
      const nodes = await cluster.list<V1Node>('nodes');
      const cordoned = nodes.filter(
        (n) => NODES.includes(n.metadata?.name ?? '') && n.spec?.unschedulable === true,
      );
      if (cordoned.length > 1) violations.push(`${cordoned.length} nodes cordoned at once`);
      for (const node of NODES) {
        if (!rebooted.has(node) && existsSync(join(dir, `${node}.rebooting`))) await reboot(node);
      }
    } finally {
      checking = false;
    }
  };
  return { rebooted, check };
}

/** Every node on its new boot, uncordoned, without our taint, and the lock free. */
async function waveDone(): Promise<boolean> {
  const mine = (await cluster.list<V1Node>('nodes')).filter((n) => NODES.includes(n.metadata?.name ?? ''));
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
  const annotations = (await cluster.get<V1Node>('nodes', undefined, node))?.metadata?.annotations ?? {};
  expect(annotations).toMatchObject({ [CA]: 'true', [KARPENTER]: 'true' });
  expect(parseProtection(annotations[PROTECTION])).toEqual({
    added: [CA, KARPENTER],
    until: expect.any(String),
  });
}

it('reboots every node once, one at a time, with the chart RBAC and admission policy and no agent request denied', async () => {
  const kubeconfigs = await agentKubeconfigs();
  // the policy enforces before any agent starts: n1's token may not cordon n2, and the denial is
  // in the audit log, where the check at the end looks
  expect(await cordonOfOtherDenied(kubeconfigs.get('real-n1') ?? '', 'real-n2')).toBe(true);
  // the quarantine (issue 33): its label (with drain-failed, no other word) and record on its own
  // node only
  const n1 = kubeconfigs.get('real-n1') ?? '';
  const quarantine = (value: string): object => ({
    metadata: {
      labels: { 'kured-ts.dev/quarantined': value },
      annotations: {
        'kured-ts.dev/quarantine': '{"since":"2026-01-05T10:00:00Z","pods":[],"cordoned":false}',
      },
    },
  });
  expect(await agentPatchNode(n1, 'real-n1', quarantine('drain-failed'))).toBe(200);
  expect([403, 422]).toContain(await agentPatchNode(n1, 'real-n1', quarantine('gave-up')));
  expect([403, 422]).toContain(await agentPatchNode(n1, 'real-n2', quarantine('drain-failed')));
  await cluster.patch('nodes', undefined, 'real-n1', {
    metadata: {
      labels: { 'kured-ts.dev/quarantined': null },
      annotations: { 'kured-ts.dev/quarantine': null },
    },
  });
  const deniedBefore = deniedAgentRequests().length;
  expect(deniedBefore).toBeGreaterThan(0);

  const manifests = render();
  const chartArgs =
    manifests.find((m) => m.kind === 'DaemonSet')?.spec?.template?.spec?.containers?.[0]?.args ?? [];
  const argsOf = (node: string): string[] => agentArgs(chartArgs, node);
  for (const node of NODES) writeFileSync(join(dir, `${node}.reboot-required`), '');
  const { rebooted, check } = hosts(argsOf, kubeconfigs);
  watching = setInterval(() => void check(), 100);
  for (const node of NODES) startAgent(node, argsOf(node), kubeconfigs.get(node) ?? '');

  let done = false;
  const poll = setInterval(() => {
    void waveDone().then((d) => (done = d && rebooted.size === NODES.length));
  }, 250);
  try {
    await waitFor(() => done, 'every node rebooted, uncordoned and the lock free', 180_000);
  } finally {
    clearInterval(poll);
    clearInterval(watching);
    watching = undefined;
  }
  expect(violations).toEqual([]);
  expect([...rebooted].sort()).toEqual(NODES);
  for (const node of NODES) expect(await workloadOn(node)).toEqual([]);
  for (const node of NODES) await expectSettling(node);
  expect(deniedAgentRequests().slice(deniedBefore)).toEqual([]);
}, 240_000);
