// npm links the bins of dependencies into node_modules/.bin, never the project's own. This links
// ours too, so that `npm ci && npx kured-ts simulate` works in a clone (run by `npm run prepare`).
import { mkdirSync, rmSync, symlinkSync, chmodSync } from 'node:fs';

mkdirSync('node_modules/.bin', { recursive: true });
rmSync('node_modules/.bin/kured-ts', { force: true });
symlinkSync('../../dist/cli.js', 'node_modules/.bin/kured-ts');
chmodSync('dist/cli.js', 0o755);
