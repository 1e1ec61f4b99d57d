// `npm run test:real-api`: the adapter contract suite and a rolling reboot of real agent processes
// against a real kube-apiserver and etcd, the envtest way: the binaries come from the user
// (KUBEBUILDER_ASSETS, or setup-envtest's default store); this script only starts them on loopback
// with a fresh data dir, RBAC on, ServiceAccount token signing (TokenRequest works) and an audit
// log, runs jest over test/real-api, and stops them. Without the binaries it says so and exits 0.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binaryVersion, findAssets, startControlPlane } from './control-plane.mjs';

const MIN_MINOR = 30; // ValidatingAdmissionPolicy v1, pod-bound tokens carrying the node name

function skip(why) {
  process.stdout.write(
    `real kube-apiserver tests skipped: ${why}; get the envtest binaries with "go run sigs.k8s.io/controller-runtime/tools/setup-envtest@latest use 1.32 -p path" and set KUBEBUILDER_ASSETS to the directory it prints\n`,
  );
  process.exit(0);
}

const assets = findAssets();
if (assets === undefined) skip('KUBEBUILDER_ASSETS is not set and no setup-envtest store was found');
const apiserverBin = join(assets, 'kube-apiserver');
const etcdBin = join(assets, 'etcd');
for (const bin of [apiserverBin, etcdBin]) if (!existsSync(bin)) skip(`${bin} does not exist`);

const version = binaryVersion(apiserverBin);
if (!version) {
  process.stderr.write(`cannot read the version of ${apiserverBin}\n`);
  process.exit(1);
}
if (version.major === 1 && version.minor < MIN_MINOR) {
  process.stderr.write(
    `kube-apiserver ${version.text} is too old: the real-API tests need 1.${MIN_MINOR} or later\n`,
  );
  process.exit(1);
}

const dir = mkdtempSync(join(tmpdir(), 'kured-ts-real-api-'));
let plane;
try {
  plane = await startControlPlane({ assets, dir });
} catch (err) {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
}
const { kubeconfig, auditLog, url, ca } = plane;

const results = join(dir, 'results.json');
const jest = spawnSync(
  process.execPath,
  [
    '--experimental-vm-modules',
    '--no-warnings=ExperimentalWarning',
    'node_modules/jest/bin/jest.js',
    '--config',
    'jest.real-api.config.js',
    '--runInBand',
    '--json',
    `--outputFile=${results}`,
    ...process.argv.slice(2),
  ],
  {
    stdio: 'inherit',
    env: {
      ...process.env,
      REAL_API_KUBECONFIG: kubeconfig,
      REAL_API_AUDIT_LOG: auditLog,
      REAL_API_URL: url,
      REAL_API_CA: ca,
      REAL_API_VERSION: version.text,
    },
  },
);
await plane.stop();
let summary = `real kube-apiserver ${version.text}: jest wrote no results`;
if (existsSync(results)) {
  const r = JSON.parse(readFileSync(results, 'utf8'));
  summary =
    r.numFailedTests + r.numRuntimeErrorTestSuites === 0
      ? `real kube-apiserver ${version.text}: ${r.numPassedTests} tests passed`
      : `real kube-apiserver ${version.text}: ${r.numFailedTests} failed, ${r.numPassedTests} passed (logs in ${dir})`;
}
process.stdout.write(`${summary}\n`);
const code = jest.status ?? 1;
if (code === 0) rmSync(dir, { recursive: true, force: true });
process.exit(code);
