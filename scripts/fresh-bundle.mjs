// jest's global setup (jest.config.js): the bundle in dist/ that the CLI, chart and image tests run as
// processes is built before any test file starts, and only when it is missing or older than what it
// is built from. `npm test` has just built it, so nothing happens then; `npm run test:jest` after a
// change under src/ builds it here, once, and never inside a test file while another worker's tests
// read dist/ (scripts/build.mjs starts by removing it).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** What scripts/build.mjs reads and what it writes. */
const INPUTS = [
  'src',
  'bench',
  'package.json',
  'package-lock.json',
  'scripts/build.mjs',
  'scripts/esbuild-options.mjs',
];
const OUTPUTS = ['dist/cli.js', 'dist/kubectl-kured_ts.js', 'dist/package.json', 'dist/bench/bench.js'];

/** The latest modification time of `path` or anything under it (0 when absent). */
function newest(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name))));
}

/** Is the bundle missing, or older than one of its inputs? */
function stale() {
  const built = OUTPUTS.map((p) => join(root, p));
  if (built.some((p) => !existsSync(p))) return true;
  const oldestOutput = Math.min(...built.map((p) => statSync(p).mtimeMs));
  return INPUTS.some((p) => newest(join(root, p)) > oldestOutput);
}

export default function freshBundle() {
  if (!stale()) return;
  process.stderr.write('fresh-bundle: dist/ is older than its sources: npm run build\n');
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: root, stdio: 'inherit' });
}
