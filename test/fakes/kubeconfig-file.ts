// A kubeconfig file naming one API server (the fake's plain-HTTP URL), as a user's would: for the
// tests that run the CLI or the bundle as a separate process, or load a kubeconfig from disk.
import { writeFileSync } from 'node:fs';

/** Writes a kubeconfig at `path` whose one context reaches `serverUrl` as an anonymous user; returns `path`. */
export function writeKubeconfig(path: string, serverUrl: string): string {
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: c, cluster: {server: "${serverUrl}", insecure-skip-tls-verify: true}}]`,
      'users: [{name: u, user: {}}]',
      'contexts: [{name: x, context: {cluster: c, user: u}}]',
      'current-context: x',
    ].join('\n'),
  );
  return path;
}
