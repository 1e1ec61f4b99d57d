// The rebooter registry: --reboot-method picks one implementation.
import type { Config } from '../config/config.js';
import { CommandRebooter } from './command.js';
import type { Rebooter } from './rebooter.js';
import { SignalRebooter } from './signal.js';

export function createRebooter(
  config: Pick<Config, 'rebootMethod' | 'rebootCommand' | 'rebootSignal' | 'hostExec'>,
): Rebooter {
  return config.rebootMethod === 'signal'
    ? new SignalRebooter(config.rebootSignal)
    : new CommandRebooter({ argv: config.rebootCommand, mode: config.hostExec });
}
