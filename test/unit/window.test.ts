import { describe, expect, it } from '@jest/globals';
import type { WindowConfig } from '../../src/config/config.js';
import { parseWindowConfig } from '../../src/config/parse.js';
import { CronWindow, KuredWindow, createWindow } from '../../src/window/index.js';

const EVERY_DAY = [0, 1, 2, 3, 4, 5, 6];
const MON_FRI = [1, 2, 3, 4, 5];
const h = (hours: number, minutes = 0): number => hours * 3600 + minutes * 60;

function kured(days: number[], start: number, end: number, timeZone = 'UTC'): WindowConfig {
  return { days, startSecond: start, endSecond: end, timeZone, schedules: [], blackouts: [] };
}

// 2026-11-23 is a Monday; America/Los_Angeles is on PST (UTC-8) then.
describe('kured windows: contains', () => {
  const cases: [string, WindowConfig, string, boolean][] = [
    [
      'mon-fri 9-17: a Monday 08:59:59 is outside',
      kured(MON_FRI, h(9), h(17)),
      '2026-11-23T08:59:59Z',
      false,
    ],
    ['mon-fri 9-17: the start second is inside', kured(MON_FRI, h(9), h(17)), '2026-11-23T09:00:00Z', true],
    ['mon-fri 9-17: the end second is inside', kured(MON_FRI, h(9), h(17)), '2026-11-23T17:00:00Z', true],
    [
      'mon-fri 9-17: to the end of the end second',
      kured(MON_FRI, h(9), h(17)),
      '2026-11-23T17:00:00.999Z',
      true,
    ],
    ['mon-fri 9-17: one second later is outside', kured(MON_FRI, h(9), h(17)), '2026-11-23T17:00:01Z', false],
    ['mon-fri 9-17: a Friday afternoon is inside', kured(MON_FRI, h(9), h(17)), '2026-11-27T16:00:00Z', true],
    ['mon-fri 9-17: a Saturday noon is outside', kured(MON_FRI, h(9), h(17)), '2026-11-21T12:00:00Z', false],
    ['wrap 22-06 on fri: Friday 23:00 is inside', kured([5], h(22), h(6)), '2026-11-27T23:00:00Z', true],
    [
      'wrap 22-06 on fri: Friday 02:00 is inside (the date counts)',
      kured([5], h(22), h(6)),
      '2026-11-27T02:00:00Z',
      true,
    ],
    [
      'wrap 22-06 on fri: Saturday 02:00 is outside (Saturday counts)',
      kured([5], h(22), h(6)),
      '2026-11-28T02:00:00Z',
      false,
    ],
    ['wrap 22-06 on fri: Friday noon is outside', kured([5], h(22), h(6)), '2026-11-27T12:00:00Z', false],
    ['wrap 22-06 on fri: 06:00:00.5 is inside', kured([5], h(22), h(6)), '2026-11-27T06:00:00.500Z', true],
    ['wrap 22-06 on fri: 06:00:01 is outside', kured([5], h(22), h(6)), '2026-11-27T06:00:01Z', false],
    [
      'wrap 22-06 every day: Saturday 02:00 is inside',
      kured(EVERY_DAY, h(22), h(6)),
      '2026-11-28T02:00:00Z',
      true,
    ],
    [
      'wrap 22-06 every day: 21:59:59 is outside',
      kured(EVERY_DAY, h(22), h(6)),
      '2026-11-28T21:59:59Z',
      false,
    ],
    [
      'LA mon-fri 9-17: Friday 16:30 PST (Saturday in UTC) is inside',
      kured(MON_FRI, h(9), h(17), 'America/Los_Angeles'),
      '2026-11-28T00:30:00Z',
      true,
    ],
    [
      'LA mon-fri 9-17: Monday 08:00 PST (16:00 UTC) is outside',
      kured(MON_FRI, h(9), h(17), 'America/Los_Angeles'),
      '2026-11-23T16:00:00Z',
      false,
    ],
    [
      'LA mon-fri 9-17: Saturday 09:00 PST is outside',
      kured(MON_FRI, h(9), h(17), 'America/Los_Angeles'),
      '2026-11-28T17:00:00Z',
      false,
    ],
    [
      'LA 9-17 before spring-forward: 09:00 PST = 17:00 UTC is inside',
      kured(EVERY_DAY, h(9), h(17), 'America/Los_Angeles'),
      '2026-03-07T17:00:00Z',
      true,
    ],
    [
      'LA 9-17 before spring-forward: 16:59 UTC is outside',
      kured(EVERY_DAY, h(9), h(17), 'America/Los_Angeles'),
      '2026-03-07T16:59:00Z',
      false,
    ],
    [
      'LA 9-17 after spring-forward: 09:00 PDT = 16:00 UTC is inside',
      kured(EVERY_DAY, h(9), h(17), 'America/Los_Angeles'),
      '2026-03-09T16:00:00Z',
      true,
    ],
    [
      'LA 9-17 after spring-forward: 15:59 UTC is outside',
      kured(EVERY_DAY, h(9), h(17), 'America/Los_Angeles'),
      '2026-03-09T15:59:00Z',
      false,
    ],
    [
      'LA 9-17 after fall-back: 08:30 PST = 16:30 UTC is outside',
      kured(EVERY_DAY, h(9), h(17), 'America/Los_Angeles'),
      '2026-11-02T16:30:00Z',
      false,
    ],
    [
      'empty day list: never, even at noon on a Monday',
      kured([], h(0), 86399),
      '2026-11-23T12:00:00Z',
      false,
    ],
    ['start equal to end: exactly that second', kured(EVERY_DAY, h(3), h(3)), '2026-11-23T03:00:00.5Z', true],
  ];
  it.each(cases)('%s', (_name, config, at, inside) => {
    expect(new KuredWindow(config).contains(new Date(at))).toBe(inside);
  });

  it('accepts the times kured wrongly rejects: 9:30AM to 5:00pm', () => {
    const config = parseWindowConfig(
      { 'start-time': ['9:30AM'], 'end-time': ['5:00pm'], 'reboot-days': ['mon-fri'] },
      {},
    );
    const window = createWindow(config);
    expect(window.contains(new Date('2026-11-23T09:29:59Z'))).toBe(false);
    expect(window.contains(new Date('2026-11-23T09:30:00Z'))).toBe(true);
    expect(window.contains(new Date('2026-11-23T17:00:59Z'))).toBe(false);
    expect(window.describe()).toBe('mon-fri 09:30-17:00 UTC');
  });

  it('an empty day list never opens within the horizon', () => {
    const window = new KuredWindow(kured([], 0, 86399));
    expect(window.next(new Date('2026-11-23T12:00:00Z'))).toEqual({ inside: false, change: undefined });
  });
});

