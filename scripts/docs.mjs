// Regenerates the README's configuration table from the CLI's flag table (src/config/flags.ts), so the
// documentation cannot drift from the code. test/unit/readme.test.ts fails when it is stale.
import { build } from 'esbuild';
import { readFileSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

// Inside node_modules so that the bundle's external imports resolve.
const dir = join('node_modules', '.cache', 'kured-ts-docs');
mkdirSync(dir, { recursive: true });
try {
  const out = join(dir, 'flags.mjs');
  await build({
    entryPoints: ['src/config/flags.ts'],
    outfile: out,
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    logLevel: 'warning',
  });
  const { renderConfigTable } = await import(pathToFileURL(join(process.cwd(), out)).href);
  const readme = readFileSync('README.md', 'utf8');
  const begin = '<!-- config-table:begin -->';
  const end = '<!-- config-table:end -->';
  const from = readme.indexOf(begin);
  const to = readme.indexOf(end);
  if (from < 0 || to < from) throw new Error('README.md: config-table markers not found');
  const next =
    readme.slice(0, from + begin.length) + '\n' + renderConfigTable().trimEnd() + '\n' + readme.slice(to);
  writeFileSync('README.md', next);
  console.log('README.md configuration table regenerated');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
