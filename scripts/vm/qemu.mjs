// One node of `npm run test:vm` as a QEMU virtual machine: the cached guest image under a per-run
// copy-on-write disk, booted straight into its kernel with the node's settings on the command line
// (scripts/vm/guest-image.mjs reads them). Networking is QEMU's user mode with restrict=on: the
// guest reaches nothing but one forwarded address, the API server's service address, which a socat
// per connection carries to the host's kube-apiserver on loopback. The seed directory is shared
// read-only over 9p; the QEMU guest agent's socket is the suite's control channel into the guest.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The guest side of the API server: the first address of the service range (in its certificate). */
export const API_ADDRESS = '10.96.0.1';
export const SERVICE_CIDR = '10.96.0.0/12';
const GUEST_NET = '10.96.0.0/24';
const SLIRP_HOST = '10.96.0.2';

/**
 * Starts a VM. node: { name, index } (index from 1: address 10.96.0.(10+index), pod subnet
 * 10.244.index.0/24); image: guestImage()'s files; apiPort: the host's kube-apiserver port.
 * Returns { name, ip, qga, console, process }.
 */
export function startVm({ node, image, seed, store, dir, apiPort, accel, memoryMiB = 1536 }) {
  const ip = `10.96.0.${10 + node.index}`;
  const overlay = (base, name) => {
    const file = join(dir, `${node.name}.${name}.qcow2`);
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-F', 'raw', '-b', base, file]);
    return file;
  };
  const disk = overlay(image.disk, 'root');
  const qga = join(dir, `${node.name}.qga.sock`);
  const console = join(dir, `${node.name}.console.log`);
  const append = [
    'root=/dev/vda',
    'rw',
    'console=ttyS0',
    'net.ifnames=0',
    'panic=-1',
    `systemd.hostname=${node.name}`,
    `kured.node=${node.name}`,
    `kured.ip=${ip}`,
    `kured.gateway=${SLIRP_HOST}`,
    `kured.podcidr=10.244.${node.index}.0/24`,
  ].join(' ');
  const forward = `guestfwd=tcp:${API_ADDRESS}:443-cmd:socat - TCP:127.0.0.1:${apiPort}`;
  const args = [
    '-name',
    node.name,
    '-machine',
    `q35,accel=${accel}`,
    '-cpu',
    accel === 'kvm' ? 'host' : 'max',
    '-smp',
    '1',
    '-m',
    String(memoryMiB),
    '-nodefaults',
    '-no-user-config',
    '-display',
    'none',
    '-serial',
    `file:${console}`,
    '-kernel',
    image.kernel,
    '-initrd',
    image.initrd,
    '-append',
    append,
    '-drive',
    `file=${disk},if=virtio,format=qcow2,cache=unsafe`,
    '-netdev',
    `user,id=net0,restrict=on,net=${GUEST_NET},host=${SLIRP_HOST},${forward}`,
    '-device',
    `virtio-net-pci,netdev=net0,mac=52:54:00:12:34:${String(node.index).padStart(2, '0')}`,
    ...(seed === undefined ? [] : ['-drive', `file=${seed},if=virtio,format=raw,readonly=on`]),
    ...(store === undefined
      ? []
      : ['-drive', `file=${overlay(store, 'containerd')},if=virtio,format=qcow2,cache=unsafe`]),
    '-chardev',
    `socket,id=qga0,path=${qga},server=on,wait=off`,
    '-device',
    'virtio-serial-pci',
    '-device',
    'virtserialport,chardev=qga0,name=org.qemu.guest_agent.0',
    '-object',
    'rng-random,id=rng0,filename=/dev/urandom',
    '-device',
    'virtio-rng-pci,rng=rng0',
  ];
  const out = openSync(join(dir, `${node.name}.qemu.log`), 'a');
  const child = spawn('qemu-system-x86_64', args, { stdio: ['ignore', out, out] });
  // an interrupted run (SIGINT, SIGTERM: scripts/control-plane.mjs exits) leaves no VM behind
  process.on('exit', () => child.kill('SIGKILL'));
  return { name: node.name, ip, qga, console, process: child };
}

/** The guest's serial console so far ('' before it wrote anything). */
export function consoleText(vm) {
  return existsSync(vm.console) ? readFileSync(vm.console, 'utf8') : '';
}

/** Stops the VM (SIGTERM to QEMU: the guest is simply switched off) and waits for QEMU to exit. */
export async function stopVm(vm) {
  if (vm.process.exitCode !== null || vm.process.signalCode !== null) return;
  const exited = new Promise((resolve) => vm.process.once('exit', resolve));
  vm.process.kill('SIGTERM');
  await exited;
}
