// The guest image of `npm run test:vm`: Debian bookworm from debootstrap (the mirror apt uses, as
// scripts/image-test.sh) with systemd, the Debian kernel, containerd, runc, the CNI plugins and the
// QEMU guest agent, as a raw ext4 disk (mkfs.ext4 -d: no loop mount) plus the kernel and initrd to
// boot it with. No kubelet and no container image inside: those come per run through a read-only
// 9p share (the seed), so the image depends only on the recipe below. It is cached under
// KURED_VM_CACHE (default ~/.cache/kured-ts-vm) keyed by a hash of this recipe, so a second run
// boots at once.
//
// What the guest does at boot (kured-vm-setup, before containerd and the kubelet): reads its node
// name, address and pod subnet from the kernel command line (kured.*), configures eth0 statically,
// writes the CNI config (bridge with ipMasq: pods reach the API server through the guest's address),
// mounts the seed, installs the kubelet from it, and after containerd imports the seed's images.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

const SUITE = 'bookworm';
const DISK_SIZE = '6G'; // sparse: about 1.1 GB is written
/** Debian packages on top of debootstrap's minbase. */
const PACKAGES = [
  'systemd',
  'systemd-sysv',
  'udev',
  'dbus',
  'linux-image-amd64',
  'initramfs-tools',
  'kmod',
  'iproute2',
  'iptables',
  'util-linux',
  'mount',
  'procps',
  'containerd',
  'runc',
  'containernetworking-plugins',
  'qemu-guest-agent',
];

/** The taint every VM node registers with: only pods that tolerate it (ours) run there. */
const VM_TAINT = 'kured-ts.dev/vm-test';
/** The sandbox ("pause") image the guests' containerd uses: in their store, never pulled. */
export const PAUSE_IMAGE = 'localhost/kured-ts-pause:vm';

const CONTAINERD_CONFIG = `version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = true
`;

const KUBELET_CONFIG = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
authentication:
  anonymous: { enabled: false }
  webhook: { enabled: false }
authorization: { mode: AlwaysAllow }
failSwapOn: false
resolvConf: ""
registerWithTaints:
  - { key: ${VM_TAINT}, value: "true", effect: NoSchedule }
evictionHard: { memory.available: 50Mi, nodefs.available: 2%, imagefs.available: 2% }
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
`;

// The setup script and the configuration below reach the guest through the seed share, so changing
// them needs no new image. Everything node-specific comes from the kernel command line: kured.node, kured.ip, kured.podcidr,
// kured.gateway. The seed share carries the kubelet, the API server's CA, one token per node and
// the images.
const SETUP = `#!/bin/sh
set -eu
arg() { tr ' ' '\\n' </proc/cmdline | sed -n "s/^kured\\.$1=//p" | tail -n 1; }
node=$(arg node); ip=$(arg ip); podcidr=$(arg podcidr); gateway=$(arg gateway)
mkdir -p /run/systemd/network /etc/cni/net.d /etc/containerd /etc/kubernetes
cat >/run/systemd/network/10-eth0.network <<EOF
[Match]
Name=eth0
[Network]
Address=$ip/24
Gateway=$gateway
EOF
cat >/etc/cni/net.d/10-kured-vm.conflist <<EOF
{"cniVersion":"1.0.0","name":"kured-vm","plugins":[
 {"type":"bridge","bridge":"cni0","isGateway":true,"ipMasq":true,
  "ipam":{"type":"host-local","ranges":[[{"subnet":"$podcidr"}]],"routes":[{"dst":"0.0.0.0/0"}]}},
 {"type":"portmap","capabilities":{"portMappings":true}}]}
EOF
# the images, imported on the host (scripts/vm/containerd-store.mjs): this guest's copy of the store
mkdir -p /var/lib/containerd
mountpoint -q /var/lib/containerd || mount /dev/vdc /var/lib/containerd
install -m 0644 /run/seed/containerd-config.toml /etc/containerd/config.toml
install -m 0644 /run/seed/kubelet-config.yaml /etc/kubernetes/kubelet-config.yaml
cat >/etc/kubernetes/kubelet.kubeconfig <<EOF
apiVersion: v1
kind: Config
clusters: [{ name: vm, cluster: { server: "https://$(cat /run/seed/apiserver-address)", certificate-authority: /run/seed/ca.crt } }]
users: [{ name: kubelet, user: { tokenFile: /run/seed/tokens/$node } }]
contexts: [{ name: vm, context: { cluster: vm, user: kubelet } }]
current-context: vm
EOF
echo "KUBELET_ARGS=--hostname-override=$node --node-ip=$ip" >/etc/kubernetes/kubelet.env
`;

const UNITS = {
  'kured-vm-setup.service': `[Unit]
