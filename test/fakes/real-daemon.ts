// A real daemon of the machine (Debian's prometheus, prometheus-alertmanager) for a test: started on a
// free loopback port with a directory of its own, awaited until it answers, stopped at the end.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A loopback port nothing listens on now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => {
        resolve(port);
      });
    });
  });
}

export interface RealDaemon {
  url: string;
  dir: string;
  stop: () => Promise<void>;
}

/**
 * Starts `binary` with `args(port, dir)` after writing `files` into its directory; resolves once
 * `ready(url)` does (polled every 200 ms, for at most `waitMs`).
 */
export async function startDaemon(o: {
  binary: string;
  files: Record<string, string>;
  args: (port: number, dir: string) => string[];
  ready: (url: string) => Promise<boolean>;
  waitMs: number;
}): Promise<RealDaemon> {
  const dir = await mkdtemp(join(tmpdir(), 'kured-ts-daemon-'));
  for (const [name, text] of Object.entries(o.files)) await writeFile(join(dir, name), text);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(o.binary, o.args(port, dir), { stdio: 'ignore' });
  const stop = async (): Promise<void> => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };
  const until = Date.now() + o.waitMs;
  while (!(await o.ready(url).catch(() => false))) {
    if (Date.now() > until || child.exitCode !== null) {
      await stop();
      throw new Error(`${o.binary} did not answer within ${o.waitMs} ms`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { url, dir, stop };
}

/**
 * A real Prometheus evaluating `rules` every second (no scrapes), resolved once `ready(url)` holds
 * (its rules evaluated: a real Prometheus does so on its own interval).
 */
export function startPrometheus(
  rules: string,
  ready: (url: string) => Promise<boolean>,
): Promise<RealDaemon> {
  return startDaemon({
    binary: '/usr/bin/prometheus',
    files: {
      'rules.yml': rules,
      'prometheus.yml':
        'global:\n  evaluation_interval: 1s\n  scrape_interval: 1h\nrule_files:\n  - rules.yml\n',
    },
    args: (port, dir) => [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
    ],
    ready,
    waitMs: 25_000,
  });
}
