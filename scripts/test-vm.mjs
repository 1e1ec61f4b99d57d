// `npm run test:vm`: real reboots of real kernels. The nodes are QEMU virtual machines (Debian
// bookworm, systemd, containerd, the CNI plugins and the user's kubelet) registered with a control
// plane on loopback (etcd, kube-apiserver, kube-controller-manager and kube-scheduler from the
// user's Kubernetes server binaries: KUBEBUILDER_ASSETS, as `npm run test:real-api`). The kured-ts
// image is built from the Dockerfile (scripts/image-test.sh --build-only) and, with a locally made
// pause image, imported into each guest's containerd: no registry is reached. jest then runs
// test/vm/ (jest.vm.config.js): the chart installed with helm, the sentinel created on every guest,
// and every reboot checked on the guest and in the cluster. It ends with one line
// `real reboots: N nodes, N kernels rebooted, L out of the load balancers during their cycle, D waited
// for dpkg's lock, V violations`.
//
// Without the binaries, QEMU (installed with apt-get on demand, as scripts/ensure-test-tools.mjs),
// root, or podman it says in one line why it skipped and exits 0.
//
// Environment: KUBEBUILDER_ASSETS (the binaries), KURED_VM_CACHE (the guest image cache, default
// ~/.cache/kured-ts-vm), KURED_VM_ACCEL (tcg or kvm; default: kvm only where a probe boot of the
// guest reached its login prompt, cached per host kernel and QEMU version, else tcg),
// KURED_VM_KEEP=1 (keep the run directory: disks, consoles, control plane logs).
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { URL } from 'node:url';
import { binaryVersion, findAssets, post, startControlPlane } from './control-plane.mjs';
import { ensureDebianPackages } from './ensure-test-tools.mjs';
import { containerdStore } from './vm/containerd-store.mjs';
import { cacheRoot, guestImage, PAUSE_IMAGE, writeSeedFiles } from './vm/guest-image.mjs';
import { pauseBinary } from './vm/pause.mjs';
import { API_ADDRESS, consoleText, SERVICE_CIDR, startVm, stopVm } from './vm/qemu.mjs';

const MIN_MINOR = 30; // the chart's ValidatingAdmissionPolicy v1, pod-bound tokens with the node name
const BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubelet'];
const NODES = [
  { name: 'kured-vm-1', index: 1 },
  { name: 'kured-vm-2', index: 2 },
];
const IMAGE = 'localhost/kured-ts:vm';
const READY_TIMEOUT_MS = 6 * 60_000; // two first boots under TCG on 2 cores, images imported: 191 s measured (one alone: about 40 s)
const PROBE_TIMEOUT_MS = 90_000;

const started = Date.now();
const log = (line) =>
  process.stdout.write(`[test:vm ${Math.round((Date.now() - started) / 1000)}s] ${line}\n`);
function skip(why) {
  process.stdout.write(
    `real reboot tests skipped: ${why}; see CONTRIBUTING.md, Testing (npm run test:vm) for the Kubernetes server binaries it needs\n`,
  );
  process.exit(0);
}
function fail(why) {
  process.stderr.write(`real reboot tests failed: ${why}\n`);
  process.exitCode = 1;
}

// --- what the suite needs, or a one-line skip ---
const assets = findAssets();
if (assets === undefined) skip('KUBEBUILDER_ASSETS is not set and no setup-envtest store was found');
for (const bin of BINARIES) if (!existsSync(join(assets, bin))) skip(`${join(assets, bin)} does not exist`);
const version = binaryVersion(join(assets, 'kube-apiserver'));
if (!version || (version.major === 1 && version.minor < MIN_MINOR))
  skip(`kube-apiserver ${version?.text ?? '(version unknown)'} is older than 1.${MIN_MINOR}`);
if (process.platform !== 'linux' || process.arch !== 'x64')
  skip(`needs linux/x64, not ${process.platform}/${process.arch}`);
if (process.getuid?.() !== 0) skip('needs root (debootstrap, the guest disk image)');
const missing = ensureDebianPackages(
  {
    'qemu-system-x86': ['/usr/bin/qemu-system-x86_64'],
    'qemu-utils': ['/usr/bin/qemu-img'],
    debootstrap: ['/usr/sbin/debootstrap'],
    socat: ['/usr/bin/socat'],
    podman: ['/usr/bin/podman'],
    e2fsprogs: ['/sbin/mkfs.ext4'],
    containerd: ['/usr/bin/containerd', '/usr/bin/ctr'],
  },
  log,
);
if (missing !== undefined) skip(missing);

const dir = mkdtempSync(join(tmpdir(), 'kured-ts-vm-'));
const vms = [];
let plane;
async function cleanup(keep) {
  await Promise.all(vms.map((vm) => stopVm(vm)));
  await plane?.stop();
  if (keep) log(`kept ${dir} (consoles, QEMU and control plane logs, disks)`);
  else rmSync(dir, { recursive: true, force: true });
}

