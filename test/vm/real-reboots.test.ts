// Real reboots of real kernels (`npm run test:vm`, scripts/test-vm.mjs, which boots the nodes as
// QEMU VMs with real kubelets and runs this file): the chart installed with helm as two releases
// that share one lock — one node reboots by `systemctl reboot` through nsenter (rebootMethod
// command), the other by SIGRTMIN+5 to the host's PID 1 (rebootMethod signal) — the sentinel
// created on every guest at once, and then, from the guests (through the QEMU guest agent) and from
// the cluster:
// - every node drained through its real kubelet: a probe pod evicted from it got SIGTERM and its
//   grace period (it finished its shutdown before the reboot);
// - every kernel really rebooted: the guest's boot_id and the Node's bootID both changed, to the
//   same new value, and the boot before ended by the method of that node;
// - the agent's pod restarted after the reboot and finished the cycle: uncordoned, lock released,
//   history recorded with the kernel before and after;
// - never more nodes down (cordoned or not Ready) than --concurrency, sampled throughout;
// - out of the load balancers (the label) during its cycle only;
// - the first node, whose dpkg lock a process holds for a minute, waits for it before its cycle.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { V1DaemonSet, V1Node, V1Pod } from '../../src/kube/kube.js';
import { entriesOf, parseLockAnnotation } from '../../src/lock/kured-lock-format.js';
import { CYCLE_LABEL } from '../../src/node/cycle.js';
import { EXCLUDE_LB_LABEL } from '../../src/node/cycle-marks.js';
import { HISTORY_ANNOTATION, parseHistory, type HistoryRecord } from '../../src/node/history.js';
import { STATUS_ANNOTATION, parseStatus } from '../../src/node/status.js';
import { TestCluster } from '../contract/cluster.js';
import { GuestAgent } from './guest-agent.js';

interface VmNode {
  name: string;
  qga: string;
  console: string;
}

const NS = 'kube-system';
const PROBE_NS = 'vm-probe';
const LOCK_DS = 'kured-ts';
const LOCK = 'weave.works/kured-node-lock';
const TAINT = 'weave.works/kured-node-reboot';
const VM_TAINT = 'kured-ts.dev/vm-test';
const CONCURRENCY = 1;
const SENTINEL = '/var/run/reboot-required';
const PROBE_DIR = '/var/lib/kured-vm-probe';
/**
 * One node's cycle (lock, drain, reboot, kubelet and agent back, uncordon) took 6.5 min under TCG
 * with the host's 2 cores shared (load 15); the nodes go one at a time. Twice that, and a margin.
 */
const CYCLES_TIMEOUT_MS = 30 * 60_000;
const SETTLE_TIMEOUT_MS = 6 * 60_000;

const vms = JSON.parse(process.env.VM_NODES ?? '[]') as VmNode[];
const [image, tag] = (process.env.VM_IMAGE ?? 'localhost/kured-ts:vm').split(/:(?=[^:]*$)/) as [
  string,
  string,
];
const guests = new Map(vms.map((vm) => [vm.name, new GuestAgent(vm.qga)]));
/** Which node reboots by which method, and the release that does it. */
const METHODS = [
  { release: 'kured-ts', method: 'command' },
  { release: 'kured-ts-signal', method: 'signal' },
] as const;

let cluster: TestCluster;
let dir: string;
const violations: string[] = [];
/** Nodes the sampler saw labelled out of the load balancers (--exclude-from-lb, on by default). */
const outOfLb = new Set<string>();
/** Nodes the sampler saw waiting for the package manager (the dpkg lock held on the first node). */
const waitedForDpkg = new Set<string>();
/** How long a process holds dpkg's lock on the first node (rebootMethod command) from the start. */
const DPKG_HOLD_S = 60;
let rebootedKernels = 0;

function tool(name: 'helm' | 'kubectl'): string {
  return spawnSync(process.execPath, ['scripts/ensure-helm.mjs', name], { encoding: 'utf8' }).stdout.trim();
}

