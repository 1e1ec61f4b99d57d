// The host's package managers as the agent reads them (issue 44): which one holds its lock now. The
// kernel's table of file locks (/proc/locks) names the inode of every lock held, so a lock file's
// inode found there means that a process holds it. Two package managers say it with a pid file
// instead (zypper's /run/zypp.pid, dnf's rpmdb_lock.pid): held while the process it names runs.
import type { FileLock, HostFiles } from './host.js';

/** A package manager: the files whose lock says it is at work, kernel locks or pid files. */
interface PackageManager {
  name: string;
  /** Files locked (fcntl/flock) while it works: seen in /proc/locks. */
  locks: readonly string[];
  /** Files naming the pid of a run in progress. */
  pidFiles: readonly string[];
}

/** The package managers kured-ts waits for, with their lock files (host paths). */
const PACKAGE_MANAGERS: readonly PackageManager[] = [
  {
    name: 'dpkg/apt',
    locks: [
      '/var/lib/dpkg/lock-frontend',
      '/var/lib/dpkg/lock',
      '/var/lib/apt/lists/lock',
      '/var/cache/apt/archives/lock',
    ],
    pidFiles: [],
  },
  // unattended-upgrades holds this lock for the whole run, between its dpkg calls too
  { name: 'unattended-upgrades', locks: ['/run/unattended-upgrades.lock'], pidFiles: [] },
  { name: 'rpm/dnf', locks: ['/var/lib/rpm/.rpm.lock'], pidFiles: ['/var/lib/dnf/rpmdb_lock.pid'] },
  { name: 'zypper', locks: [], pidFiles: ['/run/zypp.pid'] },
];

/**
 * What the host says now: `busy` (which manager, which file, which pid); `idle` (some exist, none at
 * work); `none` (no package manager here); `unknown` (the lock table could not be read, and no pid
 * file says one is at work: why).
 */
export type PackageManagerState =
  | { state: 'busy'; holder: string }
  | { state: 'idle'; found: string[] }
  | { state: 'none' }
  | { state: 'unknown'; why: string };

/** A lock file of a package manager that exists on the host, with its inode. */
interface LockFile {
  manager: string;
  path: string;
  inode: number;
}

/** What the files alone say: a run in progress named by a pid file, or which managers exist and their lock files. */
type FileFacts = { busy: string } | { found: string[]; locked: LockFile[] };

/**
 * What the pid file `path` says: who is at work when it names a process that runs now, '' when it
 * names none that runs (the manager exists, idle), undefined when there is no such file.
 */
async function runningPid(
  host: HostFiles,
  manager: string,
  path: string,
  signal?: AbortSignal,
): Promise<string | undefined> {
  const text = await host.read(path, signal);
  if (text === undefined) return undefined;
  const pid = Number.parseInt(text.trim(), 10);
  if (pid > 0 && (await host.running(pid, signal))) return `${manager} (${path} names running pid ${pid})`;
  return '';
}

async function fileFacts(host: HostFiles, signal?: AbortSignal): Promise<FileFacts> {
  const found = new Set<string>();
  const locked: LockFile[] = [];
  for (const manager of PACKAGE_MANAGERS) {
    for (const path of manager.pidFiles) {
      const busy = await runningPid(host, manager.name, path, signal);
      if (busy) return { busy };
      if (busy !== undefined) found.add(manager.name);
    }
    for (const path of manager.locks) {
      const inode = await host.inode(path, signal);
      if (inode === undefined) continue;
      found.add(manager.name);
      locked.push({ manager: manager.name, path, inode });
    }
  }
  return { found: [...found], locked };
}

/** The host's package managers now; a pid file that names a running process is busy whatever else fails. */
export async function readPackageManagers(
  host: HostFiles,
  signal?: AbortSignal,
): Promise<PackageManagerState> {
  const facts = await fileFacts(host, signal);
  if ('busy' in facts) return { state: 'busy', holder: facts.busy };
  const { found, locked } = facts;
  if (found.length === 0) return { state: 'none' };
  if (locked.length === 0) return { state: 'idle', found };
  let table: FileLock[];
  try {
    table = await host.locks(signal);
  } catch (err) {
    return {
      state: 'unknown',
      why: `/proc/locks cannot be read: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  for (const file of locked) {
    const lock = table.find((l) => l.inode === file.inode);
    if (lock !== undefined) {
      const by = lock.pid > 0 ? ` by pid ${lock.pid}` : '';
      return { state: 'busy', holder: `${file.manager} (${file.path} locked${by})` };
    }
  }
  return { state: 'idle', found };
}
