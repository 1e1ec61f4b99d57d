// Issue 58: docs/migration.md walked end to end on a real kube-apiserver. A kured user's chart values
// go through `kured-ts migrate-values` (and again over its own output), the chart is installed from
// the output beside kured's DaemonSet and on kured's lock, `kured-ts check` judges a node with the
// deployed agent's settings, a first `kured-ts reboot --now` is carried out by a real agent process
// on a token bound to its pod (this test plays the host and the kubelet), and the rollback (pause,
// uninstall, `kured-ts cleanup`) leaves the nodes and kured's DaemonSet with nothing of kured-ts's.
// The commands' output is the transcript in docs/migration.md: the test fails when the page and
// the commands disagree (WRITE_TRANSCRIPT=1 rewrites the page's block).
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Command } from 'commander';
import { registerCheck } from '../../src/cli/check-command.js';
import { registerCleanup } from '../../src/cli/cleanup.js';
import { registerMigrateValues } from '../../src/cli/migrate-values.js';
import { registerPause } from '../../src/cli/pause.js';
import { registerReboot } from '../../src/cli/reboot.js';
import type { CommandDeps } from '../../src/cli/shared.js';
import { connectKube } from '../../src/kube/client.js';
import type { V1DaemonSet, V1Node } from '../../src/kube/kube.js';
import { entriesOf, parseLockAnnotation } from '../../src/lock/kured-lock-format.js';
import {
  chartAgentArgs,
  hostAgentArgs,
  renderChart,
  spawnAgent,
  tokenKubeconfig,
} from '../contract/chart-render.js';
import { TestCluster } from '../contract/cluster.js';
import { commandLine } from '../fakes/command-line.js';
import { instantClock } from '../fakes/fake-clock.js';

const NS = 'kube-system';
const RELEASE = 'kured-ts';
const LOCK = 'weave.works/kured-node-lock';
const NODES = ['mig-n1', 'mig-n2'];
const FIRST = NODES[0]!;
/** A Monday night inside the window the kured values set (22:00 to 05:00, Europe/Berlin, Monday to Thursday). */
const CHECKED_AT = '2026-11-30T22:30:00Z';
/** What a kured user with kube-prometheus-stack installed kured's chart with. */
const KURED_VALUES = `configuration:
  concurrency: 1
  startTime: '22:00'
  endTime: '05:00'
  timeZone: Europe/Berlin
  rebootDays: [mo, tu, we, th]
  prometheusUrl: http://prometheus-operated.monitoring.svc:9090
  alertFilterRegexp: ^(Watchdog|InfoInhibitor)$
  preferNoScheduleTaint: weave.works/kured-node-reboot
  drainTimeout: 30m
nodeSelector:
  kubernetes.io/os: linux
`;

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: { template?: { spec?: { containers?: { args?: string[] }[] } } };
}

let cluster: TestCluster;
let dir: string;
let manifests: Manifest[] = [];
let agent: ChildProcess | undefined;
let hostWatch: NodeJS.Timeout | undefined;
const transcript: string[] = [];

beforeAll(() => {
  cluster = TestCluster.real();
  dir = mkdtempSync(join(tmpdir(), 'kured-ts-migration-'));
});

afterAll(async () => {
  if (hostWatch !== undefined) clearInterval(hostWatch);
  agent?.kill('SIGKILL');
  await cluster.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs a kured-ts command as a user types it, with the admin's kubeconfig; records it in the transcript. */
async function kuredTs(
  register: (program: Command, deps: CommandDeps) => unknown,
  args: string[],
  keep: (line: string) => boolean = () => true,
): Promise<{ code: number | undefined; out: string[] }> {
  const out: string[] = [];
  const cli = commandLine([register], {
    env: {},
    out: (l) => out.push(l),
    err: (l) => out.push(l),
    connect: () => connectKube({ kubeconfig: process.env.REAL_API_KUBECONFIG ?? '' }),
    clock: instantClock(CHECKED_AT),
  });
  const code = await cli(args);
  const shown = args.map((a) => (a.includes(' ') ? `"${a}"` : a.replace(`${dir}/`, '')));
  transcript.push(`$ kured-ts ${shown.join(' ')}`, ...out.filter(keep), `(exit ${String(code ?? 0)})`, '');
  return { code, out };
}

/** kured's DaemonSet as kured's chart left it, carrying kured's lock. */
async function installKured(): Promise<void> {
  const labels = { 'app.kubernetes.io/name': 'kured' };
  const kured = {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'kured', namespace: NS, labels },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: { containers: [{ name: 'kured', image: 'ghcr.io/kubereboot/kured:1.17.1' }] },
      },
    },
  };
  await cluster.apply(kured);
  for (const name of NODES) {
    await cluster.create<V1Node>('nodes', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels: { 'kubernetes.io/os': 'linux' } },
    });
    await cluster.patchStatus('nodes', undefined, name, {
      nodeInfo: { bootID: 'boot-1', kernelVersion: '6.1.0-1', osImage: 'Debian 12' },
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ready' }],
    });
  }
}

