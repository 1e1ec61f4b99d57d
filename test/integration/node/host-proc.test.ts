// FsHostFiles on this machine's real kernel: a lock file under a host root, locked by a real process
// (flock(1), as apt's and dpkg's own locks are held while they work), found through /proc/locks.
import { afterEach, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsHostFiles } from '../../../src/host/host.js';
import { readPackageManagers } from '../../../src/host/package-managers.js';

let root: string | undefined;
let holder: ChildProcess | undefined;

/** Kills the holder and its sleep (one process group). */
function killHolder(): void {
  const pid = holder?.pid;
  if (pid === undefined || holder?.exitCode !== null || holder.signalCode !== null) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // the group is gone already
  }
}

afterEach(() => {
  killHolder();
  holder = undefined;
  if (root !== undefined) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

/** A host root with dpkg's lock files, as Debian leaves them. */
function debianRoot(): string {
  const dir = mkdtempSync(join(tmpdir(), 'kured-ts-host-'));
  mkdirSync(join(dir, 'var/lib/dpkg'), { recursive: true });
  writeFileSync(join(dir, 'var/lib/dpkg/lock-frontend'), '');
  writeFileSync(join(dir, 'var/lib/dpkg/lock'), '');
  return dir;
}

/** A process that holds the lock on `path` until killed; resolves once it holds it. */
function holdLock(path: string): Promise<ChildProcess> {
  // -o: only flock itself holds the lock, so that killing it releases the lock
  const child = spawn('flock', ['-o', path, 'sh', '-c', 'echo locked; exec sleep 60'], {
    stdio: ['ignore', 'pipe', 'ignore'],
    detached: true,
  });
  return new Promise((resolve, reject) => {
    child.stdout.once('data', () => {
      resolve(child);
    });
    child.once('error', reject);
  });
}

describe('FsHostFiles on the real kernel', () => {
  it('finds dpkg idle, then at work while a process holds lock-frontend, then idle once it is gone', async () => {
    root = debianRoot();
    const host = new FsHostFiles(root);
    expect(await readPackageManagers(host)).toEqual({ state: 'idle', found: ['dpkg/apt'] });
    holder = await holdLock(join(root, 'var/lib/dpkg/lock-frontend'));
    const busy = await readPackageManagers(host);
    expect(busy).toMatchObject({ state: 'busy' });
    expect(busy.state === 'busy' && busy.holder).toMatch(
      /^dpkg\/apt \(\/var\/lib\/dpkg\/lock-frontend locked by pid \d+\)$/,
    );
    const ended = new Promise((resolve) => holder?.once('exit', resolve));
    killHolder();
    await ended;
    expect(await readPackageManagers(host)).toEqual({ state: 'idle', found: ['dpkg/apt'] });
  });

  it('finds no package manager under a root without their files', async () => {
    root = mkdtempSync(join(tmpdir(), 'kured-ts-host-'));
    expect(await readPackageManagers(new FsHostFiles(root))).toEqual({ state: 'none' });
  });

  it('says unknown when the lock table cannot be read', async () => {
    root = debianRoot();
    const host = new FsHostFiles(root, join(root, 'no-proc'));
    expect(await readPackageManagers(host)).toMatchObject({ state: 'unknown' });
  });
});
