// Runs the static checks side by side (`npm run lint`, `npm run checks`): each is one process on one
// core, and one after the other they took 75 s of `npm test` on 2 cores (eslint 43 s, prettier 15 s,
// tsc 11 s, knip 3 s, the import check 1 s; issue 57). Each check's output is printed whole once it
// ends, named; the exit status is 1 when any failed. Written here rather than taken from
// npm-run-all2, whose current major needs Node 22.22 or later: 40 lines are cheaper than a floor on
// the machines that run `npm ci`.
import { spawn } from 'node:child_process';

/** The checks by name: `npm run lint` runs the first four, `npm run checks` all five. */
const CHECKS = {
  eslint: 'eslint .',
  prettier: 'prettier --check .',
  imports: 'node scripts/check-imports.mjs src',
  knip: 'knip',
  typecheck: 'tsc -p tsconfig.check.json',
};

/** Runs `command` in a shell (the local binaries on its PATH, as npm gives them), its output kept. */
function run(name, command) {
  return new Promise((resolve) => {
    const child = spawn(command, { shell: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const output = [];
    child.stdout.on('data', (chunk) => output.push(chunk));
    child.stderr.on('data', (chunk) => output.push(chunk));
    child.on('error', (err) => resolve({ name, status: 1, output: String(err) }));
    child.on('close', (status) => resolve({ name, status, output: Buffer.concat(output).toString() }));
  });
}

const names = process.argv.slice(2);
const unknown = names.filter((n) => !(n in CHECKS));
if (names.length === 0 || unknown.length > 0) {
  console.error(`usage: node scripts/run-checks.mjs ${Object.keys(CHECKS).join('|')}...`);
  process.exit(2);
}
const results = await Promise.all(names.map((n) => run(n, CHECKS[n])));
for (const r of results) {
  process.stdout.write(
    `> ${r.name}: ${CHECKS[r.name]}${r.status === 0 ? '' : ` (exit ${r.status})`}\n${r.output}`,
  );
}
process.exit(results.some((r) => r.status !== 0) ? 1 : 0);
