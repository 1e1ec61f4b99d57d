// Regenerates the README's configuration table from the CLI's flag table (src/config/flags.ts), and
// the chart README's table of kured chart keys from the migration rules
// (src/migrate/kured-chart-values.ts), and the chart's admission policy spec from
// src/admission/agent-policy.ts, so the documentation and the chart cannot drift from the code.
// test/unit/readme.test.ts fails when either is stale.
import { build } from 'esbuild';
import { readFileSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

// Inside node_modules so that the bundle's external imports resolve.
const dir = join('node_modules', '.cache', 'kured-ts-docs');
mkdirSync(dir, { recursive: true });
try {
  const bundle = async (entry, name) => {
    const out = join(dir, name);
    await build({
      entryPoints: [entry],
      outfile: out,
      bundle: true,
      platform: 'node',
      format: 'esm',
      packages: 'external',
      logLevel: 'warning',
    });
    return import(pathToFileURL(join(process.cwd(), out)).href);
  };
  /** Replaces the text between `<!-- name:begin -->` and `<!-- name:end -->` in `file`. */
  const splice = (file, name, text) => {
    const doc = readFileSync(file, 'utf8');
    const begin = `<!-- ${name}:begin -->`;
    const end = `<!-- ${name}:end -->`;
    const from = doc.indexOf(begin);
    const to = doc.indexOf(end);
    if (from < 0 || to < from) throw new Error(`${file}: ${name} markers not found`);
    writeFileSync(file, doc.slice(0, from + begin.length) + '\n' + text.trimEnd() + '\n' + doc.slice(to));
    console.log(`${file}: ${name} regenerated`);
  };
  const { renderConfigTable, renderChartDefaultsYaml } = await bundle('src/config/flags.ts', 'flags.mjs');
  splice('README.md', 'config-table', renderConfigTable());
  writeFileSync('charts/kured-ts/files/agent-defaults.yaml', renderChartDefaultsYaml());
  console.log('charts/kured-ts/files/agent-defaults.yaml: regenerated');
  const { renderMigrationTable } = await bundle('src/migrate/kured-chart-values.ts', 'migrate.mjs');
  splice('charts/kured-ts/README.md', 'migration-table', renderMigrationTable());
  const { renderPolicySpecYaml } = await bundle('src/admission/agent-policy.ts', 'policy.mjs');
  writeFileSync('charts/kured-ts/files/agent-admission-policy.yaml', renderPolicySpecYaml());
  console.log('charts/kured-ts/files/agent-admission-policy.yaml: regenerated');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
