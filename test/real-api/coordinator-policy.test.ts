// The chart's coordinator RBAC and admission policies on a real kube-apiserver (`npm run
// test:real-api`): what the fake API server's CEL engine judges in test/integration/
// admission-policy.test.ts, judged again by kube's own RBAC and typed CEL (an expression that did
// not compile would fail every write the policies match, the admitted ones too). The chart is
// rendered with its default values (but drainFallback delete, so that the agent's pod deletions
// reach the policy past RBAC) under a release of its own and applied; the coordinator and an
// agent then call the API with tokens bound to their pods, as the kubelet mounts them. (The
// policies' typeChecking status is written by kube-controller-manager, which does not run here.)
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parseAllDocuments } from 'yaml';
import type { V1Node, V1Pod } from '../../src/kube/kube.js';
import { TURN_ANNOTATION } from '../../src/queue/turn.js';
import { TestCluster, send, type Answer } from '../contract/cluster.js';

const NS = 'kube-system';
const RELEASE = 'kured-ts-policy';
const COORDINATOR_SA = { namespace: NS, name: `${RELEASE}-coordinator` };
const AGENT_SA = { namespace: NS, name: RELEASE };
const LEASE = `${RELEASE}-coordinator`;
const NODES = ['policy-n1', 'policy-n2'];
const TURN = JSON.stringify({ since: '2026-01-05T10:00:00Z', by: 'test' });

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
}

let cluster: TestCluster;
let admin: { url: string; ca?: string; token?: string };
let coordinator: { url: string; ca?: string; token: string };
let agent: { url: string; ca?: string; token: string };

function render(): Manifest[] {
  const helm = spawnSync(process.execPath, ['scripts/ensure-helm.mjs'], { encoding: 'utf8' }).stdout.trim();
  const out = spawnSync(
    helm,
    [
      'template',
      RELEASE,
      'charts/kured-ts',
      '--namespace',
      NS,
      '--kube-version',
      '1.32.0',
      '--set',
      'configuration.drainFallback=delete',
    ],
    { encoding: 'utf8' },
  );
  if (out.status !== 0) throw new Error(`helm template failed: ${out.stderr}`);
  return parseAllDocuments(out.stdout)
    .map((d) => d.toJS() as Manifest | null)
    .filter((o): o is Manifest => o !== null);
}

/** A token of `serviceAccount` bound to a pod of it on `node`. */
async function tokenOnNode(
  serviceAccount: { namespace: string; name: string },
  node: string,
): Promise<string> {
  const pod = await cluster.create<V1Pod>('pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `${serviceAccount.name}-${node}`, namespace: NS },
    spec: {
      nodeName: node,
      serviceAccountName: serviceAccount.name,
      containers: [{ name: 'c', image: 'kured-ts' }],
    },
  });
  return cluster.podToken(serviceAccount, { name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' });
}

const mergePatch = (path: string, body: object): Parameters<typeof send>[1] => ({
  method: 'PATCH',
  path,
  body,
  contentType: 'application/merge-patch+json',
});
const turnOn = (node: string, value: string | null): Parameters<typeof send>[1] =>
  mergePatch(`/api/v1/nodes/${node}`, { metadata: { annotations: { [TURN_ANNOTATION]: value } } });
const leasePath = (name = ''): string =>
  `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases${name === '' ? '' : `/${name}`}`;
const lease = (name: string, holder: string): object => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: { name, namespace: NS },
  spec: { holderIdentity: holder, leaseDurationSeconds: 30 },
});

/** Why the API server refused (the Status message), or the status code alone. */
const why = (answer: Answer): string =>
  `${answer.status} ${(answer.body as { message?: string } | undefined)?.message ?? ''}`;

