// Running a command on the host: directly, or inside PID 1's mount namespace through nsenter.
import { spawn as nodeSpawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

/** How host commands run (--host-exec): 'nsenter' from a privileged pod with hostPID, 'direct' as given. */
export type HostExecMode = 'nsenter' | 'direct';

/** kured's prefix: enter the host's mount namespace so host binaries and files are visible. */
const NSENTER_PREFIX: readonly string[] = ['/usr/bin/nsenter', '-m/proc/1/ns/mnt', '--'];

/** The subset of child_process.spawn we use; injectable so unit tests need no processes. */
export type SpawnFn = (command: string, args: readonly string[], options: SpawnOptions) => ChildProcess;

/** How a command ended. `code` is null when a signal killed it. */
export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last few KB of stderr, for error messages. */
  stderr: string;
}

/** Options of runOnHost. */
interface RunOptions {
  /** Default 'nsenter'. */
  mode?: HostExecMode;
  /** Default child_process.spawn. */
  spawn?: SpawnFn;
  /** Kills the command (SIGKILL) after this long; default 60 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** A command configured to run on the host (--reboot-command, --reboot-sentinel-command). */
export interface HostCommand {
  /** The command as argv. */
  argv: readonly string[];
  /** --host-exec. */
  mode: HostExecMode;
  /** Injectable for unit tests; default child_process.spawn. */
  spawn?: SpawnFn;
  /** Default 60 s. */
  timeoutMs?: number;
}

/** runOnHost for a configured command. */
export function runHostCommand(command: HostCommand, signal?: AbortSignal): Promise<ExitStatus> {
  return runOnHost(command.argv, {
    mode: command.mode,
    spawn: command.spawn,
    timeoutMs: command.timeoutMs,
    signal,
  });
}

const STDERR_KEEP = 4096;

/** The argv actually executed for `argv` in this mode. */
export function hostArgv(argv: readonly string[], mode: HostExecMode): string[] {
  return mode === 'nsenter' ? [...NSENTER_PREFIX, ...argv] : [...argv];
}

/**
 * Runs argv on the host and resolves with its exit status. Rejects when it cannot be started
 * (ENOENT, EACCES), times out, or the signal aborts; a non-zero exit is a status, not an error.
 */
function runOnHost(argv: readonly string[], options: RunOptions = {}): Promise<ExitStatus> {
  const full = hostArgv(argv, options.mode ?? 'nsenter');
  const [command, ...args] = full;
  if (command === undefined || command === '') return Promise.reject(new Error('empty command'));
  const spawn = options.spawn ?? nodeSpawn;
  return new Promise((resolve, reject) => {
    let stderr = '';
    let settled = false;
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    const finish = (err: Error | undefined, status?: ExitStatus): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else if (status) resolve(status);
    };
    const kill = (why: string): void => {
      child.kill('SIGKILL');
      finish(new Error(`${full.join(' ')}: ${why}`));
    };
    const onAbort = (): void => {
      kill('aborted');
    };
    const timer = setTimeout(() => {
      kill(`timed out after ${options.timeoutMs ?? 60_000} ms`);
    }, options.timeoutMs ?? 60_000);
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.signal?.aborted) onAbort();
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-STDERR_KEEP);
    });
    child.on('error', (err) => {
      finish(new Error(`cannot run ${full.join(' ')}: ${err.message}`, { cause: err }));
    });
    child.on('close', (code, sig) => {
      finish(undefined, { code, signal: sig, stderr: stderr.trim() });
    });
  });
}

/** "exit 3", "killed by SIGTERM", with stderr when there is some. */
export function describeExit(status: ExitStatus): string {
  const how = status.code === null ? `killed by ${status.signal ?? 'a signal'}` : `exit ${status.code}`;
  return status.stderr === '' ? how : `${how}: ${status.stderr}`;
}
