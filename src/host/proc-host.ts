// ProcHost: the host's files through a read-only mount (`root`, /host in the chart) and its kernel's
// lock table and processes through /proc (the chart's agent for rebootMethod command runs with
// hostPID, so its /proc is the host's). Every read has a deadline: a hung mount never hangs a pass.
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parseProcLocks, type FileLock, type HostFiles } from './host.js';

/** Each read gives up after this long (a hung NFS mount, say): the caller treats that as unknown. */
const READ_DEADLINE_MS = 5_000;
/** A pid file is a number: more than this is not one. */
const MAX_TEXT = 4096;

export interface ProcHostOptions {
  /** Where the host's root is mounted ('/' for an agent on the host itself). */
  root: string;
  /** The host's /proc (default /proc). */
  proc?: string;
}

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

export class ProcHost implements HostFiles {
  private readonly proc: string;

  constructor(private readonly options: ProcHostOptions) {
    this.proc = options.proc ?? '/proc';
  }

  async inode(path: string, signal?: AbortSignal): Promise<number | undefined> {
    const full = join(this.options.root, path);
    try {
      return (await deadline(`stat ${full}`, () => stat(full), signal)).ino;
    } catch (err) {
      if (missing(err)) return undefined;
      throw err;
    }
  }

  async read(path: string, signal?: AbortSignal): Promise<string | undefined> {
    const full = join(this.options.root, path);
    try {
      const text = await deadline(
        `read ${full}`,
        (s) => readFile(full, { encoding: 'utf8', signal: s }),
        signal,
      );
      return text.slice(0, MAX_TEXT);
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
