// kured's maintenance window: allowed days plus a daily start/end time in one zone.
import type { WindowConfig } from './window-config.js';
import { formatDays } from './days.js';
import { nextChange } from './scan.js';
import { formatTimeOfDay } from './time-of-day.js';
import type { Window } from './window.js';
import { ZoneClock } from './zone.js';

/**
 * kured's semantics (pkg/timewindow): the day that counts is the current local date in the
 * window's zone; start is inclusive, end inclusive to the end of its second; when start is after
 * end the window wraps midnight (22:00-06:00), and then the hours after midnight belong to the
 * new day, whose weekday must be allowed too (kured checks the weekday before the wrap). An empty
 * day list never opens. Times are wall-clock times, so a window keeps its local hours across DST.
 */
export class KuredWindow implements Window {
  private readonly days: ReadonlySet<number>;
  private readonly zone: ZoneClock;

  constructor(private readonly config: WindowConfig) {
    this.days = new Set(config.days);
    this.zone = new ZoneClock(config.timeZone);
  }

  contains(at: Date): boolean {
    const local = this.zone.local(at);
    if (!this.days.has(local.weekday)) return false;
    const s = local.secondOfDay;
    const { startSecond, endSecond } = this.config;
    const afterStart = s >= startSecond;
    const beforeEnd = s < endSecond + 1;
    return startSecond > endSecond ? afterStart || beforeEnd : afterStart && beforeEnd;
  }

  describe(): string {
    const { startSecond, endSecond, timeZone } = this.config;
    const wraps = startSecond > endSecond ? ' (wraps midnight)' : '';
    return `${formatDays(this.config.days)} ${formatTimeOfDay(startSecond)}-${formatTimeOfDay(endSecond)}${wraps} ${timeZone}`;
  }

  next(at: Date): { inside: boolean; change: Date | undefined } {
    return nextChange((t) => this.contains(t), at);
  }
}
