// What the real kube-apiserver suites share: the chart rendered by the real Helm (scripts/ensure-helm.mjs)
// as the objects to apply, and a kubeconfig for a token (an agent's, bound to its pod).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

/**
 * `helm template RELEASE charts/kured-ts -n NAMESPACE --kube-version 1.32.0 ...args`, parsed: each
 * rendered object as `T`.
 */
export function renderChart<T>(release: string, namespace: string, args: readonly string[] = []): T[] {
  const helm = spawnSync(process.execPath, ['scripts/ensure-helm.mjs'], { encoding: 'utf8' }).stdout.trim();
  const all = ['template', release, 'charts/kured-ts', '--namespace', namespace, '--kube-version', '1.32.0'];
  const out = spawnSync(helm, [...all, ...args], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`helm template failed: ${out.stderr}`);
  return parseAllDocuments(out.stdout)
    .map((d) => d.toJS() as T | null)
    .filter((o): o is T => o !== null);
}

/** Writes at `path` a kubeconfig reaching `server` (its URL and CA) with `token`; returns `path`. */
export function tokenKubeconfig(
  path: string,
  server: { url: string; ca: string | undefined },
  token: string,
): string {
  const ca = Buffer.from(server.ca ?? '').toString('base64');
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters: [{ name: real, cluster: { server: "${server.url}", certificate-authority-data: "${ca}" } }]
users: [{ name: agent, user: { token: "${token}" } }]
contexts: [{ name: real, context: { cluster: real, user: agent } }]
current-context: real
`,
  );
  return path;
}

/** A rendered object as far as the agent's arguments go. */
interface Rendered {
  kind: string;
  spec?: { template?: { spec?: { containers?: { args?: string[] }[] } } };
}

/** The agent's arguments as the chart renders them into its DaemonSet. */
export function chartAgentArgs(manifests: readonly Rendered[]): string[] {
  return manifests.find((m) => m.kind === 'DaemonSet')?.spec?.template?.spec?.containers?.[0]?.args ?? [];
}

/**
 * The deployed agent's arguments for `node` on a host these tests play in `dir`: its sentinel is
 * DIR/NODE.reboot-required, its reboot command only marks the reboot (touches DIR/NODE.rebooting),
 * a 2 s period, no metrics port; `more` sets further flags over the chart's.
 */
export function hostAgentArgs(
  chartArgs: readonly string[],
  node: string,
  dir: string,
  more: Readonly<Record<string, string>> = {},
): string[] {
  const here: Record<string, string> = {
    '--period': '2s',
    '--reboot-sentinel': join(dir, `${node}.reboot-required`),
    '--reboot-command': `/usr/bin/touch ${join(dir, `${node}.rebooting`)}`,
    '--host-exec': 'direct',
    '--metrics-port': '0',
    ...more,
  };
  return [
    ...chartArgs.filter((a) => !(a.split('=')[0]! in here)),
    ...Object.entries(here).map(([k, v]) => `${k}=${v}`),
    `--node-id=${node}`,
  ];
}

/** The bundled agent (`node dist/cli.js agent ARGS`) on `kubeconfig`, its output discarded. */
export function spawnAgent(args: readonly string[], kubeconfig: string): ChildProcess {
  return spawn(process.execPath, ['dist/cli.js', 'agent', ...args], {
    env: { ...process.env, KUBECONFIG: kubeconfig },
    stdio: ['ignore', 'ignore', 'ignore'],
  });
}
