// The chart's coordinator RBAC and admission policies on a real kube-apiserver (`npm run
// test:real-api`): what the fake API server's CEL engine judges in test/integration/
// admission-policy.test.ts, judged again by kube's own RBAC and typed CEL (an expression that did
// not compile would fail every write the policies match, the admitted ones too). The chart is
// rendered with its default values (but drainFallback delete, so that the agent's pod deletions
// reach the policy past RBAC) under a release of its own and applied; the coordinator, an agent
// and another component's ServiceAccount (which RBAC lets write the namespace's Leases) then call
// the API with tokens bound to their pods, as the kubelet mounts them. (The policies'
// typeChecking status is written by kube-controller-manager, which does not run here.)
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { V1Node, V1Pod } from '../../src/kube/kube.js';
import { TURN_ANNOTATION, formatLapsedTurn, formatTurn } from '../../src/queue/turn.js';
import { renderChart } from '../contract/chart-render.js';
import { TestCluster, send, type Answer } from '../contract/cluster.js';

const NS = 'kube-system';
const RELEASE = 'kured-ts-policy';
const COORDINATOR_SA = { namespace: NS, name: `${RELEASE}-coordinator` };
const AGENT_SA = { namespace: NS, name: RELEASE };
const LEASE = `${RELEASE}-coordinator`;
/** Another component's leader election, which RBAC lets create and update the namespace's Leases. */
const ELECTOR_SA = { namespace: NS, name: 'policy-leader-elector' };
const NODES = ['policy-n1', 'policy-n2'];
const TURN = JSON.stringify({ since: '2026-01-05T10:00:00Z', by: 'test' });
const ADVICE = 'kured-ts.dev/fleet-advice';
const OLD_HEALTH = 'kured-ts.dev/fleet-health';

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
}

let cluster: TestCluster;
let admin: { url: string; ca?: string; token?: string };
let coordinator: { url: string; ca?: string; token: string };
let agent: { url: string; ca?: string; token: string };
let elector: { url: string; ca?: string; token: string };

function render(): Manifest[] {
  return renderChart<Manifest>(RELEASE, NS, ['--set', 'configuration.drainFallback=delete']);
}

/** A token of `serviceAccount` bound to a pod of it on `node`. */
async function tokenOnNode(
  serviceAccount: { namespace: string; name: string },
  node: string,
): Promise<string> {
  return cluster.tokenInPod(serviceAccount, { name: `${serviceAccount.name}-${node}`, node });
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

interface LeaseShape {
  metadata: { annotations?: Record<string, string>; labels?: Record<string, string> };
  spec: Record<string, unknown>;
}
/** A PUT of the coordinator's Lease as it is now (read as the admin), changed. */
async function leasePut(change: (current: LeaseShape) => LeaseShape): Promise<Parameters<typeof send>[1]> {
  const current = await send(admin, { method: 'GET', path: leasePath(LEASE) });
  if (current.status !== 200) throw new Error(`GET ${LEASE}: ${why(current)}`);
  return { method: 'PUT', path: leasePath(LEASE), body: change(current.body as LeaseShape) };
}
const withSpec =
  (spec: Record<string, unknown>) =>
  (l: LeaseShape): LeaseShape => ({ ...l, spec: { ...l.spec, ...spec } });
const withAnnotations =
  (annotations: Record<string, string | null>) =>
  (l: LeaseShape): LeaseShape => {
    const next = Object.entries({ ...l.metadata.annotations, ...annotations }).filter(
      (e): e is [string, string] => e[1] !== null,
    );
    return { ...l, metadata: { ...l.metadata, annotations: Object.fromEntries(next) } };
  };
/** A JSON object of exactly `bytes` bytes. */
const adviceOf = (bytes: number, filler = 'x'): string =>
  `{"hold":"${filler.repeat((bytes - 11) / Buffer.byteLength(filler))}"}`;

/** Why the API server refused (the Status message), or the status code alone. */
const why = (answer: Answer): string =>
  `${answer.status} ${(answer.body as { message?: string } | undefined)?.message ?? ''}`;

/** The RBAC of another component's leader election: create, get and update the namespace's Leases. */
function electorRbac(): Manifest[] {
  const { name, namespace } = ELECTOR_SA;
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name, namespace },
      rules: [
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create', 'get', 'update'] },
      ],
    } as Manifest,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    } as Manifest,
  ];
}

/**
 * Sends `probe` once a second of real time until it is refused (kube-apiserver loads a new admission
 * policy asynchronously); `undo` reverts a probe that was admitted.
 */
