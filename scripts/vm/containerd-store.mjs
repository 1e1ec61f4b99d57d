// The guests' containerd store, made on the host: `ctr images import` inside a guest under TCG
// takes minutes per image (digests and unpacking on an emulated CPU), so a private containerd on
// the host (Debian's, the same version as the guests') imports the image archives into a fresh root,
// and that root becomes an ext4 disk each guest mounts at /var/lib/containerd (through its own
// copy-on-write layer). Cached by the images' IDs: an unchanged image is not imported again.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const START_TIMEOUT_MS = 30_000;

/**
 * Resolves to a raw ext4 disk holding a containerd root with the archives' images in k8s.io; ids
 * (the images' IDs) key the cache.
 */
export async function containerdStore({ archives, ids }, cacheDir, log) {
  const key = createHash('sha256').update(ids.join(',')).digest('hex').slice(0, 16);
  const disk = join(cacheDir, `containerd-${key}.raw`);
  if (existsSync(disk)) {
    log(`containerd store cached: ${disk}`);
    return disk;
  }
  mkdirSync(cacheDir, { recursive: true });
  const work = mkdtempSync(join(cacheDir, 'containerd-'));
  // a short path: the socket's name must fit in sun_path
  const state = mkdtempSync('/tmp/kured-vm-ctrd-');
  const socket = join(state, 'ctrd.sock');
  const root = join(work, 'root');
  writeFileSync(
    join(work, 'config.toml'),
    `version = 2
root = "${root}"
state = "${state}"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "${socket}"
`,
  );
  const daemon = spawn('containerd', ['--config', join(work, 'config.toml')], { stdio: 'ignore' });
  try {
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!existsSync(socket)) {
      if (Date.now() > deadline || daemon.exitCode !== null)
        throw new Error('the host containerd did not start');
      await sleep(200);
    }
    for (const archive of archives) {
      execFileSync('ctr', ['--address', socket, '-n', 'k8s.io', 'images', 'import', archive], {
        stdio: 'ignore',
      });
    }
  } finally {
    daemon.kill('SIGTERM');
    await new Promise((resolve) => (daemon.exitCode === null ? daemon.once('exit', resolve) : resolve()));
    rmSync(state, { recursive: true, force: true });
  }
  // room for the containers' writable layers and logs besides the images
  execFileSync('mkfs.ext4', ['-q', '-F', '-L', 'kured-ctrd', '-d', root, join(work, 'store.raw'), '3G']);
  // only the newest store is kept
  for (const old of readdirSync(cacheDir).filter((f) => /^containerd-\w+\.raw$/.test(f))) {
    rmSync(join(cacheDir, old), { force: true });
  }
  renameSync(join(work, 'store.raw'), disk);
  rmSync(work, { recursive: true, force: true });
  log(`containerd store made: ${disk}`);
  return disk;
}
