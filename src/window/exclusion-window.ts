// A maintenance window with exclusions (`--blackout`): open when the window is and no blackout range
// covers the instant. next() skips a blackout in hour steps (it may last weeks) and then asks the
// window for its next opening, so a two-week exclusion costs a few hundred checks, not a scan of
// every minute.
import { inBlackout, type Blackout } from './blackout.js';
import { HORIZON_MS } from './scan.js';
import type { Window } from './window.js';
import { ZoneClock } from './zone.js';

const SECOND = 1000;
const MINUTE = 60_000;
const HOUR = 3_600_000;
/** next() gives up after this many window openings that all fall inside blackouts. */
const MAX_OPENINGS = 400;
/** How far next() looks past a blackout: the longest yearly range and then some. */
const LOOKAHEAD_MS = 400 * 24 * HOUR;

/** The first instant in (from, to] where `pred` holds, to the second; `pred(to)` must hold. */
function firstTrue(pred: (t: number) => boolean, from: number, to: number, step: number): number {
  for (let t = from + step; t < to; t += step) {
    if (pred(t)) return step === SECOND ? t : firstTrue(pred, t - step, t, step === HOUR ? MINUTE : SECOND);
  }
  return step === SECOND ? to : firstTrue(pred, to - step, to, step === HOUR ? MINUTE : SECOND);
}

/** The instant rounded up to a whole second: blackout edges are whole minutes, so steps from there land on them. */
function wholeSecond(ms: number): number {
  return Math.ceil(ms / SECOND) * SECOND;
}

export class ExclusionWindow implements Window {
  private readonly zone: ZoneClock;

  constructor(
    private readonly inner: Window,
    private readonly blackouts: readonly Blackout[],
    timeZone: string,
  ) {
    this.zone = new ZoneClock(timeZone);
  }

  /** Is the instant inside one of the blackout ranges? */
  blackedOut(at: Date): boolean {
    const local = this.zone.local(at);
    return this.blackouts.some((b) => inBlackout(b, local));
  }

  contains(at: Date): boolean {
    return this.inner.contains(at) && !this.blackedOut(at);
  }

  describe(): string {
    return `${this.inner.describe()}, except ${this.blackouts.map((b) => b.text).join(', ')}`;
  }

  next(at: Date): { inside: boolean; change: Date | undefined } {
    if (this.contains(at)) return { inside: true, change: this.closing(at) };
    return { inside: false, change: this.opening(at) };
  }

  /** Inside: the window closes, or a blackout starts, whichever comes first. */
  private closing(at: Date): Date | undefined {
    const closes = this.inner.next(at).change;
    const limit = (closes ?? new Date(at.getTime() + HORIZON_MS)).getTime();
    const start = wholeSecond(at.getTime());
    for (let t = start + MINUTE; t < limit; t += MINUTE) {
      if (this.blackedOut(new Date(t)))
        return new Date(firstTrue((s) => this.blackedOut(new Date(s)), t - MINUTE, t, SECOND));
    }
    return closes;
  }

  /**
   * Outside: the first instant at which the window is open and no blackout covers it. Alternates:
   * past the blackout covering t, then to the window's next opening, until both agree.
   */
  private opening(at: Date): Date | undefined {
    const end = at.getTime() + LOOKAHEAD_MS;
    let t = wholeSecond(at.getTime());
    for (let i = 0; i < MAX_OPENINGS && t <= end; i++) {
      if (this.blackedOut(new Date(t))) {
        t = this.blackoutEnd(t, end);
        continue;
      }
      if (this.inner.contains(new Date(t))) return new Date(t);
      const opens = this.inner.next(new Date(t)).change;
      if (opens === undefined) return undefined;
      t = opens.getTime();
    }
    return undefined;
  }

  /** The first instant after `t` that no blackout covers: hour steps, then refined to the second. */
  private blackoutEnd(t: number, limit: number): number {
    const clear = (s: number): boolean => !this.blackedOut(new Date(s));
    for (let s = t + HOUR; s <= limit + HOUR; s += HOUR) {
      if (clear(s)) return firstTrue(clear, s - HOUR, s, MINUTE);
    }
    return limit + 1;
  }
}
