// The cost of one idle agent as shipped: `node dist/cli.js agent` (the esbuild bundle) in its own
// process, against the fake API server running in this (the benchmark's) process.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeApiServer, type FakeApiServer } from '../src/sim/fake-api-server.js';

export interface ProcessCost {
  ok: boolean;
  /** Why the measurement failed, when it did. */
  note: string;
  rssMb: number;
  peakRssMb: number;
  /** CPU seconds used during start-up (until the settle point). */
  startCpuS: number;
  /** CPU percent of one core while idle. */
  idleCpuPct: number;
  /** API requests during start-up and during the idle window (probes included). */
  startRequests: number;
  idleRequests: number;
  idleWindowS: number;
  /** /readyz and /healthz requests sent during the idle window (the chart's probe schedule). */
  probes: number;
  /** Probes answered 200. */
  probesOk: number;
}

/** The chart probes /readyz and /healthz every 10 s (values.yaml readinessProbe, livenessProbe). */
export const PROBE_EVERY_MS = 10_000;

function procStatus(pid: number): { rss: number; hwm: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string): number => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(text)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
}

/** utime + stime of a process in seconds (clock ticks of 1/100 s on Linux). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A fake API server with `nodes` nodes (node-01, …) and the lock DaemonSet, and a kubeconfig for it in a fresh dir. */
async function benchCluster(nodes = 1): Promise<{ server: FakeApiServer; dir: string; kubeconfig: string }> {
  const server = await startFakeApiServer();
  const dir = mkdtempSync(join(tmpdir(), 'kured-ts-bench-'));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, server.kubeConfig().exportConfig());
  for (let i = 1; i <= nodes; i++)
    server.create('nodes', {
      metadata: { name: `node-${String(i).padStart(2, '0')}` },
      status: { conditions: [{ type: 'Ready', status: 'True' }], nodeInfo: { bootID: 'boot-1' } },
    } as never);
  server.create('daemonsets', {
    metadata: { name: 'kured', namespace: 'kube-system' },
    spec: {
      selector: { matchLabels: { name: 'kured' } },
      template: { metadata: { labels: { name: 'kured' } } },
    },
  } as never);
  return { server, dir, kubeconfig };
}

/** `node <cli> agent` for node-01 against `kubeconfig`, its sentinel in `dir`, plus `extra` flags. */
function agentArgv(cli: string, kubeconfig: string, dir: string, extra: readonly string[]): string[] {
  return [
    cli,
    'agent',
    '--node-id=node-01',
    `--kubeconfig=${kubeconfig}`,
    `--reboot-sentinel=${join(dir, 'reboot-required')}`,
    '--metrics-host=127.0.0.1',
    '--metrics-port=0',
    '--host-exec=direct',
    '--log-format=json',
    ...extra,
  ];
}

