// Builds the shipped artefacts with esbuild: ESM bundles with code splitting, so that a command's
// modules are read only when it runs (the agent never loads the simulator, the operator commands or
// the notifiers it is not configured for).
// The options (and why client-node's config.js is bundled without two of its imports) are in
// scripts/esbuild-options.mjs.
import { build } from 'esbuild';
import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import { common } from './esbuild-options.mjs';

rmSync('dist', { recursive: true, force: true });
// Two entry points sharing their chunks: kured-ts itself, and the kubectl plugin (`kubectl kured-ts`).
await build({
  ...common,
  outdir: 'dist',
  entryPoints: { cli: 'src/cli/cli.ts', 'kubectl-kured_ts': 'src/cli/kubectl-plugin.ts' },
});
// The checks' CEL runs in a worker thread under a deadline and a heap cap (src/cel/worker-cel.ts): its
// script is a bundle of its own, beside cli.js, so that the engine is loaded only in that thread.
await build({
  ...common,
  splitting: false,
  outdir: 'dist',
  entryPoints: { 'cel-worker': 'src/cel/cel-worker.ts' },
});
chmodSync('dist/cli.js', 0o755);
chmodSync('dist/kubectl-kured_ts.js', 0o755);
// dist/ is self-contained (the image copies cli.js, chunks/ and this file, and no node_modules):
// its .js files are ES modules wherever it is put.
writeFileSync('dist/package.json', '{ "type": "module" }\n');
// The benchmark (`npm run bench` = node dist/bench/bench.js) is built the same way but separately, so
// that the shipped agent bundle stays exactly what src/cli/cli.ts pulls in.
await build({
  ...common,
  outdir: 'dist/bench',
  entryPoints: { bench: 'bench/bench.ts' },
  // the benchmark bundles its memory probes at run time
  external: ['esbuild'],
});