beforeAll(async () => {
  cluster = TestCluster.real();
  const text = readFileSync(process.env.REAL_API_KUBECONFIG ?? '', 'utf8');
  admin = { ...cluster.server, token: /token: "([^"]+)"/.exec(text)?.[1] };
  for (const m of render()) await cluster.apply(m);
  for (const name of NODES)
    await cluster.create<V1Node>('nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name } });
  coordinator = { ...cluster.server, token: await tokenOnNode(COORDINATOR_SA, NODES[0]!) };
  agent = { ...cluster.server, token: await tokenOnNode(AGENT_SA, NODES[0]!) };
  // the policies take effect a moment after they are created: wait for the first denial
  for (let i = 0; i < 60; i++) {
    const answer = await send(
      coordinator,
      mergePatch(`/api/v1/nodes/${NODES[1]!}`, { spec: { unschedulable: true } }),
    );
    if (answer.status === 403) return;
    if (answer.status === 200)
      await cluster.patch('nodes', undefined, NODES[1]!, { spec: { unschedulable: null } });
    // kube-apiserver loads a new admission policy asynchronously: poll once a second of real time
    await new Promise((r) => setTimeout(r, 1_000));
  }
  throw new Error('the coordinator policy never took effect');
}, 120_000);

afterAll(async () => {
  for (const name of [LEASE, 'kube-scheduler-policy'])
    await send(admin, { method: 'DELETE', path: leasePath(name) });
  await cluster.close();
});

describe('on a real kube-apiserver, the coordinator', () => {
  it('sets and removes the turn annotation on any node, and creates and renews its own Lease', async () => {
    for (const node of NODES) {
      expect(why(await send(coordinator, turnOn(node, TURN)))).toMatch(/^200/);
      expect(why(await send(coordinator, turnOn(node, null)))).toMatch(/^200/);
    }
    expect(
      why(await send(coordinator, { method: 'POST', path: leasePath(), body: lease(LEASE, 'a') })),
    ).toMatch(/^201/);
    const current = await send(coordinator, { method: 'GET', path: leasePath(LEASE) });
    expect(current.status).toBe(200);
    const renewed = { ...(current.body as object), spec: { holderIdentity: 'b', leaseDurationSeconds: 30 } };
    expect(why(await send(coordinator, { method: 'PUT', path: leasePath(LEASE), body: renewed }))).toMatch(
      /^200/,
    );
    expect(why(await send(coordinator, { method: 'GET', path: '/api/v1/nodes?resourceVersion=0' }))).toMatch(
      /^200/,
    );
  });

  it.each<[string, Parameters<typeof send>[1], RegExp]>([
    [
      'a cordon',
      mergePatch(`/api/v1/nodes/${NODES[0]!}`, { spec: { unschedulable: true } }),
      /may not change the spec/,
    ],
    [
      'a taint',
      mergePatch(`/api/v1/nodes/${NODES[0]!}`, { spec: { taints: [{ key: 'x', effect: 'NoSchedule' }] } }),
      /may not change the spec/,
    ],
    [
      'a label',
      mergePatch(`/api/v1/nodes/${NODES[0]!}`, { metadata: { labels: { x: 'y' } } }),
      /labels, owners/,
    ],
    [
      'another annotation',
      mergePatch(`/api/v1/nodes/${NODES[0]!}`, { metadata: { annotations: { 'kured-ts.dev/status': 'x' } } }),
      /only the annotation kured-ts.dev\/lock-turn/,
    ],
    [
      "another component's Lease",
      { method: 'POST', path: leasePath(), body: lease('kube-scheduler-policy', 'x') },
      /only its own Lease/,
    ],
    [
      'a read of one Node (RBAC: list and watch only)',
      { method: 'GET', path: `/api/v1/nodes/${NODES[0]!}` },
      /forbidden/,
    ],
    [
      'a write to the lock (RBAC: read only)',
      mergePatch(`/apis/apps/v1/namespaces/${NS}/daemonsets/${RELEASE}`, {
        metadata: { annotations: { a: 'b' } },
      }),
      /forbidden/,
    ],
  ])('is refused %s', async (_name, call, message) => {
    const answer = await send(coordinator, call);
    expect(answer.status).toBe(403);
    expect(why(answer)).toMatch(message);
  });
});

