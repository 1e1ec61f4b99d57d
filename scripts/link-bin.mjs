// npm links the bins of dependencies into node_modules/.bin, never the project's own. This links
// ours too, so that `npm ci && npx kured-ts simulate` works in a clone (run by `npm run prepare`).
import { mkdirSync, rmSync, symlinkSync, chmodSync } from 'node:fs';

mkdirSync('node_modules/.bin', { recursive: true });
for (const [bin, file] of [
  ['kured-ts', 'cli.js'],
  ['kubectl-kured_ts', 'kubectl-kured_ts.js'],
]) {
  rmSync(`node_modules/.bin/${bin}`, { force: true });
  symlinkSync(`../../dist/${file}`, `node_modules/.bin/${bin}`);
  chmodSync(`dist/${file}`, 0o755);
}
