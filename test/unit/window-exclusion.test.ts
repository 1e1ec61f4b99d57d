// Maintenance exclusions (--blackout) over kured's window and over several cron windows.
import { describe, expect, it } from '@jest/globals';
import type { WindowConfig } from '../../src/config/config.js';
import { parseConfig } from '../../src/config/parse.js';
import { parseBlackout } from '../../src/window/blackout.js';
import { createWindow } from '../../src/window/index.js';

const h = (hours: number, minutes = 0): number => hours * 3600 + minutes * 60;

function window(over: Partial<WindowConfig> & { blackout?: string[] }): ReturnType<typeof createWindow> {
  const { blackout = [], ...rest } = over;
  return createWindow({
    days: [0, 1, 2, 3, 4, 5, 6],
    startSecond: 0,
    endSecond: h(23, 59) + 59,
    timeZone: 'UTC',
    schedules: [],
    blackouts: blackout.map(parseBlackout),
    ...rest,
  });
}

const at = (iso: string): Date => new Date(iso);

describe('a blackout', () => {
  it.each([
    ['the first day of a whole-day range', ['2026-12-20/2027-01-03'], '2026-12-20T00:00:00Z', false],
    ['the last second of its last day', ['2026-12-20/2027-01-03'], '2027-01-03T23:59:59Z', false],
    ['the day after it', ['2026-12-20/2027-01-03'], '2027-01-04T00:00:00Z', true],
    ['the day before it', ['2026-12-20/2027-01-03'], '2026-12-19T23:59:59Z', true],
    ['one whole day given alone', ['2026-12-24'], '2026-12-24T12:00:00Z', false],
    ['the start of a date-time range', ['2026-12-24T18:00/2026-12-26T08:00'], '2026-12-24T18:00:00Z', false],
    [
      'the end of a date-time range (exclusive)',
      ['2026-12-24T18:00/2026-12-26T08:00'],
      '2026-12-26T08:00:00Z',
      true,
    ],
    ['a yearly range, in December', ['12-20/01-03'], '2031-12-25T10:00:00Z', false],
    ['a yearly range that wraps the year, in January', ['12-20/01-03'], '2032-01-03T23:00:00Z', false],
    ['a yearly range that wraps the year, after it', ['12-20/01-03'], '2032-01-04T00:00:00Z', true],
    ['a yearly range, before it', ['12-20/01-03'], '2031-12-19T23:59:59Z', true],
    ['a yearly 29 February in a leap year', ['02-29'], '2028-02-29T06:00:00Z', false],
    ['either of two ranges', ['2026-01-01', '2026-06-01/2026-06-02'], '2026-06-02T12:00:00Z', false],
  ])('closes the window on %s', (_name, blackout, instant, open) => {
    expect(window({ blackout }).contains(at(instant))).toBe(open);
  });

  it('is judged in the time zone of the window, by its wall clock', () => {
    const w = window({ timeZone: 'Europe/Berlin', blackout: ['2026-12-24'] });
    expect(w.contains(at('2026-12-23T22:59:59Z'))).toBe(true); // 23:59:59 on the 23rd in Berlin
    expect(w.contains(at('2026-12-23T23:00:00Z'))).toBe(false); // midnight of the 24th in Berlin
    expect(w.contains(at('2026-12-24T23:00:00Z'))).toBe(true); // midnight of the 25th
  });

  it('ends at the first wall-clock instant after it across the spring DST change', () => {
    // Europe/Berlin skips 02:00-03:00 on 2026-03-29: 01:30 CET is 00:30Z, 03:30 CEST is 01:30Z.
    const w = window({ timeZone: 'Europe/Berlin', blackout: ['2026-03-29T01:00/2026-03-29T04:00'] });
    expect(w.contains(at('2026-03-29T00:30:00Z'))).toBe(false);
    expect(w.contains(at('2026-03-29T01:30:00Z'))).toBe(false);
    expect(w.next(at('2026-03-29T00:30:00Z'))).toEqual({ inside: false, change: at('2026-03-29T02:00:00Z') });
  });

  it('makes the next opening skip a blackout that covers every window in it', () => {
    // mon-fri 22:00-04:00 in Berlin (the hours after midnight belong to the new day, kured's rule).
    const w = window({
      days: [1, 2, 3, 4, 5],
      startSecond: h(22),
      endSecond: h(4),
      timeZone: 'Europe/Berlin',
      blackout: ['2026-12-20/2027-01-03'],
    });
    // From a Monday inside the blackout: the window would open that night; it opens on Monday
    // 4 January 2027 at 00:00 in Berlin (23:00Z on the 3rd), the first hour after the blackout.
    expect(w.next(at('2026-12-21T12:00:00Z'))).toEqual({ inside: false, change: at('2027-01-03T23:00:00Z') });
    expect(w.contains(at('2027-01-03T23:00:00Z'))).toBe(true);
    expect(w.describe()).toBe(
      'mon-fri 22:00-04:00 (wraps midnight) Europe/Berlin, except 2026-12-20/2027-01-03',
    );
  });

  it('says when it starts, from inside an open window', () => {
    const w = window({ blackout: ['2026-12-24T18:00/2026-12-26T08:00'] });
    expect(w.next(at('2026-12-24T17:00:00Z'))).toEqual({ inside: true, change: at('2026-12-24T18:00:00Z') });
    expect(w.next(at('2026-12-25T00:00:00Z'))).toEqual({ inside: false, change: at('2026-12-26T08:00:00Z') });
  });

  it('names its edges to the second, whatever the millisecond of the question', () => {
    const w = window({ blackout: ['2026-12-24T18:00/2026-12-26T08:00'] });
    expect(w.next(at('2026-12-24T17:00:00.531Z')).change).toEqual(at('2026-12-24T18:00:00Z'));
    expect(w.next(at('2026-12-25T00:00:00.531Z')).change).toEqual(at('2026-12-26T08:00:00Z'));
  });

  it('leaves no next opening when it covers every day', () => {
    const w = window({ blackout: ['01-01/12-31'] });
    expect(w.contains(at('2027-06-01T00:00:00Z'))).toBe(false);
    expect(w.next(at('2027-06-01T00:00:00Z'))).toEqual({ inside: false, change: undefined });
  });

  it.each([
    ['a date that does not exist', '2026-02-30', 'no such date'],
    ['a range that ends before it starts', '2027-01-03/2026-12-20', 'ends before it starts'],
    ['words', 'christmas', 'expected YYYY-MM-DD or YYYY-MM-DDTHH:MM'],
    ['three dates', '2026-01-01/2026-01-02/2026-01-03', 'expected FROM/TO'],
    ['a time of day that does not exist', '2026-01-01T25:00/2026-01-02', 'no such time of day'],
    ['a yearly date that does not exist', '02-30', 'no such date'],
  ])('refuses %s', (_name, text, reason) => {
    expect(() => parseBlackout(text)).toThrow(reason);
  });
});

