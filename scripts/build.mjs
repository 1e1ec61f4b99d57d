// Builds the shipped artefacts with esbuild: ESM bundles with code splitting, so that a command's
// modules are read only when it runs (the agent never loads the simulator, the operator commands or
// the notifiers it is not configured for).
//
// Memory (README "Why not …"): client-node's KubeConfig module imports two things kured-ts never
// uses that cost about 11 MB of resident memory on every node: the generated API index (every model
// and API class, for makeApiClient) and node-fetch (for applyToFetchOptions' Headers). The bundle
// replaces both, for that one importer only, with stubs that throw a clear error if ever called;
// test/integration/image-bundle.test.ts proves the agent and commands work without them.
import { build } from 'esbuild';
import { chmodSync, rmSync, writeFileSync } from 'node:fs';

const banner = [
  '#!/usr/bin/env node',
  "import { createRequire as __kuredCreateRequire } from 'node:module';",
  'const require = __kuredCreateRequire(import.meta.url);',
].join('\n');

const STUBS = {
  './gen/index.js': [
    'const unused = (what) => () => {',
    "  throw new Error(`${what} is not part of the kured-ts bundle (client-node's generated API classes are not loaded)`);",
    '};',
    "export const createConfiguration = unused('createConfiguration');",
    "export class ServerConfiguration { constructor() { unused('ServerConfiguration')(); } }",
  ].join('\n'),
  'node-fetch': [
    'export class Headers {',
    "  constructor() { throw new Error('node-fetch Headers is not part of the kured-ts bundle'); }",
    '}',
  ].join('\n'),
};

/** Replaces STUBS' imports in client-node's dist/config.js (and nowhere else). */
const clientNodeStubs = {
  name: 'client-node-stubs',
  setup(b) {
    b.onResolve({ filter: /^(\.\/gen\/index\.js|node-fetch)$/ }, (args) =>
      /[\\/]@kubernetes[\\/]client-node[\\/]dist[\\/]config\.js$/.test(args.importer)
        ? { path: args.path, namespace: 'kured-stub' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'kured-stub' }, (args) => ({
      contents: STUBS[args.path],
      loader: 'js',
    }));
  },
};

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  sourcemap: false,
  legalComments: 'none',
  banner: { js: banner },
  logLevel: 'warning',
  plugins: [clientNodeStubs],
};

rmSync('dist', { recursive: true, force: true });
await build({ ...common, outdir: 'dist', entryPoints: { cli: 'src/cli/cli.ts' } });
chmodSync('dist/cli.js', 0o755);
// dist/ is self-contained (the image copies cli.js, chunks/ and this file, and no node_modules):
// its .js files are ES modules wherever it is put.
writeFileSync('dist/package.json', '{ "type": "module" }\n');
// The benchmark (`npm run bench` = node dist/bench/bench.js) is built the same way but separately, so
// that the shipped agent bundle stays exactly what src/cli/cli.ts pulls in.
await build({ ...common, outdir: 'dist/bench', entryPoints: { bench: 'bench/bench.ts' } });