/** KVM where a probe boot of the guest reaches its login prompt (cached), else TCG. */
async function pickAccel(image) {
  const given = process.env.KURED_VM_ACCEL;
  if (given === 'tcg' || given === 'kvm') return given;
  if (!existsSync('/dev/kvm')) return 'tcg';
  const qemu = spawnSync('qemu-system-x86_64', ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0];
  const key = join(cacheRoot(), `kvm-probe-${release()}-${qemu.replace(/[^\w.-]+/g, '_')}.json`);
  if (existsSync(key)) return JSON.parse(readFileSync(key, 'utf8')).works ? 'kvm' : 'tcg';
  log('probing KVM: booting the guest once with it (cached for this host kernel and QEMU)');
  const probeDir = mkdtempSync(join(dir, 'kvm-probe-'));
  const vm = startVm({
    node: { name: 'kvm-probe', index: 9 },
    image,
    dir: probeDir,
    apiPort: 1,
    accel: 'kvm',
  });
  const deadline = Date.now() + PROBE_TIMEOUT_MS;
  let works = false;
  while (!works && Date.now() < deadline && vm.process.exitCode === null && vm.process.signalCode === null) {
    await new Promise((r) => setTimeout(r, 1_000));
    works = /login:/.test(consoleText(vm));
  }
  await stopVm(vm);
  writeFileSync(key, JSON.stringify({ works, checked: new Date().toISOString() }));
  log(
    `KVM ${works ? 'boots the guest' : `did not boot the guest within ${PROBE_TIMEOUT_MS / 1000} s`}: using ${works ? 'kvm' : 'tcg'}`,
  );
  return works ? 'kvm' : 'tcg';
}

/** The kured-ts image from the Dockerfile and the pause image, saved as archives: paths and image IDs. */
function buildImages() {
  const images = join(dir, 'images');
  mkdirSync(images, { recursive: true });
  log(`building ${IMAGE} from the Dockerfile (scripts/image-test.sh --build-only)`);
  const built = spawnSync('bash', ['scripts/image-test.sh', '--build-only'], {
    encoding: 'utf8',
    env: { ...process.env, KURED_IMAGE_TAG: IMAGE },
  });
  const skipped = /^image-test: SKIP: (.*)$/m.exec(built.stdout);
  if (skipped) skip(`the image cannot be built here: ${skipped[1]}`);
  if (built.status !== 0) throw new Error(`image build failed:\n${built.stdout}${built.stderr}`);
  execFileSync('podman', [
    'save',
    '-q',
    '--format',
    'docker-archive',
    '-o',
    join(images, 'kured-ts.tar'),
    IMAGE,
  ]);
  const pause = join(dir, 'pause');
  mkdirSync(pause);
  writeFileSync(join(pause, 'pause'), pauseBinary(), { mode: 0o755 });
  writeFileSync(join(pause, 'Containerfile'), 'FROM scratch\nCOPY pause /pause\nENTRYPOINT ["/pause"]\n');
  execFileSync('podman', ['build', '-q', '--isolation', 'chroot', '-t', PAUSE_IMAGE, pause], {
    stdio: 'ignore',
  });
  execFileSync('podman', [
    'save',
    '-q',
    '--format',
    'docker-archive',
    '-o',
    join(images, 'pause.tar'),
    PAUSE_IMAGE,
  ]);
  const ids = execFileSync('podman', ['image', 'inspect', '--format', '{{.Id}}', IMAGE, PAUSE_IMAGE], {
    encoding: 'utf8',
  });
  return { archives: [join(images, 'kured-ts.tar'), join(images, 'pause.tar')], ids: ids.trim().split('\n') };
}

/** The seed directory as a read-only ext4 disk (the guests' /dev/vdb): much faster than 9p under TCG. */
function seedDisk(seed) {
  const bytes = Number(execFileSync('du', ['-sb', seed], { encoding: 'utf8' }).split('\t')[0]);
  const image = join(dir, 'seed.img');
  const mib = Math.ceil((bytes * 1.2) / 2 ** 20) + 32;
  execFileSync('mkfs.ext4', ['-q', '-F', '-L', 'kured-seed', '-d', seed, image, `${mib}M`]);
  return image;
}

/** Nodes Ready, or the guests' consoles say why not. */
async function waitNodesReady(kube) {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const ready = await kube.readyNodes();
    if (NODES.every((n) => ready.includes(n.name))) return;
    for (const vm of vms) if (vm.process.exitCode !== null) throw new Error(`QEMU of ${vm.name} exited`);
    await new Promise((r) => setTimeout(r, 2_000));
  }
  const tails = vms.map(
    (vm) => `--- ${vm.name} console:\n${consoleText(vm).split('\n').slice(-25).join('\n')}`,
  );
  throw new Error(`the nodes were not Ready within ${READY_TIMEOUT_MS / 60_000} min\n${tails.join('\n')}`);
}