async function untilRefused(
  what: string,
  probe: () => Promise<Answer>,
  undo: () => Promise<unknown> = () => Promise.resolve(),
): Promise<void> {
  for (let i = 0; i < 60; i++) {
    const answer = await probe();
    if (answer.status === 403) return;
    if (answer.status < 300) await undo();
    await new Promise((r) => setTimeout(r, 1_000));
  }
  throw new Error(`the ${what} policy never took effect`);
}

beforeAll(async () => {
  cluster = TestCluster.real();
  const text = readFileSync(process.env.REAL_API_KUBECONFIG ?? '', 'utf8');
  admin = { ...cluster.server, token: /token: "([^"]+)"/.exec(text)?.[1] };
  // the coordinator's Lease as the version before issue 41 left it (its fleet health), with an
  // admin's note: written before the policies exist, as on an upgrade
  const before = lease(LEASE, 'kured-ts-coordinator-1_ef56') as LeaseShape;
  const seeded = withAnnotations({
    [OLD_HEALTH]: JSON.stringify({ total: 2, count: 0, unhealthy: [] }),
    'example.com/owner': 'team-a',
  })(before);
  const created = await send(admin, { method: 'POST', path: leasePath(), body: seeded });
  if (created.status !== 201) throw new Error(`seeding ${LEASE}: ${why(created)}`);
  for (const m of [...render(), ...electorRbac()]) await cluster.apply(m);
  for (const name of NODES)
    await cluster.create<V1Node>('nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name } });
  coordinator = { ...cluster.server, token: await tokenOnNode(COORDINATOR_SA, NODES[0]!) };
  agent = { ...cluster.server, token: await tokenOnNode(AGENT_SA, NODES[0]!) };
  elector = { ...cluster.server, token: await tokenOnNode(ELECTOR_SA, NODES[1]!) };
  const cordon = mergePatch(`/api/v1/nodes/${NODES[1]!}`, { spec: { unschedulable: true } });
  await untilRefused(
    "coordinator's nodes",
    () => send(coordinator, cordon),
    () => cluster.patch('nodes', undefined, NODES[1]!, { spec: { unschedulable: null } }),
  );
  await untilRefused(
    "coordinator's lease",
    () => send(coordinator, { method: 'POST', path: leasePath(), body: lease('kube-scheduler-policy', 'x') }),
    () => send(admin, { method: 'DELETE', path: leasePath('kube-scheduler-policy') }),
  );
  // an unchanged PUT: admitted, it changes nothing
  await untilRefused('lease-writer', async () => send(admin, await leasePut((l) => l)));
}, 180_000);

afterAll(async () => {
  for (const name of [LEASE, 'kube-scheduler-policy', 'other-component-policy'])
    await send(admin, { method: 'DELETE', path: leasePath(name) });
  await cluster.close();
});