describe('--blackout and several --reboot-schedule as flags', () => {
  it('reads repeats and ;-separated ranges from the environment', () => {
    const fromFlags = parseConfig({ blackout: ['2026-12-20/2027-01-03', '12-31'] }, {});
    expect(fromFlags.window.blackouts.map((b) => b.text)).toEqual(['2026-12-20/2027-01-03', '12-31']);
    const fromEnv = parseConfig({}, { KURED_BLACKOUT: '2026-12-20/2027-01-03; 12-31' });
    expect(fromEnv.window.blackouts).toEqual(fromFlags.window.blackouts);
  });

  it('names the flag and the bad range', () => {
    expect(() => parseConfig({ blackout: ['2026-12-20', '2026-13-01'] }, {})).toThrow(
      'invalid value "2026-13-01" for --blackout: no such date',
    );
  });

  it('opens the window when any of several cron schedules matches', () => {
    const config = parseConfig({ 'reboot-schedule': ['* 2-3 * * sat', '* 22-23 * * wed'] }, {});
    expect(config.window.schedules).toEqual(['* 2-3 * * sat', '* 22-23 * * wed']);
    const w = createWindow(config.window);
    expect(w.contains(at('2026-11-28T02:30:00Z'))).toBe(true); // a Saturday
    expect(w.contains(at('2026-11-25T22:30:00Z'))).toBe(true); // a Wednesday
    expect(w.contains(at('2026-11-25T02:30:00Z'))).toBe(false);
    expect(w.next(at('2026-11-25T12:00:00Z'))).toEqual({ inside: false, change: at('2026-11-25T22:00:00Z') });
    expect(w.describe()).toBe('cron "* 2-3 * * sat" or "* 22-23 * * wed" UTC');
  });

  it('splits KURED_REBOOT_SCHEDULE on ; (cron fields contain commas)', () => {
    const config = parseConfig({}, { KURED_REBOOT_SCHEDULE: '* 2 * * sat,sun; * 22 * * wed' });
    expect(config.window.schedules).toEqual(['* 2 * * sat,sun', '* 22 * * wed']);
  });
});