/** A kubeconfig with a token of the agent's ServiceAccount bound to its pod on `node`. */
async function agentKubeconfig(node: string): Promise<string> {
  const ds = await cluster.get<V1DaemonSet>('daemonsets', NS, RELEASE);
  const owner = {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    name: RELEASE,
    uid: ds?.metadata?.uid ?? '',
    controller: true,
  };
  const token = await cluster.tokenInPod(
    { namespace: NS, name: RELEASE },
    { name: `${RELEASE}-${node}`, node, labels: { 'app.kubernetes.io/name': 'kured-ts' }, owner },
  );
  return tokenKubeconfig(join(dir, `${node}.kubeconfig`), cluster.server, token);
}

function startAgent(node: string, kubeconfig: string): void {
  agent = spawnAgent(hostAgentArgs(chartAgentArgs(manifests), node, dir), kubeconfig);
}

/** Plays the host of `node`: once its reboot command ran, the agent dies, the bootID changes, the agent starts again. */
function playHost(node: string, kubeconfig: string): void {
  let rebooted = false;
  hostWatch = setInterval(() => {
    if (rebooted || !existsSync(join(dir, `${node}.rebooting`))) return;
    rebooted = true;
    agent?.kill('SIGKILL');
    void cluster.patchStatus('nodes', undefined, node, { nodeInfo: { bootID: 'boot-2' } }).then(() => {
      startAgent(node, kubeconfig);
    });
  }, 100);
}

async function lockHolders(): Promise<string[]> {
  const text = (await cluster.get<V1DaemonSet>('daemonsets', NS, 'kured'))?.metadata?.annotations?.[LOCK];
  return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID);
}

/** Keys kured-ts writes (its own, and the autoscaler marks, which no one else set here). */
function ours(meta: V1Node['metadata']): string[] {
  return [...Object.keys(meta?.labels ?? {}), ...Object.keys(meta?.annotations ?? {})].filter(
    (key) =>
      key.startsWith('kured-ts.dev/') ||
      key === 'karpenter.sh/do-not-disrupt' ||
      key.startsWith('cluster-autoscaler'),
  );
}

/** Every key of ours on the nodes and on kured's DaemonSet. */
async function oursLeft(): Promise<string[]> {
  const left: string[] = [];
  for (const name of NODES)
    left.push(
      ...ours((await cluster.get<V1Node>('nodes', undefined, name))?.metadata).map((k) => `${name}: ${k}`),
    );
  const ds = await cluster.get<V1DaemonSet>('daemonsets', NS, 'kured');
  for (const key of Object.keys(ds?.metadata?.annotations ?? {}))
    if (key.startsWith('kured-ts.dev/')) left.push(`daemonset/kured: ${key}`);
  return left;
}

