// What the real kube-apiserver suites share: the chart rendered by the real Helm (scripts/ensure-helm.mjs)
// as the objects to apply, and a kubeconfig for a token (an agent's, bound to its pod).
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
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