describe('on a real kube-apiserver, the coordinator', () => {
  it('sets and removes the turn annotation on any node, and takes over and renews its own Lease', async () => {
    for (const node of NODES) {
      expect(why(await send(coordinator, turnOn(node, TURN)))).toMatch(/^200/);
      expect(why(await send(coordinator, turnOn(node, null)))).toMatch(/^200/);
    }
    const current = await send(coordinator, { method: 'GET', path: leasePath(LEASE) });
    expect(current.status).toBe(200);
    const spec = { holderIdentity: 'b', leaseDurationSeconds: 30 };
    const keeping: LeaseShape = { ...(current.body as LeaseShape), spec };
    // the version before left its fleet health on the Lease, which older agents trust while the
    // DaemonSet rolls: a renewal that keeps it is refused, the coordinator's own (without it) is not
    expect(why(await send(coordinator, { method: 'PUT', path: leasePath(LEASE), body: keeping }))).toMatch(
      /^403 .*removes kured-ts.dev\/fleet-health from its Lease in each write/,
    );
    const renewed = withAnnotations({ [OLD_HEALTH]: null })(keeping);
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

const since = '2026-01-05T10:00:00Z';
const TURN_REFUSED =
  /^403 .*writes the turn of node policy-n2 only as \{"since","by"\} or \{"lapsed":\{"since","by","at"\}\}, at most 300 bytes/;

describe('on a real kube-apiserver, the coordinator policy bounds the turn annotation', () => {
  it.each<[string, string | null, RegExp]>([
    ['admits a turn', TURN, /^200/],
    [
      "admits a turn with milliseconds, as the coordinator's clock writes them",
      formatTurn({ since: '2026-01-05T10:00:00.123Z', by: 'kured-ts-coordinator-5d8f7-x2x9z_ab12cd34' }),
      /^200/,
    ],
    ['admits a turn given by a holder of 128 characters', formatTurn({ since, by: 'c'.repeat(128) }), /^200/],
    [
      'admits a lapsed turn',
      formatLapsedTurn({ turn: { since, by: 'kured-ts-coordinator-0_ab12' }, at: '2026-01-05T10:00:30.5Z' }),
      /^200/,
    ],
    ["admits the turn's removal", null, /^200/],
    ['refuses a turn of 200 KB', formatTurn({ since, by: 'x'.repeat(200 * 1024) }), TURN_REFUSED],
    ['refuses a value that is not a turn at all', '{"nodeID":"manual"}', TURN_REFUSED],
    [
      'refuses a turn given by a holder of 129 characters',
      formatTurn({ since, by: 'c'.repeat(129) }),
      TURN_REFUSED,
    ],
    ['refuses a turn with a field more', JSON.stringify({ since, by: 'c', reason: 'go now' }), TURN_REFUSED],
    [
      'refuses a turn with an escaped quote in its holder',
      formatTurn({ since, by: 'c" ,"x":"y' }),
      TURN_REFUSED,
    ],
    ['refuses a turn whose since is not a time', formatTurn({ since: 'tonight', by: 'c' }), TURN_REFUSED],
    [
      'refuses a lapsed turn without its time',
      JSON.stringify({ lapsed: { since, by: 'kured-ts-coordinator-0_ab12' } }),
      TURN_REFUSED,
    ],
  ])('%s', async (_name, value, answer) => {
    expect(why(await send(coordinator, turnOn(NODES[1]!, value)))).toMatch(answer);
  });
});

describe('on a real kube-apiserver, the coordinator policy bounds what the coordinator writes on its Lease', () => {
  // in order: each admitted write is the Lease the next row changes
  it.each<[string, (l: LeaseShape) => LeaseShape, RegExp]>([
    [
      'admits its renewal for 30 s',
      withSpec({ holderIdentity: 'kured-ts-coordinator-0_ab12', leaseDurationSeconds: 30 }),
      /^200/,
    ],
    ['admits a lease duration of 1 s', withSpec({ leaseDurationSeconds: 1 }), /^200/],
    [
      'admits its release on SIGTERM: no holder, 1 s',
      withSpec({ holderIdentity: '', leaseDurationSeconds: 1 }),
      /^200/,
    ],
    [
      'admits a holder of 128 characters',
      withSpec({ holderIdentity: 'c'.repeat(128), leaseDurationSeconds: 30 }),
      /^200/,
    ],
    ['admits its advice, a JSON object', withAnnotations({ [ADVICE]: '{"hold":["n3"]}' }), /^200/],
    ['admits advice of exactly 2048 bytes', withAnnotations({ [ADVICE]: adviceOf(2048) }), /^200/],
    [
      'refuses a lease duration of 2147483647 s',
      withSpec({ leaseDurationSeconds: 2147483647 }),
      /^403 .*leaseDurationSeconds from 1 to 60, not 2147483647/,
    ],
    // kube's own validation refuses it first
    [
      'refuses a lease duration of 0 s',
      withSpec({ leaseDurationSeconds: 0 }),
      /^422 .*must be greater than 0/,
    ],
    [
      'refuses a lease duration of 61 s',
      withSpec({ leaseDurationSeconds: 61 }),
      /^403 .*from 1 to 60, not 61/,
    ],
    [
      'refuses a holder of 100 KB',
      withSpec({ holderIdentity: 'c'.repeat(100 * 1024) }),
      /^403 .*holderIdentity of at most 128 characters, not 102400/,
    ],
    [
      'refuses a holder of 129 characters',
      withSpec({ holderIdentity: 'c'.repeat(129) }),
      /^403 .*holderIdentity of at most 128 characters, not 129/,
    ],
    [
      'refuses advice of 2049 bytes',
      withAnnotations({ [ADVICE]: adviceOf(2049) }),
      /^403 .*kured-ts.dev\/fleet-advice\) as a JSON object of at most 2048 bytes/,
    ],
    [
      'refuses advice of 1,111 characters but 2,211 bytes',
      withAnnotations({ [ADVICE]: adviceOf(2211, 'ü') }),
      /^403 .*at most 2048 bytes/,
    ],
    [
      'refuses advice that is no JSON object',
      withAnnotations({ [ADVICE]: 'hold' }),
      /^403 .*as a JSON object/,
    ],
    [
      'refuses the fleet health of the version before, rewritten',
      withAnnotations({ [OLD_HEALTH]: JSON.stringify({ total: 2, count: 2, unhealthy: [] }) }),
      /^403 .*only the annotation kured-ts.dev\/fleet-advice \(and remove kured-ts.dev\/fleet-health\)/,
    ],
    [
      'refuses another annotation',
      withAnnotations({ 'example.com/note': 'x' }),
      /^403 .*only the annotation kured-ts.dev\/fleet-advice/,
    ],
    [
      "refuses an admin's annotation removed",
      withAnnotations({ 'example.com/owner': null }),
      /^403 .*only the annotation/,
    ],
    [
      'refuses a label',
      (l) => ({ ...l, metadata: { ...l.metadata, labels: { 'example.com/team': 'x' } } }),
      /^403 .*may not change the labels, owners or finalizers of its Lease/,
    ],
  ])('%s', async (_name, change, answer) => {
    expect(why(await send(coordinator, await leasePut(change)))).toMatch(answer);
  });
});

describe("on a real kube-apiserver, only the coordinator writes its Lease: another user's create and update are refused, a delete is not", () => {
  const WRITER_REFUSED =
    /^403 .*only the kured-ts coordinator \(system:serviceaccount:kube-system:kured-ts-policy-coordinator\) may create or update the Lease kube-system\/kured-ts-policy-coordinator, not /;
  type Who = () => Parameters<typeof send>[0];
  const create = (): Promise<Parameters<typeof send>[1]> =>
    Promise.resolve({ method: 'POST', path: leasePath(), body: lease(LEASE, 'mallory') });
  const takeOver = (): Promise<Parameters<typeof send>[1]> =>
    leasePut(withSpec({ holderIdentity: 'mallory' }));
  const remove = (): Promise<Parameters<typeof send>[1]> =>
    Promise.resolve({ method: 'DELETE', path: leasePath(LEASE) });
  // in order: the Lease exists until the admin deletes it, and the coordinator creates it again
  it.each<[string, Who, () => Promise<Parameters<typeof send>[1]>, RegExp]>([
    [
      'refuses another ServiceAccount that RBAC lets write Leases, taking it over',
      () => elector,
      takeOver,
      WRITER_REFUSED,
    ],
    [
      "refuses the agent's token taking it over (RBAC already)",
      () => agent,
      takeOver,
      /^403 .*cannot update resource "leases"/,
    ],
    ['refuses an admin taking it over', () => admin, takeOver, WRITER_REFUSED],
    ['admits an admin deleting it (a recovery)', () => admin, remove, /^200/],
    [
      'refuses another ServiceAccount that RBAC lets write Leases, creating it',
      () => elector,
      create,
      WRITER_REFUSED,
    ],
    [
      "refuses the agent's token creating it (RBAC already)",
      () => agent,
      create,
      /^403 .*cannot create resource "leases"/,
    ],
    ['admits the coordinator creating it', () => coordinator, create, /^201/],
    [
      'leaves the other Leases of the namespace to RBAC',
      () => elector,
      () =>
        Promise.resolve({ method: 'POST', path: leasePath(), body: lease('other-component-policy', 'x') }),
      /^201/,
    ],
  ])('%s', async (_name, who, call, answer) => {
    expect(why(await send(who(), await call()))).toMatch(answer);
  });
});

describe('on a real kube-apiserver, the agent', () => {
  it("reads the coordinator's Lease and watches its own Node, and no other Lease", async () => {
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

  it('is refused a status over its bound of 4096 bytes, naming it', async () => {
    const status = JSON.stringify({ phase: 'idle', reason: 'x'.repeat(200_000) });
    const answer = await send(agent, own({ 'kured-ts.dev/status': status }));
    expect(answer.status).toBe(403);
    expect(why(answer)).toMatch(/within its bound in bytes \(kured-ts.dev\/status 4096/);
  });

  it("lifts no cordon of an operator's, and its own as its cycle record says", async () => {
    const uncordon = mergePatch(`/api/v1/nodes/${NODES[0]!}`, { spec: { unschedulable: null } });
    await cluster.patch('nodes', undefined, NODES[0]!, { spec: { unschedulable: true } });
    const refused = await send(agent, uncordon);
    expect(refused.status).toBe(403);
    expect(why(refused)).toMatch(/may lift only a cordon its cycle or quarantine record says it set/);
    const record = JSON.stringify({ bootID: 'b', cordoned: true, attempts: 0, started: since });
    expect(why(await send(agent, own({ 'kured-ts.dev/cycle': record })))).toMatch(/^200/);
    expect(why(await send(agent, uncordon))).toMatch(/^200/);
    expect(why(await send(agent, own({ 'kured-ts.dev/cycle': null })))).toMatch(/^200/);
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