Description=kured-ts VM test: node configuration from the kernel command line and the seed share
DefaultDependencies=no
After=local-fs.target dev-vdb.device dev-vdc.device
Requires=dev-vdb.device dev-vdc.device
Before=systemd-networkd.service containerd.service kubelet.service
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'mkdir -p /run/seed && mount -o ro /dev/vdb /run/seed && exec /run/seed/setup'
[Install]
WantedBy=multi-user.target
`,
  'kubelet.service': `[Unit]
Description=kubelet
After=containerd.service systemd-networkd.service kured-vm-setup.service
Requires=kured-vm-setup.service
[Service]
EnvironmentFile=/etc/kubernetes/kubelet.env
ExecStart=/run/seed/kubelet --config=/etc/kubernetes/kubelet-config.yaml --kubeconfig=/etc/kubernetes/kubelet.kubeconfig $KUBELET_ARGS
Restart=always
RestartSec=2
[Install]
WantedBy=multi-user.target
`,
};

const FILES = {
  'etc/fstab': '/dev/vda / ext4 rw,errors=remount-ro 0 1\n',
  'etc/hostname': 'kured-vm\n',
  'etc/modules-load.d/kured-vm.conf': 'overlay\nbr_netfilter\n',
  'etc/sysctl.d/90-kured-vm.conf': 'net.ipv4.ip_forward = 1\nnet.bridge.bridge-nf-call-iptables = 1\n',
  // the journal of the boot before (which method rebooted it) outlives the reboot
  'etc/systemd/journald.conf.d/persistent.conf': '[Journal]\nStorage=persistent\n',
  ...Object.fromEntries(Object.entries(UNITS).map(([name, text]) => [`etc/systemd/system/${name}`, text])),
};
/**
 * What the guests run at boot, from the seed share (per run, not in the cached image): the setup
 * before containerd, the image import after it, and their configuration.
 */
export function writeSeedFiles(seed) {
  const files = {
    setup: SETUP,
    'containerd-config.toml': CONTAINERD_CONFIG,
    'kubelet-config.yaml': KUBELET_CONFIG,
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(seed, name), text, { mode: 0o755 });
}

const MASK = [
  'apt-daily.timer',
  'apt-daily-upgrade.timer',
  'dpkg-db-backup.timer',
  'e2scrub_all.timer',
  'e2scrub_reap.service',
  'fstrim.timer',
  'systemd-tmpfiles-clean.timer',
];
const ENABLE = ['kured-vm-setup.service', 'kubelet.service'];

/** The cache key: everything that goes into the image. */
function recipeKey() {
  const recipe = JSON.stringify({ SUITE, DISK_SIZE, PACKAGES, FILES, ENABLE, MASK, v: 1 });
  return createHash('sha256').update(recipe).digest('hex').slice(0, 16);
}

export function cacheRoot() {
  return (
    process.env.KURED_VM_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'kured-ts-vm')
  );
}

/** The Debian mirror apt on this machine uses (deb822 or one-line format); deb.debian.org otherwise. */
function debianMirror() {
  const out = execFileSync(
    'sh',
    [
      '-c',
      `{ grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources | grep -v security | awk '{print $2}';
         grep -hsE '^deb +(\\[[^]]*\\] +)?https?://' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
         grep -v security | sed -E 's/^deb +(\\[[^]]*\\] +)?//' | awk '{print $1}'; } | head -n 1`,
    ],
    { encoding: 'utf8' },
  ).trim();
  return out || 'http://deb.debian.org/debian';
}

function writeFiles(rootfs) {
  for (const [path, text] of Object.entries(FILES)) {
    const file = join(rootfs, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
  const wants = join(rootfs, 'etc/systemd/system/multi-user.target.wants');
  mkdirSync(wants, { recursive: true });
  for (const unit of [...ENABLE, 'systemd-networkd.service']) {
    const link = join(wants, unit);
    rmSync(link, { force: true });
    const target = unit.startsWith('systemd-')
      ? `/lib/systemd/system/${unit}`
      : `/etc/systemd/system/${unit}`;
    symlinkSync(target, link);
  }
  // nothing else competes with the kubelet for the emulated CPU
  for (const unit of MASK) {
    const link = join(rootfs, 'etc/systemd/system', unit);
    rmSync(link, { force: true });
    symlinkSync('/dev/null', link);
  }
  mkdirSync(join(rootfs, 'var/log/journal'), { recursive: true });
}

/** debootstrap's tree as a tarball, cached by the packages alone (the slow part: minutes). */
function bootstrapTarball(root, log) {
  const key = createHash('sha256').update(JSON.stringify({ SUITE, PACKAGES })).digest('hex').slice(0, 16);
  const tarball = join(root, `debootstrap-${SUITE}-${key}.tar`);
  if (existsSync(tarball)) return tarball;
  const work = mkdtempSync(join(root, 'debootstrap-'));
  const rootfs = join(work, 'rootfs');
  const mirror = debianMirror();
  const started = Date.now();
  log(`debootstrap ${SUITE} from ${mirror} with the kernel, containerd and the CNI plugins (first run only)`);
  try {
    execFileSync(
      'debootstrap',
      ['--variant=minbase', `--include=${PACKAGES.join(',')}`, SUITE, rootfs, mirror],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    rmSync(join(rootfs, 'var/lib/apt/lists'), { recursive: true, force: true });
    rmSync(join(rootfs, 'var/cache/apt/archives'), { recursive: true, force: true });
    mkdirSync(join(rootfs, 'var/cache/apt/archives/partial'), { recursive: true });
    execFileSync('tar', ['-C', rootfs, '--numeric-owner', '-cf', `${tarball}.tmp`, '.']);
    renameSync(`${tarball}.tmp`, tarball);
  } catch (err) {
    const out = `${err.stdout ?? ''}${err.stderr ?? ''}`.split('\n').slice(-20).join('\n');
    throw new Error(`debootstrap failed:\n${out}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  log(`debootstrap done in ${Math.round((Date.now() - started) / 1000)} s`);
  return tarball;
}

