// A Kubernetes control plane on loopback from binaries the user provides, the envtest way
// (KUBEBUILDER_ASSETS, or setup-envtest's default store): etcd and kube-apiserver with a fresh data
// dir, RBAC on, ServiceAccount token signing (TokenRequest works) and an audit log; optionally
// kube-controller-manager and kube-scheduler. Used by `npm run test:real-api`
// (scripts/test-real-api.mjs) and `npm run test:vm` (scripts/test-vm.mjs).
import { spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';

const READY_TIMEOUT_MS = 90_000;

/** KUBEBUILDER_ASSETS, else the newest version in setup-envtest's default store. */
export function findAssets() {
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

/** `v1.32.13` and its minor version, from `BIN --version`; undefined when it does not say. */
export function binaryVersion(bin) {
  const text = spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout?.trim() ?? '';
  const version = /v(\d+)\.(\d+)\.\d+\S*/.exec(text);
  return version ? { text: version[0], major: Number(version[1]), minor: Number(version[2]) } : undefined;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts the control plane in `dir`.
 * - serviceCIDR: --service-cluster-ip-range (its first address is in the serving certificate)
 * - authorization: --authorization-mode
 * - tokens: more lines of the token file ("token,user,uid,\"group\"")
 * - controllers: also run kube-controller-manager and kube-scheduler
 * Resolves to { url, ca (base64 PEM), caFile, adminToken, kubeconfig, auditLog, stop, output }.
 */
export async function startControlPlane(options) {
  const {
    assets,
    dir,
    serviceCIDR = '10.0.0.0/24',
    authorization = 'RBAC',
    tokens = [],
    controllers = false,
  } = options;
  const children = [];
  const stopAll = () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  };
  process.on('exit', stopAll);
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.on(signal, () => {
      stopAll();
      process.exit(130);
    });
  }
  const outputs = {};
  function start(name, args) {
    const child = spawn(join(assets, name), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks = [];
    child.stdout.on('data', (c) => chunks.push(c));
    child.stderr.on('data', (c) => chunks.push(c));
    child.on('exit', () => writeFileSync(join(dir, `${name}.log`), Buffer.concat(chunks)));
    children.push(child);
    outputs[name] = () => Buffer.concat(chunks).toString('utf8');
    return child;
  }

  const etcdPort = await freePort();
  const peerPort = await freePort();
  const etcd = start('etcd', [
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
  ]);

  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  writeFileSync(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
  writeFileSync(join(dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
  const adminToken = `admin-${Math.random().toString(36).slice(2)}`;
  writeFileSync(
    join(dir, 'tokens.csv'),
    [`${adminToken},admin,admin,"system:masters"`, ...tokens, ''].join('\n'),
  );
  // Every request at Metadata level: who did what to which object, and the answer (denials included).
  writeFileSync(
    join(dir, 'audit-policy.yaml'),
    'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n  - level: Metadata\n',
  );
  const auditLog = join(dir, 'audit.log');
  const apiPort = await freePort();
  const apiserver = start('kube-apiserver', [
    `--etcd-servers=http://127.0.0.1:${etcdPort}`,
    `--cert-dir=${join(dir, 'certs')}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${apiPort}`,
    `--service-cluster-ip-range=${serviceCIDR}`,
    `--authorization-mode=${authorization}`,
    '--allow-privileged=true', // the chart's agent is a privileged pod
    `--token-auth-file=${join(dir, 'tokens.csv')}`,
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${join(dir, 'sa.pub')}`,
    `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
    `--audit-policy-file=${join(dir, 'audit-policy.yaml')}`,
    `--audit-log-path=${auditLog}`,
    '--audit-log-mode=blocking',
  ]);

  const url = `https://127.0.0.1:${apiPort}`;
  const exited = () => apiserver.exitCode !== null || etcd.exitCode !== null;
  if (!(await waitReady(url, adminToken, exited))) {
    throw new Error(
      `kube-apiserver did not become ready; its last output:\n${outputs['kube-apiserver']().slice(-3000)}\n` +
        `etcd's last output:\n${outputs.etcd().slice(-1500)}`,
    );
  }

  // The self-signed serving certificate kube-apiserver made for itself is its own CA.
  const caFile = join(dir, 'certs', 'apiserver.crt');
  const ca = readFileSync(caFile).toString('base64');
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

  if (controllers) {
    start('kube-controller-manager', [
      `--kubeconfig=${kubeconfig}`,
      `--service-account-private-key-file=${join(dir, 'sa.key')}`,
      `--root-ca-file=${caFile}`,
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
      `--secure-port=${await freePort()}`,
      '--use-service-account-credentials=true',
    ]);
    start('kube-scheduler', [
      `--kubeconfig=${kubeconfig}`,
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
      `--secure-port=${await freePort()}`,
    ]);
  } else {
    // No controller-manager runs: make the ServiceAccounts its controller would (pods need theirs).
    for (const ns of ['default', 'kube-system']) {
      await post(url, adminToken, ca, `/api/v1/namespaces/${ns}/serviceaccounts`, {
        metadata: { name: 'default', namespace: ns },
      });
    }
  }

  const stop = async () => {
    stopAll();
    await Promise.all(
      children.map((c) =>
        c.exitCode === null ? new Promise((resolve) => c.once('exit', resolve)) : undefined,
      ),
    );
  };
  return {
    url,
    ca,
    caFile,
    adminToken,
    kubeconfig,
    auditLog,
    stop,
    output: (name) => outputs[name]?.() ?? '',
  };
}

async function waitReady(url, token, exited) {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  const { request } = await import('node:https');
  while (Date.now() < deadline) {
    if (exited()) break;
    const ok = await new Promise((resolve) => {
      const req = request(
        `${url}/readyz`,
        { headers: { Authorization: `Bearer ${token}` }, rejectUnauthorized: false, timeout: 2_000 },
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

/** POST a JSON object as admin; resolves to the status code. */
export async function post(url, token, ca, path, body) {
  const { request } = await import('node:https');
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        ca: Buffer.from(ca, 'base64').toString('utf8'),
        timeout: 10_000,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`POST ${path}: no answer within 10 s`)));
    req.end(JSON.stringify(body));
  });
}