function apiClient(url, token, ca) {
  return {
    async readyNodes() {
      const { request } = await import('node:https');
      return new Promise((resolve) => {
        const req = request(
          `${url}/api/v1/nodes`,
          {
            headers: { Authorization: `Bearer ${token}` },
            ca: Buffer.from(ca, 'base64').toString('utf8'),
            timeout: 5_000,
          },
          (res) => {
            const chunks = [];
            res.on('data', (c) => chunks.push(c));
            res.on('end', () => {
              try {
                const items = JSON.parse(Buffer.concat(chunks).toString('utf8')).items ?? [];
                resolve(
                  items
                    .filter((n) =>
                      n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
                    )
                    .map((n) => n.metadata.name),
                );
              } catch {
                resolve([]);
              }
            });
          },
        );
        req.on('error', () => resolve([]));
        req.on('timeout', () => req.destroy());
        req.end();
      });
    },
  };
}

async function main() {
  const image = guestImage(log);
  const accel = await pickAccel(image);
  const seed = join(dir, 'seed');
  mkdirSync(join(seed, 'tokens'), { recursive: true });
  const store = await containerdStore(buildImages(), cacheRoot(), log);
  copyFileSync(join(assets, 'kubelet'), join(seed, 'kubelet'));
  writeSeedFiles(seed);

  // Each kubelet authenticates as its node (Node authorizer): a token per node in the token file.
  const tokens = NODES.map((n) => {
    const token = randomBytes(16).toString('hex');
    writeFileSync(join(seed, 'tokens', n.name), token);
    return `${token},system:node:${n.name},${n.name},"system:nodes"`;
  });
  log(`starting etcd, kube-apiserver ${version.text}, kube-controller-manager and kube-scheduler`);
  plane = await startControlPlane({
    assets,
    dir,
    serviceCIDR: SERVICE_CIDR,
    authorization: 'Node,RBAC',
    tokens,
    controllers: true,
  });
  copyFileSync(plane.caFile, join(seed, 'ca.crt'));
  writeFileSync(join(seed, 'apiserver-address'), `${API_ADDRESS}:443`);
  // A kube-apiserver built from OpenShift's fork adds this ConfigMap to every projected token volume.
  const caPem = readFileSync(plane.caFile, 'utf8');
  for (const ns of ['kube-system', 'default']) {
    await post(plane.url, plane.adminToken, plane.ca, `/api/v1/namespaces/${ns}/configmaps`, {
      metadata: { name: 'openshift-service-ca.crt', namespace: ns },
      data: { 'service-ca.crt': caPem },
    });
  }

  const seedImage = seedDisk(seed);
  const apiPort = Number(new URL(plane.url).port);
  log(`booting ${NODES.length} VMs (${accel}): ${NODES.map((n) => n.name).join(', ')}`);
  for (const node of NODES) vms.push(startVm({ node, image, seed: seedImage, store, dir, apiPort, accel }));
  await waitNodesReady(apiClient(plane.url, plane.adminToken, plane.ca));
  log('every node Ready; running test/vm');

  const results = join(dir, 'results.json');
  const jest = spawnSync(
    process.execPath,
    [
      '--experimental-vm-modules',
      '--no-warnings=ExperimentalWarning',
      'node_modules/jest/bin/jest.js',
      '--config',
      'jest.vm.config.js',
      '--runInBand',
      ...process.argv.slice(2),
    ],
    {
      stdio: 'inherit',
      env: {
        ...process.env,
        REAL_API_KUBECONFIG: plane.kubeconfig,
        REAL_API_AUDIT_LOG: plane.auditLog,
        REAL_API_URL: plane.url,
        REAL_API_CA: plane.ca,
        REAL_API_VERSION: version.text,
        VM_NODES: JSON.stringify(vms.map((vm) => ({ name: vm.name, qga: vm.qga, console: vm.console }))),
        VM_IMAGE: IMAGE,
        VM_RESULTS: results,
      },
    },
  );
  const r = existsSync(results) ? JSON.parse(readFileSync(results, 'utf8')) : undefined;
  if (r === undefined) {
    fail('test/vm wrote no results');
    return false;
  }
  process.stdout.write(
    `real reboots: ${r.nodes} nodes, ${r.rebooted} kernels rebooted, ${r.outOfLb ?? 0} out of the load balancers during their cycle, ${r.waitedForDpkg ?? 0} waited for dpkg's lock, ${r.violations.length} violations\n`,
  );
  for (const v of r.violations) process.stdout.write(`  violation: ${v}\n`);
  if (jest.status !== 0 || r.violations.length > 0 || r.rebooted !== r.nodes) {
    fail('see above');
    return false;
  }
  return true;
}

let ok = false;
try {
  ok = await main();
} catch (err) {
  fail(err.stack ?? String(err));
}
await cleanup(!ok || process.env.KURED_VM_KEEP === '1');
log(`done in ${Math.round((Date.now() - started) / 1000)} s`);
process.exit(ok ? 0 : 1);
