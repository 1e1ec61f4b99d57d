// CommandSentinel: runs --reboot-sentinel-command on the host; exit 0 = required, 1 = not required.
import { describeExit, runHostCommand, type HostCommand } from '../reboot/host-exec.js';
import type { Sentinel, SentinelVerdict } from './sentinel.js';

/** --reboot-sentinel-command as argv, and how it runs. */
export type CommandSentinelOptions = HostCommand;

/**
 * Any other exit, a signal, or a command that cannot run is an error verdict: "not required now",
 * never a reboot (kured reboot-loops when `needs-restarting` is missing and the command fails).
 */
export class CommandSentinel implements Sentinel {
  constructor(private readonly options: CommandSentinelOptions) {}

  async rebootRequired(signal?: AbortSignal): Promise<SentinelVerdict> {
    const name = this.options.argv.join(' ');
    try {
      const status = await runHostCommand(this.options, signal);
      if (status.code === 0) return { required: true };
      if (status.code === 1) return { required: false };
      return { required: false, error: `sentinel command ${name}: ${describeExit(status)}` };
    } catch (err) {
      if (signal?.aborted) throw err;
      return { required: false, error: (err as Error).message };
    }
  }
}
