// CommandRebooter: runs --reboot-command on the host (kured's default: nsenter + systemctl reboot).
import { describeExit, runHostCommand, type HostCommand } from './host-exec.js';
import type { Rebooter } from './rebooter.js';

/** --reboot-command as argv, and how it runs. */
export type CommandRebooterOptions = HostCommand;

export class CommandRebooter implements Rebooter {
  constructor(private readonly options: CommandRebooterOptions) {}

  async reboot(signal?: AbortSignal): Promise<void> {
    const status = await runHostCommand(this.options, signal);
    if (status.code !== 0) {
      throw new Error(`reboot command ${this.options.argv.join(' ')} failed: ${describeExit(status)}`);
    }
  }
}
