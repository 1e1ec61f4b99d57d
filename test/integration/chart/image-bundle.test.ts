// What the container image relies on, checked without a container engine (scripts/image-test.sh
// builds and runs the real image from .ci/run): the Dockerfile's contract, and the esbuild bundle
// running on its own, with no node_modules anywhere above it, as /app/cli.js does in the image.
import { describe, expect, test } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { WorkerCel } from '../../../src/cel/worker-cel.js';
import type { V1Node } from '../../../src/kube/kube.js';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { writeKubeconfig } from '../../fakes/kubeconfig-file.js';
import { kuredDaemonSet, readyNode } from '../../fakes/kube-objects.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');

/** Dockerfile instructions of one stage (continuation lines joined, comments dropped). */
function stage(name: string): string[] {
  const lines = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.trim().startsWith('#'));
  const start = lines.findIndex((l) => new RegExp(`^FROM .* AS ${name}$`).test(l));
  expect(start).toBeGreaterThanOrEqual(0);
  const end = lines.findIndex((l, i) => i > start && l.startsWith('FROM '));
  return lines.slice(start, end < 0 ? undefined : end);
}

/**
 * Reports the process's own peak resident set at exit: VmHWM of /proc/self/status, the high-water
 * mark of the memory map exec() created. Not getrusage's maxRSS: Linux folds into it the peak of the
 * image that exec() replaced, the spawning jest worker's forked copy, so the same 81 MiB run reads
 * 104 MiB when spawned from a 143 MiB parent and 305 MiB from a 344 MiB one (measured): it grew with
 * whatever the worker had run before, as in a full run on a loaded machine, not with the bundle.
 */
const PEAK_RSS_REPORTER = `process.on('exit', () => {
  const status = require('node:fs').readFileSync('/proc/self/status', 'utf8');
  process.stderr.write('peak_rss_kb=' + (/^VmHWM:\\s*(\\d+) kB$/m.exec(status)?.[1] ?? 0) + '\\n');
});
`;