describe('on a real kube-apiserver, the agent', () => {
  it("reads the coordinator's Lease and watches its own Node, and no other Lease", async () => {
    await send(admin, { method: 'POST', path: leasePath(), body: lease(LEASE, 'a') });
    expect(why(await send(agent, { method: 'GET', path: leasePath(LEASE) }))).toMatch(/^200/);
    expect((await send(agent, { method: 'GET', path: leasePath('kube-scheduler-policy') })).status).toBe(403);
    const watch = await send(agent, {
      method: 'GET',
      path: `/api/v1/nodes?watch=1&fieldSelector=metadata.name%3D${NODES[0]!}&timeoutSeconds=1`,
    });
    expect(watch.status).toBe(200);
  });

  it.each([
    ["its own node's turn annotation", NODES[0]!, /only the annotations/],
    ["another node's turn annotation", NODES[1]!, /only its own node/],
  ])('is refused writing %s', async (_name, node, message) => {
    const answer = await send(agent, turnOn(node, TURN));
    expect(answer.status).toBe(403);
    expect(why(answer)).toMatch(message);
  });
});

describe('on a real kube-apiserver, the agent policy allows exactly the autoscaler protection it owns', () => {
  const CA = 'cluster-autoscaler.kubernetes.io/scale-down-disabled';
  const KARPENTER = 'karpenter.sh/do-not-disrupt';
  const PROTECTION = 'kured-ts.dev/autoscaler-protection';
  const own = (annotations: Record<string, string | null>): Parameters<typeof send>[1] =>
    mergePatch(`/api/v1/nodes/${NODES[0]!}`, { metadata: { annotations } });

  it("adds both where absent, removes what it added, and never an admin's, nor another value", async () => {
    const record = JSON.stringify({ added: [CA, KARPENTER] });
    expect(why(await send(agent, own({ [CA]: 'true', [KARPENTER]: 'true', [PROTECTION]: record })))).toMatch(
      /^200/,
    );
    expect(why(await send(agent, own({ [CA]: null, [KARPENTER]: null, [PROTECTION]: null })))).toMatch(
      /^200/,
    );
    // an admin's annotation: the agent may neither remove nor change it, with or without a record
    await cluster.patch('nodes', undefined, NODES[0]!, {
      metadata: { annotations: { [KARPENTER]: 'true' } },
    });
    const refused = [
      own({ [KARPENTER]: null }),
      own({ [KARPENTER]: 'false' }),
      own({ [KARPENTER]: null, [PROTECTION]: JSON.stringify({ added: [KARPENTER] }) }),
      own({ [CA]: 'false', [PROTECTION]: JSON.stringify({ added: [CA] }) }),
      own({ [CA]: 'true' }),
    ];
    for (const call of refused) {
      const answer = await send(agent, call);
      expect(answer.status).toBe(403);
      expect(why(answer)).toMatch(/only where absent, as "true", and remove only those it added/);
    }
    await cluster.patch('nodes', undefined, NODES[0]!, { metadata: { annotations: { [KARPENTER]: null } } });
  });

  it("removes an admin's reboot request, and may not write one", async () => {
    const REQUEST = 'kured-ts.dev/reboot-requested';
    const value = JSON.stringify({ by: 'admin', reason: 'x', at: '2026-01-05T10:00:00Z', now: true });
    expect((await send(agent, own({ [REQUEST]: value }))).status).toBe(403);
    await cluster.patch('nodes', undefined, NODES[0]!, { metadata: { annotations: { [REQUEST]: value } } });
    expect(why(await send(agent, own({ [REQUEST]: null })))).toMatch(/^200/);
  });
});

describe('on a real kube-apiserver, the agent policy on pod deletions (drainFallback delete)', () => {
  const victim = (node: string): Promise<V1Pod> =>
    cluster.create<V1Pod>('pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `victim-${node}`, namespace: 'default' },
      spec: { nodeName: node, containers: [{ name: 'c', image: 'kured-ts' }] },
    });
  const remove = (node: string): Parameters<typeof send>[1] => ({
    method: 'DELETE',
    path: `/api/v1/namespaces/default/pods/victim-${node}`,
  });

  it.each([
    ['bound to its own node', NODES[0]!, /^200/],
    [
      'bound to another node',
      NODES[1]!,
      /^403 .*may delete only pods bound to its own node, not default\/victim-policy-n2 on node policy-n2/,
    ],
  ])('lets the agent delete a pod %s, or not', async (_what, node, answer) => {
    await victim(node);
    expect(why(await send(agent, remove(node)))).toMatch(answer);
    await send(admin, remove(node));
  });
});
