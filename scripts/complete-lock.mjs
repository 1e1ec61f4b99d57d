// Completes package-lock.json with the platform-specific optional packages that the npm registry
// reachable from our build machines does not serve (e.g. @swc/core-darwin-arm64). npm 11 writes a
// lock without them there, and `npm ci` then refuses the lock everywhere ("Missing: … from lock
// file"). Each added entry carries the os/cpu/libc its name encodes, so npm skips it on other
// platforms and fetches it by its exact version on its own. Run after every `npm install`.
import { readFileSync, writeFileSync } from 'node:fs';

const OS = [
  'darwin',
  'linux',
  'win32',
  'android',
  'freebsd',
  'openharmony',
  'sunos',
  'aix',
  'netbsd',
  'openbsd',
];
const CPU = ['arm64', 'x64', 'ia32', 'arm', 'ppc64', 's390x', 'riscv64', 'loong64', 'mips64el', 'wasm32'];

function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const os = parts.find((p) => OS.includes(p));
  const cpu = parts.find((p) => CPU.includes(p));
  const libc =
    parts.includes('musl') || parts.includes('musleabihf')
      ? 'musl'
      : parts.includes('gnu') || parts.includes('gnueabihf')
        ? 'glibc'
        : undefined;
  return { os, cpu, libc };
}

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
const added = [];
for (const [path, entry] of Object.entries(lock.packages)) {
  for (const [dep, spec] of Object.entries(entry.optionalDependencies ?? {})) {
    const nested = `${path ? path + '/' : ''}node_modules/${dep}`;
    const top = `node_modules/${dep}`;
    if (lock.packages[nested] || lock.packages[top]) continue;
    const { os, cpu, libc } = platformOf(dep);
    if (!os && !cpu) continue; // not a platform binary: leave it to npm
    if (!/^\d+\.\d+\.\d+/.test(spec)) throw new Error(`${dep}: expected an exact version, got ${spec}`);
    lock.packages[top] = {
      version: spec,
      optional: true,
      ...(os ? { os: [os] } : {}),
      ...(cpu ? { cpu: [cpu] } : {}),
      ...(libc ? { libc: [libc] } : {}),
    };
    added.push(`${dep}@${spec}`);
  }
}
lock.packages = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
writeFileSync('package-lock.json', JSON.stringify(lock, null, 2) + '\n');
console.log(added.length ? `added ${added.length} platform entries: ${added.join(' ')}` : 'lock complete');
