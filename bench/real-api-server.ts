// etcd and kube-apiserver on loopback for `npm run bench:real`, the way scripts/test-real-api.mjs
// starts them for the real-API tests (envtest convention: the user's binaries from KUBEBUILDER_ASSETS
// or setup-envtest's store, a fresh data dir, RBAC, a static admin token, ServiceAccount signing
// keys), without its audit log: a blocking audit log would add its own cost to the server's CPU,
// which the benchmark measures. Each run gets its own directory, ports and processes.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { createServer, type AddressInfo } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

/** The oldest kube-apiserver the project supports (as scripts/test-real-api.mjs). */
const MIN_MINOR = 30;
const READY_TIMEOUT_MS = 90_000;

/** KUBEBUILDER_ASSETS, else the newest version in setup-envtest's default store. */
export function findAssets(env: NodeJS.ProcessEnv): string | undefined {
  const given = env.KUBEBUILDER_ASSETS;
  if (given !== undefined && given !== '') return given;
  const store = join(env.XDG_DATA_HOME ?? join(homedir(), '.local', 'share'), 'kubebuilder-envtest', 'k8s');
  if (!existsSync(store)) return undefined;
  const versions = readdirSync(store).sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  const newest = versions.at(-1);
  return newest === undefined ? undefined : join(store, newest);
}

/** Why the benchmark cannot run with these assets (undefined: it can), and the server's version. */
export function checkAssets(assets: string | undefined): { skip?: string; version?: string } {
  if (assets === undefined)
    return { skip: 'KUBEBUILDER_ASSETS is not set and no setup-envtest store was found' };
  for (const bin of ['kube-apiserver', 'etcd'])
    if (!existsSync(join(assets, bin))) return { skip: `${join(assets, bin)} does not exist` };
  const text = spawnSync(join(assets, 'kube-apiserver'), ['--version'], { encoding: 'utf8' }).stdout.trim();
  const m = /v(\d+)\.(\d+)\.\d+\S*/.exec(text);
  if (!m) return { skip: `cannot read the version of kube-apiserver: "${text}"` };
  if (Number(m[1]) === 1 && Number(m[2]) < MIN_MINOR)
    return { skip: `kube-apiserver ${m[0]} is older than 1.${MIN_MINOR}` };
  return { version: m[0] };
}

/** A running etcd + kube-apiserver pair. */
export interface RealApiServer {
  url: string;
  /** PEM of the self-signed serving certificate (its own CA). */
  ca: string;
  /** A system:masters token. */
  token: string;
  /** An admin kubeconfig file for connectKube. */
  kubeconfig: string;
  apiserverPid: number;
  etcdPid: number;
  dir: string;
  /** Stops both and removes the directory (kept when `keep`). */
  stop(keep?: boolean): Promise<void>;
  /** The last bytes of kube-apiserver's log. */
  logTail(bytes?: number): string;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => {
        resolve(port);
      });
    });
  });
}

function start(bin: string, args: readonly string[], log: string): ChildProcess {
  const fd = openSync(log, 'a');
  return spawn(bin, args, { stdio: ['ignore', fd, fd] });
}

function ready(url: string, token: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(
      `${url}/readyz`,
      { headers: { Authorization: `Bearer ${token}` }, rejectUnauthorized: false, timeout: 2_000 },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('error', () => {
      resolve(false);
    });
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

function stopped(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

async function startEtcd(bin: string, dir: string): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const peer = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = start(
    bin,
    [
      '--data-dir',
      join(dir, 'etcd'),
      '--listen-client-urls',
      url,
      '--advertise-client-urls',
      url,
      '--listen-peer-urls',
      `http://127.0.0.1:${peer}`,
      '--initial-advertise-peer-urls',
      `http://127.0.0.1:${peer}`,
      '--initial-cluster',
      `default=http://127.0.0.1:${peer}`,
      '--quota-backend-bytes',
      String(8 * 1024 ** 3),
      '--log-level',
      'warn',
    ],
    join(dir, 'etcd.log'),
  );
  return { child, url };
}

function writeKubeconfig(dir: string, url: string, ca: string, token: string): string {
  const path = join(dir, 'admin.kubeconfig');
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters:
  - name: real
    cluster: { server: "${url}", certificate-authority-data: "${Buffer.from(ca).toString('base64')}" }
users:
  - name: admin
    user: { token: "${token}" }
contexts:
  - name: real
    context: { cluster: real, user: admin }
current-context: real
`,
  );
  return path;
}

/** Starts etcd and kube-apiserver from `assets` in a fresh directory; resolves when /readyz is 200. */
export async function startRealApiServer(assets: string): Promise<RealApiServer> {
  const dir = mkdtempSync(join(tmpdir(), 'kured-ts-bench-real-'));
  const etcd = await startEtcd(join(assets, 'etcd'), dir);
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  writeFileSync(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
  writeFileSync(join(dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
  const token = `admin-${Math.random().toString(36).slice(2)}`;
  writeFileSync(join(dir, 'tokens.csv'), `${token},admin,admin,"system:masters"\n`);
  const port = await freePort();
  const log = join(dir, 'kube-apiserver.log');
  const apiserver = start(
    join(assets, 'kube-apiserver'),
    [
      `--etcd-servers=${etcd.url}`,
      `--cert-dir=${join(dir, 'certs')}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${port}`,
      '--service-cluster-ip-range=10.0.0.0/24',
      '--authorization-mode=RBAC',
      '--allow-privileged=true',
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${join(dir, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
    ],
    log,
  );
  const url = `https://127.0.0.1:${port}`;
  // An interrupted benchmark (Ctrl-C: the entry point exits) leaves no server behind.
  const onExit = (): void => {
    apiserver.kill('SIGKILL');
    etcd.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.on('exit', onExit);
  const logTail = (bytes = 3000): string => {
    const text = existsSync(log) ? readFileSync(log, 'utf8') : '';
    return text.slice(-bytes);
  };
  const stop = async (keep = false): Promise<void> => {
    process.off('exit', onExit);
    await stopped(apiserver);
    await stopped(etcd.child);
    if (!keep) rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let up = false;
  while (!up && Date.now() < deadline && apiserver.exitCode === null && etcd.child.exitCode === null) {
    up = await ready(url, token);
    if (!up) await new Promise((r) => setTimeout(r, 500));
  }
  if (!up) {
    const tail = logTail();
    await stop(true);
    throw new Error(`kube-apiserver did not become ready (logs in ${dir}); its last output:\n${tail}`);
  }
  const ca = readFileSync(join(dir, 'certs', 'apiserver.crt'), 'utf8');
  return {
    url,
    ca,
    token,
    kubeconfig: writeKubeconfig(dir, url, ca, token),
    apiserverPid: apiserver.pid ?? 0,
    etcdPid: etcd.child.pid ?? 0,
    dir,
    stop,
    logTail,
  };
}
