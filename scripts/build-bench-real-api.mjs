// Builds `npm run bench:real`'s entry point (bench/real-api.ts) into dist/bench/real-api.js, as
// scripts/build.mjs builds bench/bench.ts (the same esbuild options), after it: the shipped bundles
// and `npm run bench` stay exactly what build.mjs makes.
import { build } from 'esbuild';
import { common } from './esbuild-options.mjs';

await build({
  ...common,
  outdir: 'dist/bench',
  entryPoints: {
    'real-api': 'bench/real-api.ts',
    // each agent worker thread's entry (bench/real-api-agents.ts starts it beside real-api.js)
    'real-api-agent-worker': 'bench/real-api-agent-worker.ts',
  },
});