/** The tree with the files above, then the kernel, initrd and an ext4 disk made from it. */
function build(root, dir, log) {
  const tarball = bootstrapTarball(root, log);
  const work = mkdtempSync(join(root, 'build-'));
  try {
    const rootfs = join(work, 'rootfs');
    mkdirSync(rootfs);
    execFileSync('tar', ['-C', rootfs, '--numeric-owner', '-xf', tarball]);
    writeFiles(rootfs);
    const boot = readdirSync(join(rootfs, 'boot'));
    const kernel = boot.find((f) => f.startsWith('vmlinuz-'));
    const initrd = boot.find((f) => f.startsWith('initrd.img-'));
    if (kernel === undefined || initrd === undefined)
      throw new Error(`no kernel or initrd in /boot: ${boot.join(' ')}`);
    const out = join(work, 'out');
    mkdirSync(out);
    copyFileSync(join(rootfs, 'boot', kernel), join(out, 'vmlinuz'));
    copyFileSync(join(rootfs, 'boot', initrd), join(out, 'initrd.img'));
    execFileSync(
      'mkfs.ext4',
      ['-q', '-F', '-L', 'kured-root', '-d', rootfs, join(out, 'root.raw'), DISK_SIZE],
      {
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    rmSync(dir, { recursive: true, force: true });
    renameSync(out, dir);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  log(`guest image made: ${dir}`);
}

/** The cached guest image (built first when missing): { kernel, initrd, disk }. */
export function guestImage(log) {
  const root = cacheRoot();
  mkdirSync(root, { recursive: true });
  const dir = join(root, `guest-${SUITE}-${recipeKey()}`);
  const files = {
    kernel: join(dir, 'vmlinuz'),
    initrd: join(dir, 'initrd.img'),
    disk: join(dir, 'root.raw'),
  };
  if (Object.values(files).every((f) => existsSync(f))) {
    log(`guest image cached: ${dir}`);
    return files;
  }
  build(root, dir, log);
  return files;
}
