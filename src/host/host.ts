// The node's host as the agent reads it, read-only: its files under --host-root (the chart mounts
// them with read-only hostPath volumes under /host; "/" for an agent on the host itself), the
// kernel's table of file locks and its processes through /proc (the chart's agent for rebootMethod
// command runs with hostPID, so its /proc is the host's). Nothing here writes to the host. Every read
// has a deadline: a hung mount never hangs a pass.
import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** One lock of the kernel's table: the locked file's inode and the holder's pid (0 when not shown). */
export interface FileLock {
  inode: number;
  pid: number;
}

/** What the agent reads of its host (FsHostFiles; fakes in tests). Paths are the host's own. */
export interface HostFiles {
  /**
   * The text of the host's `path` (at most HOST_FILE_MAX_BYTES), undefined when it does not exist;
   * rejects when it cannot be read (EACCES, too big, no answer in time).
   */
  read(path: string, signal?: AbortSignal): Promise<string | undefined>;
  /** The names in a directory of the host; [] when there is none. */
  list(dir: string, signal?: AbortSignal): Promise<string[]>;
  /** The inode of the host's `path`, undefined when it does not exist. */
  inode(path: string, signal?: AbortSignal): Promise<number | undefined>;
  /** The kernel's file locks (/proc/locks). Rejects when they cannot be read. */
  locks(signal?: AbortSignal): Promise<FileLock[]>;
  /** Does process `pid` run on the host? */
  running(pid: number, signal?: AbortSignal): Promise<boolean>;
}

/** A file larger than this is not one we read (configuration files, pid files). */
const HOST_FILE_MAX_BYTES = 256 * 1024;
/** Each read gives up after this long (a hung NFS mount, say): the caller treats that as unknown. */
const READ_DEADLINE_MS = 5_000;

function missing(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** `work` within READ_DEADLINE_MS and the caller's signal. */
async function deadline<T>(
  what: string,
  work: (signal: AbortSignal) => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  const timeout = AbortSignal.timeout(READ_DEADLINE_MS);
  const both = signal === undefined ? timeout : AbortSignal.any([signal, timeout]);
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = (): void => {
      reject(new Error(`${what}: no answer within ${READ_DEADLINE_MS} ms`));
    };
    both.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([work(both), aborted]);
  } finally {
    if (onAbort !== undefined) both.removeEventListener('abort', onAbort);
  }
}

/** The host's files as seen under `root` (the agent's --host-root), its kernel through `proc`. */
export class FsHostFiles implements HostFiles {
  constructor(
    private readonly root: string,
    private readonly proc = '/proc',
  ) {}

  async read(path: string, signal?: AbortSignal): Promise<string | undefined> {
    const full = join(this.root, path);
    let data: Buffer;
    try {
      data = await deadline(`read ${full}`, (s) => readFile(full, { signal: s }), signal);
    } catch (err) {
      if (missing(err)) return undefined;
      throw err;
    }
    if (data.length > HOST_FILE_MAX_BYTES)
      throw new Error(`${path}: larger than ${HOST_FILE_MAX_BYTES} bytes`);
    return data.toString('utf8');
  }

  async list(dir: string, signal?: AbortSignal): Promise<string[]> {
    const full = join(this.root, dir);
    try {
      return await deadline(`list ${full}`, () => readdir(full), signal);
    } catch {
      return [];
    }
  }

  async inode(path: string, signal?: AbortSignal): Promise<number | undefined> {
    const full = join(this.root, path);
    try {
      return (await deadline(`stat ${full}`, () => stat(full), signal)).ino;
    } catch (err) {
      if (missing(err)) return undefined;
      throw err;
    }
  }

  async locks(signal?: AbortSignal): Promise<FileLock[]> {
    const path = join(this.proc, 'locks');
    const text = await deadline(
      `read ${path}`,
      (s) => readFile(path, { encoding: 'utf8', signal: s }),
      signal,
    );
    return parseProcLocks(text);
  }

  async running(pid: number, signal?: AbortSignal): Promise<boolean> {
    const path = join(this.proc, String(pid));
    try {
      await deadline(`stat ${path}`, () => stat(path), signal);
      return true;
    } catch (err) {
      if (missing(err)) return false;
      throw err;
    }
  }
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
