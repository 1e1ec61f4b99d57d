// The sentinel registry: a command when --reboot-sentinel-command is set, else the file.
import type { Config } from '../config/config.js';
import { CommandSentinel } from './command.js';
import { FileSentinel } from './file.js';
import type { Sentinel } from './sentinel.js';

export function createSentinel(
  config: Pick<Config, 'rebootSentinel' | 'rebootSentinelCommand' | 'hostExec'>,
): Sentinel {
  return config.rebootSentinelCommand.length > 0
    ? new CommandSentinel({ argv: config.rebootSentinelCommand, mode: config.hostExec })
    : new FileSentinel(config.rebootSentinel);
}
