// The esbuild options of every bundle kured-ts builds: the shipped CLI (scripts/build.mjs) and the
// memory probes of the benchmark (bench/memory-floors.ts), so that both measure the same thing.
//
// Memory (CONTRIBUTING.md, "Dependencies"): client-node's KubeConfig module imports two things
// kured-ts never uses that cost about 11 MB of resident memory on every node: the generated API index (every model
// and API class, for makeApiClient) and node-fetch (for applyToFetchOptions' Headers). The bundle
// replaces both, for that one importer only, with stubs that throw a clear error if ever called;
// test/integration/chart/image-bundle.test.ts proves the agent and commands work without them.
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

export const common = {
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
