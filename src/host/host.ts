// The host as the agent reads it, read-only: which package manager holds its lock now (issue 44).
// The files are the host's through a read-only hostPath (the chart mounts them under /host); the
// kernel's table of file locks (/proc/locks) names the inode of every lock held, so a lock file's
// inode found there means that a process holds it. Two package managers say it with a pid file
// instead (zypper's /run/zypp.pid, dnf's rpmdb_lock.pid): held while the process it names runs.

/** One lock of the kernel's table: the locked file's inode and the holder's pid (0 when not shown). */
export interface FileLock {
  inode: number;
  pid: number;
}

/** What the agent reads of its host (ProcHost; a fake in tests). Every read has a deadline. */
export interface HostFiles {
  /** The inode of the host's `path`, undefined when it does not exist. */
  inode(path: string, signal?: AbortSignal): Promise<number | undefined>;
  /** The text of the host's `path` (at most a few KB), undefined when it does not exist. */
  read(path: string, signal?: AbortSignal): Promise<string | undefined>;
  /** The kernel's file locks (/proc/locks). Throws when they cannot be read. */
  locks(signal?: AbortSignal): Promise<FileLock[]>;
  /** Does process `pid` run on the host? */
  running(pid: number, signal?: AbortSignal): Promise<boolean>;
}

/** A package manager: the files whose lock says it is at work, kernel locks or pid files. */
interface PackageManager {
  name: string;
  /** Files locked (fcntl/flock) while it works: seen in /proc/locks. */
  locks: readonly string[];
  /** Files naming the pid of a run in progress. */
  pidFiles: readonly string[];
}

/** The package managers kured-ts waits for, with their lock files (host paths). */
export const PACKAGE_MANAGERS: readonly PackageManager[] = [
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

/**
 * The kernel's lock table as text (/proc/locks): `1: POSIX ADVISORY WRITE 1234 08:01:131090 0 EOF`,
 * a blocked waiter as `1: -> POSIX …`. The device is not compared: /proc/locks gives the superblock's,
 * which on btrfs and overlay is not what stat() says; an inode alone can only make a false "busy"
 * (a wait), never a false "idle".
 */
export function parseProcLocks(text: string): FileLock[] {
  const locks: FileLock[] = [];
  for (const line of text.split('\n')) {
    const fields = line
      .trim()
      .split(/\s+/)
      .filter((f) => f !== '->');
    // id: kind mode access pid maj:min:inode start end
    const pid = Number(fields[4]);
    const inode = Number(fields[5]?.split(':')[2]);
    if (Number.isInteger(inode) && inode > 0) locks.push({ inode, pid: Number.isInteger(pid) ? pid : 0 });
  }
  return locks;
}
