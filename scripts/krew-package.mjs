// Packs the kubectl plugin for krew: dist/krew/kured-ts-kubectl-<version>.tar.gz (the plugin bundle,
// a POSIX sh launcher named kubectl-kured_ts, LICENSE) and dist/krew/kured-ts.yaml, the manifest
// from krew/kured-ts.yaml with the version, the archive's URI and its SHA-256.
//
//   node scripts/krew-package.mjs [BASE_URI]    (after npm run build; default: the GitHub release)
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const { version } = JSON.parse(readFileSync('package.json', 'utf8'));
const base = process.argv[2] ?? `https://github.com/kured-ts/kured-ts/releases/download/v${version}`;
const out = 'dist/krew';
const stage = join(out, 'stage');
const archive = `kured-ts-kubectl-${version}.tar.gz`;

rmSync(out, { recursive: true, force: true });
mkdirSync(stage, { recursive: true });
cpSync('dist/kubectl-kured_ts.js', join(stage, 'kubectl-kured_ts.js'));
cpSync('dist/chunks', join(stage, 'chunks'), { recursive: true });
cpSync('dist/package.json', join(stage, 'package.json'));
cpSync('LICENSE', join(stage, 'LICENSE'));
// krew links `bin` into ~/.krew/bin: the launcher finds the bundle next to its real path.
writeFileSync(
  join(stage, 'kubectl-kured_ts'),
  '#!/bin/sh\nexec node "$(dirname "$(readlink -f "$0")")/kubectl-kured_ts.js" "$@"\n',
);
chmodSync(join(stage, 'kubectl-kured_ts'), 0o755);
// Reproducible: fixed order, owner and modification time.
execFileSync('tar', [
  '--sort=name',
  '--owner=0',
  '--group=0',
  '--numeric-owner',
  '--mtime=2000-01-01 00:00Z',
  '-czf',
  join(out, archive),
  '-C',
  stage,
  '.',
]);
rmSync(stage, { recursive: true });
const sha256 = createHash('sha256')
  .update(readFileSync(join(out, archive)))
  .digest('hex');
const manifest = readFileSync('krew/kured-ts.yaml', 'utf8')
  .replaceAll('${VERSION}', version)
  .replaceAll('${URI}', `${base}/${archive}`)
  .replaceAll('${SHA256}', sha256);
writeFileSync(join(out, 'kured-ts.yaml'), manifest);
console.log(join(out, 'kured-ts.yaml'));
