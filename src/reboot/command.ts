// CommandRebooter: runs --reboot-command on the host (kured's default: nsenter + systemctl reboot).
import type { Rebooter } from './rebooter.js';
import { describeExit, runOnHost, type HostExecMode, type SpawnFn } from './host-exec.js';

export interface CommandRebooterOptions {
  /** --reboot-command as argv. */
  argv: readonly string[];
  /** --host-exec. */
  mode: HostExecMode;
  /** Injectable for unit tests; default child_process.spawn. */
  spawn?: SpawnFn;
  /** Default 60 s. */
  timeoutMs?: number;
}

export class CommandRebooter implements Rebooter {
  constructor(private readonly options: CommandRebooterOptions) {}

  async reboot(signal?: AbortSignal): Promise<void> {
    const status = await runOnHost(this.options.argv, {
      mode: this.options.mode,
      spawn: this.options.spawn,
      timeoutMs: this.options.timeoutMs,
      signal,
    });
    if (status.code !== 0) {
      throw new Error(`reboot command ${this.options.argv.join(' ')} failed: ${describeExit(status)}`);
    }
  }
}
