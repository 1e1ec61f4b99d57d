// The window factory: kured's days/times window, or a cron schedule when one is configured.
import type { WindowConfig } from '../config/config.js';
import { CronWindow } from './cron-window.js';
import { KuredWindow } from './kured-window.js';
import type { Window } from './window.js';

export type { Window } from './window.js';
export { KuredWindow } from './kured-window.js';
export { CronWindow } from './cron-window.js';

/** `--reboot-schedule` replaces days/start/end when set. */
export function createWindow(config: WindowConfig): Window {
  return config.schedule.trim() === ''
    ? new KuredWindow(config)
    : new CronWindow(config.schedule, config.timeZone);
}
