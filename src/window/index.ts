// The window factory: kured's days/times window, or cron schedules when configured; with exclusions.
import type { WindowConfig } from './window-config.js';
import { CronWindow } from './cron-window.js';
import { ExclusionWindow } from './exclusion-window.js';
import { KuredWindow } from './kured-window.js';
import type { Window } from './window.js';

export type { Window } from './window.js';
export { KuredWindow } from './kured-window.js';
export { CronWindow } from './cron-window.js';

/** `--reboot-schedule` (one or more) replaces days/start/end when set; `--blackout` ranges exclude. */
export function createWindow(config: WindowConfig): Window {
  const base =
    config.schedules.length === 0
      ? new KuredWindow(config)
      : new CronWindow(config.schedules, config.timeZone);
  return config.blackouts.length === 0 ? base : new ExclusionWindow(base, config.blackouts, config.timeZone);
}
