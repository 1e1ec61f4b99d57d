// `npm run test:real-api`: the adapter contract suite and a rolling reboot of real agent processes
// against a real kube-apiserver and etcd, the envtest way: the binaries come from the user
// (KUBEBUILDER_ASSETS, or setup-envtest's default store); this script only starts them on loopback
// with a fresh data dir, RBAC on, ServiceAccount token signing (TokenRequest works) and an audit
// log, runs jest over test/real-api, and stops them. Without the binaries it says so and exits 0.
import { spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

const MIN_MINOR = 30; // ValidatingAdmissionPolicy v1, pod-bound tokens carrying the node name
const READY_TIMEOUT_MS = 90_000;

/** KUBEBUILDER_ASSETS, else the newest version in setup-envtest's default store. */
function findAssets() {
  const given = process.env.KUBEBUILDER_ASSETS;
  if (given) return given;
  const store = join(
    process.env.XDG_DATA_HOME ?? join(homedir(), '.local', 'share'),
    'kubebuilder-envtest',
    'k8s',
  );
  if (!existsSync(store)) return undefined;
  const versions = readdirSync(store).sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  const newest = versions.at(-1);
  return newest === undefined ? undefined : join(store, newest);
}

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

const versionText = spawnSync(apiserverBin, ['--version'], { encoding: 'utf8' }).stdout.trim();
const version = /v(\d+)\.(\d+)\.\d+\S*/.exec(versionText);
if (!version) {
  process.stderr.write(`cannot read the version of ${apiserverBin}: "${versionText}"\n`);
  process.exit(1);
}
if (Number(version[1]) === 1 && Number(version[2]) < MIN_MINOR) {
  process.stderr.write(
    `kube-apiserver ${version[0]} is too old: the real-API tests need 1.${MIN_MINOR} or later\n`,
  );
  process.exit(1);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'kured-ts-real-api-'));
const children = [];
function stopAll() {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
}
process.on('exit', stopAll);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    stopAll();
    process.exit(130);
  });
}

function start(bin, args, logName) {
  const log = join(dir, logName);
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const chunks = [];
  child.stdout.on('data', (c) => chunks.push(c));
  child.stderr.on('data', (c) => chunks.push(c));
  child.on('exit', () => writeFileSync(log, Buffer.concat(chunks)));
  children.push(child);
  return { child, output: () => Buffer.concat(chunks).toString('utf8') };
}

const etcdPort = await freePort();
const peerPort = await freePort();
const etcd = start(
  etcdBin,
  [
    '--data-dir',
    join(dir, 'etcd'),
    '--listen-client-urls',
    `http://127.0.0.1:${etcdPort}`,
    '--advertise-client-urls',
    `http://127.0.0.1:${etcdPort}`,
    '--listen-peer-urls',
    `http://127.0.0.1:${peerPort}`,
    '--initial-advertise-peer-urls',
    `http://127.0.0.1:${peerPort}`,
    '--initial-cluster',
    `default=http://127.0.0.1:${peerPort}`,
  ],
  'etcd.log',
);

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
writeFileSync(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
writeFileSync(join(dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
const adminToken = `admin-${Math.random().toString(36).slice(2)}`;
writeFileSync(join(dir, 'tokens.csv'), `${adminToken},admin,admin,"system:masters"\n`);
// Every request at Metadata level: who did what to which object, and the answer (denials included).
writeFileSync(
  join(dir, 'audit-policy.yaml'),
  'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n  - level: Metadata\n',
);
const auditLog = join(dir, 'audit.log');
const apiPort = await freePort();
const apiserver = start(
  apiserverBin,
  [
    `--etcd-servers=http://127.0.0.1:${etcdPort}`,
    `--cert-dir=${join(dir, 'certs')}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${apiPort}`,
    '--service-cluster-ip-range=10.0.0.0/24',
    '--authorization-mode=RBAC',
    '--allow-privileged=true', // the chart's agent is a privileged pod
    `--token-auth-file=${join(dir, 'tokens.csv')}`,
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${join(dir, 'sa.pub')}`,
    `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
    `--audit-policy-file=${join(dir, 'audit-policy.yaml')}`,
    `--audit-log-path=${auditLog}`,
    '--audit-log-mode=blocking',
  ],
  'kube-apiserver.log',
);

const url = `https://127.0.0.1:${apiPort}`;
async function waitReady() {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  const { request } = await import('node:https');
  while (Date.now() < deadline) {
    if (apiserver.child.exitCode !== null || etcd.child.exitCode !== null) break;
    const ok = await new Promise((resolve) => {
      const req = request(
        `${url}/readyz`,
        { headers: { Authorization: `Bearer ${adminToken}` }, rejectUnauthorized: false, timeout: 2_000 },
        (res) => {
          res.resume();
          resolve(res.statusCode === 200);
        },
      );
      req.on('error', () => resolve(false));
      req.on('timeout', () => req.destroy());
      req.end();
    });
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 500));
  }
  return false;
}

if (!(await waitReady())) {
  process.stderr.write(
    `kube-apiserver did not become ready; its last output:\n${apiserver.output().slice(-3000)}\n`,
  );
  process.stderr.write(`etcd's last output:\n${etcd.output().slice(-1500)}\n`);
  process.exit(1);
}

// The self-signed serving certificate kube-apiserver made for itself is its own CA.
const ca = readFileSync(join(dir, 'certs', 'apiserver.crt')).toString('base64');
const kubeconfig = join(dir, 'admin.kubeconfig');
writeFileSync(
  kubeconfig,
  `apiVersion: v1
kind: Config
clusters:
  - name: real
    cluster: { server: "${url}", certificate-authority-data: "${ca}" }
users:
  - name: admin
    user: { token: "${adminToken}" }
contexts:
  - name: real
    context: { cluster: real, user: admin }
current-context: real
`,
);

// No controller-manager runs: make the ServiceAccounts its controller would (pods need theirs).
{
  const { request } = await import('node:https');
  for (const ns of ['default', 'kube-system']) {
    await new Promise((resolve, reject) => {
      const req = request(
        `${url}/api/v1/namespaces/${ns}/serviceaccounts`,
        {
          method: 'POST',
          headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/json' },
          ca: Buffer.from(ca, 'base64').toString('utf8'),
        },
        (res) => {
          res.resume();
          res.on('end', resolve);
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ metadata: { name: 'default', namespace: ns } }));
    });
  }
}

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
      REAL_API_VERSION: version[0],
    },
  },
);
stopAll();
await Promise.all(
  children.map((c) => (c.exitCode === null ? new Promise((resolve) => c.once('exit', resolve)) : undefined)),
);
let summary = `real kube-apiserver ${version[0]}: jest wrote no results`;
if (existsSync(results)) {
  const r = JSON.parse(readFileSync(results, 'utf8'));
  summary =
    r.numFailedTests + r.numRuntimeErrorTestSuites === 0
      ? `real kube-apiserver ${version[0]}: ${r.numPassedTests} tests passed`
      : `real kube-apiserver ${version[0]}: ${r.numFailedTests} failed, ${r.numPassedTests} passed (logs in ${dir})`;
}
process.stdout.write(`${summary}\n`);
const code = jest.status ?? 1;
if (code === 0) rmSync(dir, { recursive: true, force: true });
process.exit(code);
