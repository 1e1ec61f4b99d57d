// Where the idle agent's resident memory goes: each piece bundled alone, as the shipped bundle is
// (scripts/esbuild-options.mjs), run in a process of its own, resident memory read after 1.5 s.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** One probe: what it loads, and its resident memory. */
export interface Floor {
  probe: string;
  loads: string;
  rssMb: number;
}

const PROBES: [string, string][] = [
  ['node', `Node.js ${process.versions.node} alone`],
  ['kubeconfig', "client-node's KubeConfig (its own module; generated index and node-fetch stubbed)"],
  ['kube-client', 'the whole API client: KubeConfig, keep-alive agents, node:http(s) requests'],
  ['metrics', 'prom-client: the agent registry and process metrics'],
  ['logger', 'winston with the JSON format'],
  ['cli', 'commander with every agent flag, parsed into a Config'],
  ['cron', 'node-cron (cron windows, --reboot-schedule)'],
];

interface EsbuildApi {
  build(options: Record<string, unknown>): Promise<unknown>;
}

/** Bundles and runs every probe; `root` is the repository (for bench/probes and scripts/). */
export async function memoryFloors(root: string): Promise<Floor[]> {
  const esbuild = (await import('esbuild')) as unknown as EsbuildApi;
  const options = (await import(pathToFileURL(join(root, 'scripts/esbuild-options.mjs')).href)) as {
    common: Record<string, unknown>;
  };
  const dir = mkdtempSync(join(tmpdir(), 'kured-ts-probes-'));
  try {
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
    const entryPoints = Object.fromEntries(PROBES.map(([p]) => [p, join(root, 'bench/probes', `${p}.ts`)]));
    await esbuild.build({
      ...options.common,
      splitting: false,
      outdir: dir,
      entryPoints,
      absWorkingDir: root,
    });
    return PROBES.map(([probe, loads]) => ({ probe, loads, rssMb: run(join(dir, `${probe}.js`)) }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function run(file: string): number {
  const result = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 20_000 });
  const parsed = /"rssMb":([\d.]+)/.exec(result.stdout)?.[1];
  return parsed === undefined ? NaN : Number(parsed);
}