/** Starts the agent bundle idle (no reboot needed), with --period `period`, and measures it. */
export async function measureIdleAgent(
  cli: string,
  settleMs: number,
  idleMs: number,
  period = '1h',
): Promise<ProcessCost> {
  const { server, dir, kubeconfig } = await benchCluster();
  const child = spawn(process.execPath, agentArgv(cli, kubeconfig, dir, [`--period=${period}`]), {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  const state: { exited: number | null | undefined } = { exited: undefined };
  child.on('exit', (code) => (state.exited = code));
  const hasExited = (): boolean => state.exited !== undefined;
  try {
    await sleep(settleMs);
    const pid = child.pid;
    if (hasExited() || pid === undefined)
      return failed(
        `agent exited with ${String(state.exited)}: ${stderr.trim().split('\n').slice(-1)[0] ?? ''}`,
      );
    const startCpuS = cpuSeconds(pid);
    const startRequests = server.requests.length;
    const started = (stdout + stderr).split('\n').find((l) => l.includes('"agent started"')) ?? '';
    const port = Number(/"metricsPort":(\d+)/.exec(started)?.[1] ?? 0);
    const probed = await probeWhileIdle(port, idleMs);
    if (hasExited()) return failed(`agent exited with ${String(state.exited)} while idle`);
    const idleCpuS = cpuSeconds(pid) - startCpuS;
    const mem = procStatus(pid);
    return {
      ok: true,
      note: '',
      rssMb: mem.rss,
      peakRssMb: mem.hwm,
      startCpuS,
      idleCpuPct: (idleCpuS / (idleMs / 1000)) * 100,
      startRequests,
      idleRequests: server.requests.length - startRequests,
      idleWindowS: idleMs / 1000,
      ...probed,
    };
  } finally {
    child.kill('SIGTERM');
    await Promise.race([new Promise((r) => child.once('exit', r)), sleep(3000)]);
    if (!hasExited()) child.kill('SIGKILL');
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** GETs /readyz and /healthz every PROBE_EVERY_MS for `ms`, as the kubelet does with the chart's probes. */
async function probeWhileIdle(port: number, ms: number): Promise<{ probes: number; probesOk: number }> {
  const end = Date.now() + ms;
  let probes = 0;
  let probesOk = 0;
  while (Date.now() < end) {
    for (const path of ['/readyz', '/healthz']) {
      probes++;
      const ok = await fetch(`http://127.0.0.1:${port}${path}`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) probesOk++;
    }
    await sleep(Math.min(PROBE_EVERY_MS, Math.max(0, end - Date.now())));
  }
  return { probes, probesOk };
}

function failed(note: string): ProcessCost {
  return {
    ok: false,
    note,
    rssMb: 0,
    peakRssMb: 0,
    startCpuS: 0,
    idleCpuPct: 0,
    startRequests: 0,
    idleRequests: 0,
    idleWindowS: 0,
    probes: 0,
    probesOk: 0,
  };
}

export interface DrainCost {
  ok: boolean;
  note: string;
  /** Pods evicted by the agent. */
  evicted: number;
  /** VmHWM of the agent process once the drain is done (its reboot command has run). */
  peakRssMb: number;
  drainS: number;
}

/**
 * Starts the agent bundle on a node that needs a reboot and carries `pods` pods, and measures its
 * peak resident memory through the lock, cordon and drain, up to its reboot command.
 */
export async function measureDrainingAgent(cli: string, pods: number): Promise<DrainCost> {
  const { server, dir, kubeconfig } = await benchCluster();
  writeFileSync(join(dir, 'reboot-required'), '');
  const rebooted = join(dir, 'rebooted');
  for (let i = 0; i < pods; i++) {
    server.create('pods', {
      metadata: {
        name: `web-${i}`,
        namespace: 'default',
        labels: { app: `web-${i % 10}` },
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web', uid: 'rs', controller: true },
        ],
      },
      spec: { nodeName: 'node-01', containers: [{ name: 'c', image: 'busybox' }] },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    } as never);
  }
  const started = Date.now();
  const argv = agentArgv(cli, kubeconfig, dir, [
    '--period=10s',
    `--reboot-command=/usr/bin/touch ${rebooted}`,
  ]);
  const child = spawn(process.execPath, argv, { stdio: ['ignore', 'ignore', 'ignore'] });
  try {
    const deadline = Date.now() + 120_000;
    while (!existsSync(rebooted) && Date.now() < deadline && child.exitCode === null) await sleep(100);
    const pid = child.pid;
    if (!existsSync(rebooted) || pid === undefined) {
      return {
        ok: false,
        note: 'the agent did not reach its reboot command in 120 s',
        evicted: 0,
        peakRssMb: 0,
        drainS: 0,
      };
    }
    const left = server.list('pods').length;
    return {
      ok: true,
      note: '',
      evicted: pods - left,
      peakRssMb: procStatus(pid).hwm,
      drainS: (Date.now() - started) / 1000,
    };
  } finally {
    child.kill('SIGKILL');
    await Promise.race([new Promise((r) => child.once('exit', r)), sleep(3000)]);
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The coordinator as shipped (`node dist/cli.js coordinator`), leading over a fleet of `nodes` Ready
 * nodes, none waiting: its resident memory after `settleMs` (the chart's request is set from it).
 */
export async function measureIdleCoordinator(
  cli: string,
  nodes: number,
  settleMs: number,
): Promise<{ ok: boolean; note: string; rssMb: number; peakRssMb: number; nodeReads: number }> {
  const { server, dir, kubeconfig } = await benchCluster(nodes);
  const child = spawn(process.execPath, [cli, 'coordinator', `--kubeconfig=${kubeconfig}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, POD_NAME: 'kured-ts-coordinator-0', POD_NAMESPACE: 'kube-system' },
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.resume();
  const state: { exited: number | null | undefined } = { exited: undefined };
  child.on('exit', (code) => (state.exited = code));
  try {
    await sleep(settleMs);
    const pid = child.pid;
    if (state.exited !== undefined || pid === undefined)
      return {
        ok: false,
        note: `exited with ${String(state.exited)}: ${stderr.trim().split('\n').at(-1) ?? ''}`,
        rssMb: 0,
        peakRssMb: 0,
        nodeReads: 0,
      };
    const leases = server.requests.filter((r) => r.path.includes('/leases')).length;
    const nodeReads = server.requests.filter((r) => r.path === '/api/v1/nodes').length;
    if (leases === 0 || nodeReads === 0)
      return { ok: false, note: 'it never led (no Lease or Node read)', rssMb: 0, peakRssMb: 0, nodeReads };
    const mem = procStatus(pid);
    return { ok: true, note: '', rssMb: mem.rss, peakRssMb: mem.hwm, nodeReads };
  } finally {
    child.kill('SIGTERM');
    await Promise.race([new Promise((r) => child.once('exit', r)), sleep(3000)]);
    if (state.exited === undefined) child.kill('SIGKILL');
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