/** Polls `done` every 250 ms for at most 2 minutes. */
async function until(done: () => Promise<boolean>, what: string): Promise<void> {
  for (let waited = 0; !(await done()); waited += 250) {
    if (waited > 120_000) throw new Error(`not within 2 minutes: ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The page's transcript block. */
const PAGE = 'docs/migration.md';
const BLOCK = /(## The migration, walked on a real kube-apiserver\n[\s\S]*?```text\n)([\s\S]*?)(```)/;

it('walks the migration: kured values in, migrate-values, install, check, a first reboot --now, rollback clean', async () => {
  await installKured();
  const kuredValues = join(dir, 'kured-values.yaml');
  writeFileSync(kuredValues, KURED_VALUES);

  // 3. convert, then again over the output: it only checks it
  const converted = await kuredTs(
    registerMigrateValues,
    [
      'migrate-values',
      kuredValues,
      '--kured-release',
      'kured',
      '--kured-namespace',
      NS,
      '--image',
      'registry.example.com/kured-ts:0.1.0',
    ],
    (l) => l.startsWith('#') || l.startsWith('migrated'),
  );
  expect(converted.code).toBe(0);
  const output = join(dir, 'kured-ts-values.yaml');
  writeFileSync(
    output,
    converted.out.filter((l) => !l.startsWith('migrated') && !l.startsWith('kured-ts values')).join('\n') +
      '\n',
  );
  expect((await kuredTs(registerMigrateValues, ['migrate-values', output])).code).toBe(0);

  // 5. install from the output, beside kured, on kured's lock
  manifests = renderChart<Manifest>(RELEASE, NS, ['-f', output]);
  for (const m of manifests) await cluster.apply(m);
  transcript.push(`$ helm install ${RELEASE} charts/kured-ts -n ${NS} -f kured-ts-values.yaml`, '');
  expect(hostAgentArgs(chartAgentArgs(manifests), FIRST, dir)).toEqual(
    expect.arrayContaining(['--ds-name=kured', `--ds-namespace=${NS}`]),
  );

  // 6. check judges with the deployed agent's settings (its window, its Prometheus)
  const checked = await kuredTs(registerCheck, ['check', '--node', FIRST]);
  expect(checked.out.join('\n')).toContain('configuration: the deployed agent');
  expect(checked.out.join('\n')).toContain('prometheus-operated.monitoring.svc');

  // 8. the first reboot, now: through kured's lock, by the deployed agent
  expect(
    (await kuredTs(registerReboot, ['reboot', FIRST, '--reason', 'first kured-ts reboot', '--now'])).code,
  ).toBe(0);
  const kubeconfig = await agentKubeconfig(FIRST);
  playHost(FIRST, kubeconfig);
  startAgent(FIRST, kubeconfig);
  await until(async () => {
    const node = await cluster.get<V1Node>('nodes', undefined, FIRST);
    const back = node?.status?.nodeInfo?.bootID === 'boot-2' && node.spec?.unschedulable !== true;
    return back && (await lockHolders()).length === 0;
  }, "the first node rebooted (a new boot ID), uncordoned, and kured's lock free");

  transcript.push(
    `(the agent on ${FIRST}: taint, kured's lock, cordon, drain, reboot, boot-1 -> boot-2, Ready, uncordon, release)`,
    '',
  );

  // rollback: pause, uninstall, cleanup
  expect((await kuredTs(registerPause, ['pause', '--reason', 'rollback', '--by', 'sre'])).code).toBe(0);
  agent?.kill('SIGKILL');
  for (const m of [...manifests].reverse()) await cluster.remove(m);
  await cluster.forceDelete('pods', NS, `${RELEASE}-${FIRST}`); // the DaemonSet's pod, gone with it
  transcript.push(`$ helm uninstall ${RELEASE} -n ${NS} --wait`, '');
  expect((await kuredTs(registerCleanup, ['cleanup', '--dry-run'])).code).toBe(0);
  expect((await kuredTs(registerCleanup, ['cleanup'])).code).toBe(0);
  expect(await oursLeft()).toEqual([]);
  expect(
    (await cluster.get<V1DaemonSet>('daemonsets', NS, 'kured'))?.metadata?.annotations ?? {},
  ).not.toHaveProperty(LOCK);

  const text = transcript
    .join('\n')
    .replaceAll(`${dir}/`, '')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>');
  const page = readFileSync(PAGE, 'utf8');
  if (process.env.WRITE_TRANSCRIPT === '1')
    writeFileSync(
      PAGE,
      page.replace(BLOCK, (_all, head: string, _old, end: string) => `${head}${text}\n${end}`),
    );
  else expect(BLOCK.exec(page)?.[2]).toBe(`${text}\n`);
}, 300_000);
