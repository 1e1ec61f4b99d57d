// Builds the shipped artefacts with esbuild: one self-contained ESM bundle per entry point.
// Bundling halves the agent's resident memory compared with loading client-node from node_modules.
import { build } from 'esbuild';
import { chmodSync } from 'node:fs';

const banner = [
  '#!/usr/bin/env node',
  "import { createRequire as __kuredCreateRequire } from 'node:module';",
  'const require = __kuredCreateRequire(import.meta.url);',
].join('\n');

const common = {
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: false,
  legalComments: 'none',
  banner: { js: banner },
  logLevel: 'warning',
};

await build({ ...common, entryPoints: { cli: 'src/cli.ts' } });
chmodSync('dist/cli.js', 0o755);
// The benchmark (`npm run bench` = node dist/bench.js) is bundled the same way but separately, so that
// the shipped agent bundle stays exactly what src/cli.ts pulls in.
await build({ ...common, entryPoints: { bench: 'bench/bench.ts' } });
