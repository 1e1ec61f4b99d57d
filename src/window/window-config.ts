// The maintenance window's settings, as the flags give them (parsed in config/flags.ts).
import type { Blackout } from './blackout.js';

/** A maintenance window: kured's days + start/end time in a zone, or a cron schedule. */
export interface WindowConfig {
  /** Days of week allowed, 0 = Sunday. Default all seven; an empty list means never. */
  days: number[];
  /** Start as minutes-of-day *60 + seconds, i.e. seconds since local midnight. Default 0 (0:00). */
  startSecond: number;
  /** End, inclusive to the end of this second. Default 86399 (23:59:59). */
  endSecond: number;
  /** IANA zone name (checked with Intl). Default 'UTC'; kured's 'Local' maps to the process zone. */
  timeZone: string;
  /** `--reboot-schedule` cron expressions (any matching opens); when set they replace days/start/end. */
  schedules: string[];
  /** `--blackout` ranges during which no reboot starts. Default none. */
  blackouts: Blackout[];
}