function run(cmd: string, args: readonly string[], input?: string): string {
  const out = spawnSync(cmd, args, {
    encoding: 'utf8',
    input,
    env: { ...process.env, KUBECONFIG: process.env.REAL_API_KUBECONFIG },
  });
  if (out.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${out.stderr}${out.stdout}`);
  return out.stdout;
}

function guest(node: string): GuestAgent {
  const agent = guests.get(node);
  if (agent === undefined) throw new Error(`no guest agent for ${node}`);
  return agent;
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 2_000));
  }
}

/** The chart's values for one release: its node, its method, the image the guests imported. */
function values(index: number): string {
  const { method } = METHODS[index] ?? METHODS[0];
  const node = vms[index]?.name ?? '';
  const tolerations = [
    { key: VM_TAINT, operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' },
  ];
  const v = {
    image: { repository: image, tag, pullPolicy: 'Never' },
    configuration: {
      period: '15s',
      concurrency: CONCURRENCY,
      rebootMethod: method,
      ...(index === 0 ? {} : { dsName: LOCK_DS, dsNamespace: NS }),
    },
    nodeSelector: { 'kubernetes.io/hostname': node },
    tolerations,
    // Node.js starts slowly on an emulated CPU: no restart for a slow first answer
    livenessProbe: { initialDelaySeconds: 120, periodSeconds: 30, timeoutSeconds: 10, failureThreshold: 5 },
    readinessProbe: { initialDelaySeconds: 5, periodSeconds: 5, timeoutSeconds: 10, failureThreshold: 3 },
    coordinator: index === 0 ? { enabled: true, replicas: 1, tolerations } : { enabled: false },
  };
  const file = join(dir, `values-${index}.json`);
  writeFileSync(file, JSON.stringify(v));
  return file;
}

/** A pod that logs SIGTERM to the node's disk, then takes 5 s of its 30 s grace period to exit. */
function probe(node: string): object {
  const script = `const fs = require('fs');
const f = '/probe/' + process.env.POD_NAME + '.log';
const w = (s) => fs.appendFileSync(f, Date.now() + ' ' + s + '\\n');
w('started');
process.on('SIGTERM', () => {
  w('SIGTERM');
  let n = 0;
  setInterval(() => { n++; w('stopping ' + n); if (n === 5) { w('clean exit'); process.exit(0); } }, 1000);
});
setInterval(() => {}, 1 << 30);`;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: `probe-${node}`, namespace: PROBE_NS },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: `probe-${node}` } },
      template: {
        metadata: { labels: { app: `probe-${node}`, role: 'sigterm-probe' } },
        spec: {
          terminationGracePeriodSeconds: 30,
          tolerations: [{ key: VM_TAINT, operator: 'Exists', effect: 'NoSchedule' }],
          affinity: {
            nodeAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                {
                  weight: 100,
                  preference: {
                    matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [node] }],
                  },
                },
              ],
            },
          },
          containers: [
            {
              name: 'probe',
              image: `${image}:${tag}`,
              imagePullPolicy: 'Never',
              command: ['node', '-e', script],
              securityContext: { runAsUser: 0 },
              env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
              volumeMounts: [{ name: 'probe', mountPath: '/probe' }],
            },
          ],
          volumes: [{ name: 'probe', hostPath: { path: PROBE_DIR, type: 'DirectoryOrCreate' } }],
        },
      },
    },
  };
}

interface Before {
  bootID: string;
  kernel: string;
  agentPod: string;
  agentContainer: string;
  agentRestarts: number;
}

async function nodeOf(name: string): Promise<V1Node> {
  const node = await cluster.get<V1Node>('nodes', undefined, name);
  if (node === undefined) throw new Error(`node ${name} not found`);
  return node;
}

const ready = (n: V1Node): boolean =>
  n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

async function agentPod(node: string): Promise<V1Pod | undefined> {
  return (await cluster.list<V1Pod>('pods', NS)).find(
    (p) =>
      p.spec?.nodeName === node &&
      p.metadata?.ownerReferences?.some((o) => o.kind === 'DaemonSet') === true &&
      p.status?.containerStatuses?.[0]?.ready === true,
  );
}

async function holders(): Promise<string[]> {
  const text = (await cluster.get<V1DaemonSet>('daemonsets', NS, LOCK_DS))?.metadata?.annotations?.[LOCK];
  return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID);
}

/** Samples the nodes and the lock: never more than CONCURRENCY nodes down or holding the lock. */
/** What a sample of a node shows beyond its cordon: the load-balancer label, a wait for dpkg. */
function observe(n: V1Node): void {
  const name = n.metadata?.name ?? '';
  if (n.metadata?.labels?.[EXCLUDE_LB_LABEL] !== undefined) outOfLb.add(name);
  const status = parseStatus(n.metadata?.annotations?.[STATUS_ANNOTATION]);
  if (status?.phase === 'blocked' && /^package manager at work: dpkg/.test(status.reason))
    waitedForDpkg.add(name);
}

function sample(): { stop: () => void; samples: () => number } {
  let count = 0;
  let busy = false;
  const names = vms.map((vm) => vm.name);
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void (async () => {
      const nodes = (await cluster.list<V1Node>('nodes')).filter((n) =>
        names.includes(n.metadata?.name ?? ''),
      );
      nodes.forEach(observe);
      const down = nodes
        .filter((n) => n.spec?.unschedulable === true || !ready(n))
        .map((n) => n.metadata?.name);
      if (down.length > CONCURRENCY)
        violations.push(`${new Date().toISOString()}: ${down.join(', ')} down at once`);
      const held = await holders();
      if (held.length > CONCURRENCY)
        violations.push(`${new Date().toISOString()}: lock held by ${held.join(', ')} at once`);
      count++;
    })()
      .catch(() => undefined)
      .finally(() => (busy = false));
  }, 1_000);
  return {
    stop: () => {
      clearInterval(timer);
    },
    samples: () => count,
  };
}

/** What the guests and the cluster say when something went wrong. */
async function diagnose(): Promise<string> {
  const parts: string[] = [];
  for (const vm of vms) {
    const script =
      'for f in /var/log/pods/kube-system_kured-ts*/kured-ts/*.log; do echo "== $f"; tail -n 40 "$f"; done; ' +
      'echo "== kubelet"; journalctl -u kubelet -n 30 --no-pager -o cat; journalctl --list-boots --no-pager';
    const text = await guest(vm.name)
      .sh(script, 60_000)
      .then((r) => r.out + r.err)
      .catch((err: unknown) => `guest agent: ${String(err)}`);
    parts.push(`===== ${vm.name}\n${text}`);
  }
  const nodes = await cluster.list<V1Node>('nodes').catch(() => []);
  parts.push(
    ...nodes.map(
      (n) =>
        `${n.metadata?.name ?? ''}: unschedulable=${String(n.spec?.unschedulable)} ready=${ready(n)} ` +
        `boot=${n.status?.nodeInfo?.bootID ?? ''} labels=${JSON.stringify(n.metadata?.labels)}`,
    ),
  );
  return parts.join('\n');
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kured-ts-vm-test-'));
  cluster = TestCluster.real();
  if (vms.length === 0) throw new Error('VM_NODES is not set: run npm run test:vm');
  const ca = Buffer.from(process.env.REAL_API_CA ?? '', 'base64').toString('utf8');
  const kubectl = tool('kubectl');
  run(kubectl, ['create', 'namespace', PROBE_NS]);
  // a kube-apiserver of OpenShift's fork mounts this ConfigMap into every projected token volume
  // (its controller-manager may have made it already)
  const serviceCA = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'openshift-service-ca.crt', namespace: PROBE_NS },
    data: { 'service-ca.crt': ca },
  };
  run(kubectl, ['apply', '-f', '-'], JSON.stringify(serviceCA));
  const helm = tool('helm');
  for (const [index, { release }] of METHODS.entries()) {
    run(helm, ['install', release, 'charts/kured-ts', '--namespace', NS, '-f', values(index)]);
  }
  for (const vm of vms) run(kubectl, ['apply', '-f', '-'], JSON.stringify(probe(vm.name)));
  await until('an agent and a probe pod are Ready on every node', SETTLE_TIMEOUT_MS, async () => {
    const probes = await cluster.list<V1Pod>('pods', PROBE_NS);
    for (const vm of vms) {
      if ((await agentPod(vm.name)) === undefined) return undefined;
      const running = probes.some((p) => p.spec?.nodeName === vm.name && p.status?.phase === 'Running');
      if (!running) return undefined;
    }
    return true;
  }).catch(async (err: unknown) => {
    throw new Error(`${String(err)}\n${await diagnose()}`);
  });
}, SETTLE_TIMEOUT_MS + 120_000);

afterAll(() => {
  const results = process.env.VM_RESULTS;
  if (results !== undefined) {
    writeFileSync(
      results,
      JSON.stringify({
        nodes: vms.length,
        rebooted: rebootedKernels,
        outOfLb: outOfLb.size,
        waitedForDpkg: waitedForDpkg.size,
        violations,
      }),
    );
  }
  rmSync(dir, { recursive: true, force: true });
});

function agentContainer(pod: V1Pod | undefined): { pod: string; id: string; restarts: number } {
  const status = pod?.status?.containerStatuses?.[0];
  return {
    pod: pod?.metadata?.name ?? '',
    id: status?.containerID ?? '',
    restarts: status?.restartCount ?? 0,
  };
}

async function recordBefore(): Promise<Map<string, Before>> {
  const before = new Map<string, Before>();
  for (const vm of vms) {
    const node = await nodeOf(vm.name);
    const agent = agentContainer(await agentPod(vm.name));
    const bootID = await guest(vm.name).bootId();
    // the kubelet reports the kernel's boot_id as the Node's bootID
    expect(node.status?.nodeInfo?.bootID).toBe(bootID);
    before.set(vm.name, {
      bootID,
      kernel: (await guest(vm.name).output('uname -r')).trim(),
      agentPod: agent.pod,
      agentContainer: agent.id,
      agentRestarts: agent.restarts,
    });
  }
  return before;
}

/** The node's cycle is over: a history record of the boot it started on, uncordoned, unlabelled. */
async function finished(name: string, before: Before): Promise<HistoryRecord | undefined> {
  const node = await nodeOf(name);
  const record = parseHistory(node.metadata?.annotations?.[HISTORY_ANNOTATION]).find(
    (r) => r.bootIDBefore === before.bootID,
  );
  const labelled = node.metadata?.labels?.[CYCLE_LABEL] !== undefined;
  if (record === undefined || labelled || node.spec?.unschedulable === true) return undefined;
  return record;
}

/** A new boot_id in the guest, reported by the kubelet and recorded with the kernels. */
async function expectRebooted(name: string, was: Before, record: HistoryRecord | undefined): Promise<void> {
  const bootID = await until(`${name}'s guest agent answers`, SETTLE_TIMEOUT_MS, () => guest(name).bootId());
  if (bootID !== was.bootID) rebootedKernels++;
  const node = await nodeOf(name);
  expect({ node: name, changed: bootID !== was.bootID }).toEqual({ node: name, changed: true });
  expect(node.status?.nodeInfo?.bootID).toBe(bootID);
  expect(record).toMatchObject({
    result: 'success',
    bootIDBefore: was.bootID,
    bootIDAfter: bootID,
    kernelBefore: was.kernel,
    kernelAfter: (await guest(name).output('uname -r')).trim(),
  });
  expect(node.spec?.unschedulable).not.toBe(true);
  expect((node.spec?.taints ?? []).map((t) => t.key)).not.toContain(TAINT);
  // out of the load balancers during its cycle, back in after it
  expect({ node: name, labelledDuringCycle: outOfLb.has(name) }).toEqual({
    node: name,
    labelledDuringCycle: true,
  });
  expect(node.metadata?.labels?.[EXCLUDE_LB_LABEL]).toBeUndefined();
}

/** The agent's pod came back after the reboot (a new container of the same pod) and is Ready. */
async function expectAgentRestarted(name: string, was: Before): Promise<void> {
  const agent = agentContainer(
    await until(`${name}'s agent is Ready`, SETTLE_TIMEOUT_MS, () => agentPod(name)),
  );
  expect(agent.pod).toBe(was.agentPod);
  expect(agent.id).not.toBe(was.agentContainer);
  expect(agent.restarts).toBeGreaterThan(was.agentRestarts);
}

/** The boot before ended by this node's method: systemd logs the signal it received. */
async function expectMethod(name: string, method: string | undefined): Promise<void> {
  const signalled = await guest(name).sh(
    "journalctl -b -1 --no-pager -o cat _PID=1 | grep -c 'Received SIGRTMIN+5'",
  );
  expect({ node: name, method, bySignal: signalled.out.trim() !== '0' }).toEqual({
    node: name,
    method,
    bySignal: method === 'signal',
  });
}

/**
 * Holds dpkg's lock on the guest for DPKG_HOLD_S seconds, as an unattended-upgrades run would (a
 * process of its own, after this call returns); resolves once the lock is seen held, with the time
 * it will be released.
 */
async function holdDpkgLock(name: string): Promise<number> {
  const lock = '/var/lib/dpkg/lock-frontend';
  await guest(name).output(
    `setsid flock ${lock} sleep ${DPKG_HOLD_S} </dev/null >/dev/null 2>&1 & sleep 1; ! flock -n ${lock} true`,
  );
  return Date.now() + (DPKG_HOLD_S - 1) * 1000;
}

/** The node waited while dpkg held its lock: seen waiting for it, and it took the lock only after. */
function expectWaitedForDpkg(name: string, releasedAt: number, record: HistoryRecord | undefined): void {
  expect({ node: name, waitedForDpkg: waitedForDpkg.has(name) }).toEqual({ node: name, waitedForDpkg: true });
  expect(Date.parse(record?.lockedAt ?? '')).toBeGreaterThanOrEqual(releasedAt - 2_000);
}

/**
 * Drained through the kubelet: a probe pod on this node got SIGTERM and finished its shutdown (5 s
 * of its 30 s grace) on the boot before.
 */
async function expectDrained(name: string): Promise<void> {
  const logs = await guest(name).output(`cat ${PROBE_DIR}/*.log`);
  const btime = Number(/^btime (\d+)$/m.exec(await guest(name).output('cat /proc/stat'))?.[1]) * 1000;
  const lines = logs.split('\n').map((l) => l.split(' '));
  const sigterm = lines.find((l) => l[1] === 'SIGTERM');
  const clean = lines.find((l) => l.slice(1).join(' ') === 'clean exit');
  expect({ node: name, sigterm: sigterm !== undefined, clean: clean !== undefined }).toEqual({
    node: name,
    sigterm: true,
    clean: true,
  });
  expect(Number(clean?.[0])).toBeLessThan(btime);
}

it(
  'reboots every node for real, one at a time, by command and by signal, draining through the kubelet',
  async () => {
    const before = await recordBefore();
    const sampler = sample();
    // the first node (rebootMethod command: it can read its host's locks) is mid package run
    const dpkgNode = vms[0]?.name ?? '';
    const dpkgReleasedAt = await holdDpkgLock(dpkgNode);
    await Promise.all(vms.map((vm) => guest(vm.name).output(`touch ${SENTINEL}`)));
    const started = Date.now();
    const records = new Map<string, HistoryRecord>();
    try {
      await until('every node rebooted, uncordoned and the lock free', CYCLES_TIMEOUT_MS, async () => {
        for (const vm of vms) {
          const record = records.get(vm.name) ?? (await finished(vm.name, before.get(vm.name) as Before));
          if (record !== undefined) records.set(vm.name, record);
        }
        return records.size === vms.length && (await holders()).length === 0 ? true : undefined;
      });
    } catch (err) {
      throw new Error(`${String(err)}\n${await diagnose()}`);
    } finally {
      sampler.stop();
    }
    process.stdout.write(
      `real reboots: every cycle done in ${Math.round((Date.now() - started) / 1000)} s, ${sampler.samples()} samples\n`,
    );
    for (const [index, vm] of vms.entries()) {
      const was = before.get(vm.name) as Before;
      await expectRebooted(vm.name, was, records.get(vm.name));
      await expectAgentRestarted(vm.name, was);
      await expectMethod(vm.name, METHODS[index]?.method);
      await expectDrained(vm.name);
    }
    expectWaitedForDpkg(dpkgNode, dpkgReleasedAt, records.get(dpkgNode));
    expect(await holders()).toEqual([]);
    expect(violations).toEqual([]);
  },
  CYCLES_TIMEOUT_MS + 4 * SETTLE_TIMEOUT_MS,
);