describe('kured windows: next open or close', () => {
  const cases: [string, WindowConfig, string, boolean, string | undefined][] = [
    [
      'opens on Monday morning when asked on Saturday',
      kured(MON_FRI, h(9), h(17)),
      '2026-11-21T12:00:00Z',
      false,
      '2026-11-23T09:00:00.000Z',
    ],
    [
      'closes one second after the end time',
      kured(MON_FRI, h(9), h(17)),
      '2026-11-23T10:00:00Z',
      true,
      '2026-11-23T17:00:01.000Z',
    ],
    [
      'a wrapping window opens in the evening',
      kured(EVERY_DAY, h(22), h(6)),
      '2026-11-23T12:00:00Z',
      false,
      '2026-11-23T22:00:00.000Z',
    ],
    [
      'a wrapping window closes the next morning',
      kured(EVERY_DAY, h(22), h(6)),
      '2026-11-23T23:00:00Z',
      true,
      '2026-11-24T06:00:01.000Z',
    ],
    [
      'a wrap on Friday only closes at midnight, as Saturday is not allowed',
      kured([5], h(22), h(6)),
      '2026-11-27T23:00:00Z',
      true,
      '2026-11-28T00:00:00.000Z',
    ],
    [
      'LA: closes at 17:00:01 PST before the DST change',
      kured(EVERY_DAY, h(9), h(17), 'America/Los_Angeles'),
      '2026-03-07T20:00:00Z',
      true,
      '2026-03-08T01:00:01.000Z',
    ],
    [
      'LA: opens at 09:00 PDT on the day of the DST change',
      kured(EVERY_DAY, h(9), h(17), 'America/Los_Angeles'),
      '2026-03-08T02:00:00Z',
      false,
      '2026-03-08T16:00:00.000Z',
    ],
    [
      'a window that never closes has no change',
      kured(EVERY_DAY, 0, 86399),
      '2026-11-23T12:00:00Z',
      true,
      undefined,
    ],
  ];
  it.each(cases)('%s', (...[, config, at, inside, change]) => {
    const next = new KuredWindow(config).next(new Date(at));
    expect(next.inside).toBe(inside);
    expect(next.change?.toISOString()).toBe(change);
  });
});

describe('cron windows', () => {
  const cases: [string, string, string, string, boolean][] = [
    [
      '02:xx on Saturdays in LA: 02:30 PST is inside',
      '* 2 * * sat',
      'America/Los_Angeles',
      '2026-11-28T10:30:00Z',
      true,
    ],
    [
      '02:xx on Saturdays in LA: 04:00 PST is outside',
      '* 2 * * sat',
      'America/Los_Angeles',
      '2026-11-28T12:00:00Z',
      false,
    ],
    [
      '02:xx on Saturdays in LA: 02:30 UTC is outside',
      '* 2 * * sat',
      'America/Los_Angeles',
      '2026-11-28T02:30:00Z',
      false,
    ],
    [
      'every 15 minutes: the whole matching minute is inside',
      '*/15 * * * *',
      'UTC',
      '2026-11-23T00:15:59Z',
      true,
    ],
    ['every 15 minutes: the next minute is outside', '*/15 * * * *', 'UTC', '2026-11-23T00:16:00Z', false],
    ['weekday nights by numbers', '* 0-5 * * 1-5', 'UTC', '2026-11-24T03:00:00Z', true],
  ];
  it.each(cases)('%s', (...[, expression, zone, at, inside]) => {
    expect(new CronWindow(expression, zone).contains(new Date(at))).toBe(inside);
  });

  it('finds the next opening and closing to the minute', () => {
    const window = new CronWindow('* 2 * * sat', 'America/Los_Angeles');
    expect(window.next(new Date('2026-11-27T12:00:00Z'))).toEqual({
      inside: false,
      change: new Date('2026-11-28T10:00:00Z'),
    });
    expect(window.next(new Date('2026-11-28T10:30:30Z'))).toEqual({
      inside: true,
      change: new Date('2026-11-28T11:00:00Z'),
    });
  });

  it.each([
    ['61 * * * *', /minute/],
    ['0 0 * * * *', /expected 5 cron fields/],
    ['every day', /expected 5 cron fields/],
    ['* * * * funday', /invalid/],
  ])('rejects %p', (expression, reason) => {
    expect(() => new CronWindow(expression, 'UTC')).toThrow(reason);
  });

  it('createWindow prefers the schedule over days and times', () => {
    const window = createWindow({ ...kured([], 0, 0), schedules: ['* * * * *'] });
    expect(window).toBeInstanceOf(CronWindow);
    expect(window.contains(new Date('2026-11-23T12:00:00Z'))).toBe(true);
    expect(window.describe()).toBe('cron "* * * * *" UTC');
  });
});