/** Runs the bundle copied alone (as the image holds it) into an empty directory; output and peak RSS. */
function runAlone(args: string[]): { status: number; stdout: string; stderr: string; peakRssKb: number } {
  const bundle = join(root, 'dist/cli.js');
  if (!existsSync(bundle)) throw new Error('dist/cli.js is missing: run `npm run build` first');
  const dir = mkdtempSync(join(tmpdir(), 'kured-ts-bundle-'));
  try {
    copyFileSync(bundle, join(dir, 'cli.js'));
    copyFileSync(join(root, 'dist/package.json'), join(dir, 'package.json'));
    cpSync(join(root, 'dist/chunks'), join(dir, 'chunks'), { recursive: true });
    writeFileSync(join(dir, 'rss.cjs'), PEAK_RSS_REPORTER);
    const run = spawnSync('node', ['--require', join(dir, 'rss.cjs'), join(dir, 'cli.js'), ...args], {
      cwd: dir,
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', NODE_PATH: '' },
      timeout: 20_000,
    });
    const rss = /peak_rss_kb=(\d+)/.exec(run.stderr)?.[1];
    return { status: run.status ?? -1, stdout: run.stdout, stderr: run.stderr, peakRssKb: Number(rss ?? 0) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("the checks' CEL worker", () => {
  test('runs alone, as the image holds it beside cli.js, with no node_modules', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kured-ts-cel-'));
    try {
      copyFileSync(join(root, 'dist/cel-worker.js'), join(dir, 'cel-worker.js'));
      copyFileSync(join(root, 'dist/package.json'), join(dir, 'package.json'));
      const cel = new WorkerCel({ script: pathToFileURL(join(dir, 'cel-worker.js')) });
      expect(
        await cel.evaluate('self.items.exists(v, v == node)', { self: { items: ['a', 'n1'] }, node: 'n1' }),
      ).toEqual({
        value: true,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("is found by the bundle laid out as the image holds it: check judges a --health-check's CEL in it", async () => {
    const server = await startClusterApiServer();
    const dir = mkdtempSync(join(tmpdir(), 'kured-ts-cel-'));
    try {
      server.create('daemonsets', kuredDaemonSet());
      server.create<V1Node>('nodes', readyNode('n1'));
      for (const file of ['cli.js', 'cel-worker.js', 'package.json'])
        copyFileSync(join(root, 'dist', file), join(dir, file));
      cpSync(join(root, 'dist/chunks'), join(dir, 'chunks'), { recursive: true });
      const kubeconfig = writeKubeconfig(join(dir, 'config'), server.url);
      const check = 'core/v1/nodes n1: self.metadata.name == "n1" && size(self.status.conditions) > 0';
      const args = ['check', '--node', 'n1', '--kubeconfig', kubeconfig, '--health-check', check];
      const child = spawn(process.execPath, [join(dir, 'cli.js'), ...args], {
        cwd: dir,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', NODE_PATH: '' },
      });
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        stdout += d;
      });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        stderr += d;
      });
      await new Promise((resolve) => child.on('close', resolve));
      expect(stderr).not.toMatch(/cannot reach/);
      expect(stdout).toMatch(/health-check core\/v1\/nodes n1 +ok +.*: true\n/);
      expect(stdout).not.toMatch(/CEL worker/);
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('the Dockerfile', () => {
  test('builds on an official Node 24 image, replaceable by a build argument', () => {
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:24-bookworm-slim$/m);
    expect(stage('build')[0]).toBe('FROM ${NODE_IMAGE} AS build');
    expect(stage('runtime')[0]).toBe('FROM ${NODE_IMAGE} AS runtime');
  });

  test('the build stage installs from the lock file and builds the bundle', () => {
    const build = stage('build').join('\n');
    expect(build).toMatch(/^RUN npm ci\b/m);
    expect(build).toMatch(/^RUN npm run build$/m);
  });

  test('the runtime stage has nsenter and tzdata, the bundle only, no node_modules, a non-root user', () => {
    const runtime = stage('runtime');
    const text = runtime.join('\n');
    expect(text).toMatch(/apt-get install [^\n]*\butil-linux\b/);
    expect(text).toMatch(/apt-get install [^\n]*\btzdata\b/);
    expect(runtime.filter((l) => l.startsWith('COPY --from=build'))).toEqual([
      'COPY --from=build /src/dist/cli.js /src/dist/cel-worker.js /src/dist/package.json /app/',
      'COPY --from=build /src/dist/chunks /app/chunks',
    ]);
    expect(text).not.toContain('node_modules /');
    expect(runtime.find((l) => l.startsWith('USER '))).toBe('USER 65532:65532');
    expect(runtime[runtime.length - 1]).toBe('ENTRYPOINT ["node", "/app/cli.js"]');
  });

  test('.dockerignore keeps node_modules, dist and local state out of the build context', () => {
    const ignore = readFileSync(join(root, '.dockerignore'), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '' && !l.startsWith('#'));
    // Everything is excluded, then only what the build stage copies is let back in.
    expect(ignore[0]).toBe('*');
    expect(stage('build')).toContain('COPY . .');
    const allowed = ignore.filter((l) => l.startsWith('!')).map((l) => l.slice(1));
    expect(allowed).toEqual(
      expect.arrayContaining([
        'package.json',
        'package-lock.json',
        'tsconfig.json',
        'scripts/build.mjs',
        'src/',
      ]),
    );
    expect(allowed.some((l) => /node_modules|dist|\.tools|\.git/.test(l))).toBe(false);
  });
});

describe('the bundle alone, as in the image', () => {
  test("carries none of client-node's generated API classes or models (memory on every node)", () => {
    const files = ['cli.js', ...readdirSync(join(root, 'dist/chunks')).map((f) => `chunks/${f}`)];
    const text = files.map((f) => readFileSync(join(root, 'dist', f), 'utf8')).join('\n');
    expect(text).toContain('loadFromDefault'); // client-node's KubeConfig is there
    for (const generated of ['class CoreV1Api', 'class AppsV1Api', 'ObjectSerializer', 'class V1PodSpec'])
      expect(text).not.toContain(generated);
  });

  test('answers --help with every flag, without node_modules', () => {
    const run = runAlone(['--help']);
    expect(run.stderr).not.toMatch(/Cannot find (module|package)/);
    expect(run.status).toBe(0);
    for (const flag of [
      '--node-id',
      '--reboot-method',
      '--lock-annotation',
      '--host-exec',
      '--block-on-pdb',
    ]) {
      expect(run.stdout).toContain(flag);
    }
  });

  test('rejects a bad flag with exit status 2, as the agent must before any API call', () => {
    const run = runAlone(['agent', '--node-id', 'n1', '--reboot-method', 'explode']);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('--reboot-method');
  });

  test('stays well below the resident memory of client-node loaded from node_modules (~110 MB)', () => {
    const run = runAlone(['--help']);
    console.log(`bundle --help: peak resident memory ${(run.peakRssKb / 1024).toFixed(1)} MiB`);
    expect(run.peakRssKb).toBeGreaterThan(0);
    expect(run.peakRssKb).toBeLessThan(100 * 1024);
  });

  test('is measured on its own, whatever memory the process that spawns it holds', () => {
    const ballast = Buffer.alloc(160 * 1024 * 1024, 1); // resident in this jest worker while it spawns
    try {
      const run = runAlone(['--help']);
      expect(run.peakRssKb).toBeGreaterThan(0);
      expect(run.peakRssKb).toBeLessThan(100 * 1024);
    } finally {
      ballast.fill(0); // keeps it alive until the child has run
    }
  });
});
