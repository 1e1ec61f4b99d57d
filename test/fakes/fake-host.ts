// A host in memory for the package-manager check: files with inodes, pid files, the kernel's lock
// table (or its failure), running processes.
import type { FileLock, HostFiles } from '../../src/host/host.js';

export class FakeHost implements HostFiles {
  /** Host path → inode (lock files) or text (pid files). */
  readonly files = new Map<string, { inode: number; text?: string }>();
  /** The lock table; an Error: /proc/locks cannot be read. */
  table: FileLock[] | Error = [];
  readonly processes = new Set<number>();
  private nextInode = 1000;

  /** A file at `path` (a new inode), with `text` for a pid file. */
  file(path: string, text?: string): number {
    const inode = this.nextInode++;
    this.files.set(path, { inode, ...(text === undefined ? {} : { text }) });
    return inode;
  }

  /** The host as Debian leaves it: dpkg's and apt's lock files, none held. */
  static debian(): FakeHost {
    const host = new FakeHost();
    for (const path of [
      '/var/lib/dpkg/lock-frontend',
      '/var/lib/dpkg/lock',
      '/var/lib/apt/lists/lock',
      '/var/cache/apt/archives/lock',
    ])
      host.file(path);
    return host;
  }

  /** Process `pid` takes the lock on `path` (an fcntl lock, as dpkg does). */
  hold(path: string, pid: number): void {
    const inode = this.files.get(path)?.inode;
    if (inode === undefined) throw new Error(`no file ${path}`);
    if (this.table instanceof Error) throw this.table;
    this.table.push({ inode, pid });
  }

  /** Every lock is released. */
  releaseAll(): void {
    this.table = [];
  }

  inode(path: string): Promise<number | undefined> {
    return Promise.resolve(this.files.get(path)?.inode);
  }

  read(path: string): Promise<string | undefined> {
    const file = this.files.get(path);
    return Promise.resolve(file === undefined ? undefined : (file.text ?? ''));
  }

  list(dir: string): Promise<string[]> {
    const names = [...this.files.keys()].filter((p) => p.startsWith(`${dir}/`));
    return Promise.resolve(names.map((p) => p.slice(dir.length + 1)));
  }

  locks(): Promise<FileLock[]> {
    return this.table instanceof Error ? Promise.reject(this.table) : Promise.resolve([...this.table]);
  }

  running(pid: number): Promise<boolean> {
    return Promise.resolve(this.processes.has(pid));
  }
}
