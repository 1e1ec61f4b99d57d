import { describe, expect, it } from '@jest/globals';
import { formatDays, parseDays } from '../../src/window/days.js';
import { formatTimeOfDay, parseTimeOfDay } from '../../src/window/time-of-day.js';
import { checkTimeZone, processTimeZone, ZoneClock } from '../../src/window/zone.js';

const at = (h: number, m = 0, s = 0): number => h * 3600 + m * 60 + s;

describe('times of day', () => {
  const accepted: [string, number][] = [
    // what kured accepts
    ['0:00', at(0)],
    ['9am', at(9)],
    ['17:00', at(17)],
    ['23:59:59', at(23, 59, 59)],
    ['11:30am', at(11, 30)],
    ['12pm', at(12)],
    ['12am', at(0)],
    ['05:00pm', at(17)],
    ['9', at(9)],
    ['09:05', at(9, 5)],
    // what kured wrongly rejects
    ['5:00pm', at(17)],
    ['9:30AM', at(9, 30)],
    ['9PM', at(21)],
    ['11:30 pm', at(23, 30)],
    ['12:15am', at(0, 15)],
  ];
  it.each(accepted)('accepts %p as second %p of the day', (text, second) => {
    expect(parseTimeOfDay(text)).toBe(second);
  });

  const rejected: [string, RegExp][] = [
    ['24:00', /hour must be 0-23/],
    ['25:00', /hour must be 0-23/],
    ['7:5', /expected a time/],
    ['13pm', /hour must be 0-12/],
    ['9:60', /minute must be 0-59/],
    ['9:00:61', /second must be 0-59/],
    ['noon', /expected a time/],
    ['', /expected a time/],
    ['-1:00', /expected a time/],
    ['9.30', /expected a time/],
  ];
  it.each(rejected)('rejects %p with a clear reason', (text, reason) => {
    expect(() => parseTimeOfDay(text)).toThrow(reason);
  });

  it.each([
    [at(9), '09:00'],
    [at(23, 59, 59), '23:59:59'],
    [0, '00:00'],
  ])('formats second %p as %p', (second, text) => {
    expect(formatTimeOfDay(second)).toBe(text);
  });
});

describe('days of the week', () => {
  const accepted: [string[], number[]][] = [
    [['su,mo,tu,we,th,fr,sa'], [0, 1, 2, 3, 4, 5, 6]],
    [
      ['0', '6'],
      [0, 6],
    ],
    [['Mon,TUESDAY,wed'], [1, 2, 3]],
    [['mon-fri'], [1, 2, 3, 4, 5]],
    [['1-5'], [1, 2, 3, 4, 5]],
    [['fri-mon'], [0, 1, 5, 6]],
    [
      ['sat', 'sun', 'sat'],
      [0, 6],
    ],
    [['Thurs, Tues'], [2, 4]],
    [[''], []],
  ];
  it.each(accepted)('parses %p as %p', (values, days) => {
    expect(parseDays(values)).toEqual(days);
  });

  it.each([
    ['7', /out of range 0-6/],
    ['funday', /unknown day "funday"/],
    ['mon-xyz', /unknown day "xyz"/],
  ])('rejects %p', (text, reason) => {
    expect(() => parseDays([text])).toThrow(reason);
  });

  it.each([
    [[0, 1, 2, 3, 4, 5, 6], 'every day'],
    [[], 'never'],
    [[1, 2, 3, 4, 5], 'mon-fri'],
    [[0, 6], 'sun,sat'],
    [[0, 2, 4, 5, 6], 'sun,tue,thu-sat'],
  ])('describes %p as %p', (days, text) => {
    expect(formatDays(days)).toBe(text);
  });
});

describe('time zones', () => {
  it('accepts IANA names and returns their canonical spelling', () => {
    expect(checkTimeZone('America/Los_Angeles')).toBe('America/Los_Angeles');
    expect(checkTimeZone('UTC')).toBe('UTC');
    expect(checkTimeZone('europe/berlin')).toBe('Europe/Berlin');
  });

  it("maps kured's Local to the process zone", () => {
    expect(checkTimeZone('Local')).toBe(processTimeZone());
  });

  it.each(['Mars/Olympus', '', 'PST8PDTX'])('rejects %p', (zone) => {
    expect(() => checkTimeZone(zone)).toThrow(/time zone/);
  });

  it('reads wall-clock fields in a zone across the DST change', () => {
    const la = new ZoneClock('America/Los_Angeles');
    // 2026-03-08: clocks jump from 02:00 PST to 03:00 PDT at 10:00 UTC.
    expect(la.local(new Date('2026-03-08T09:59:59Z'))).toMatchObject({
      weekday: 0,
      secondOfDay: at(1, 59, 59),
    });
    expect(la.local(new Date('2026-03-08T10:00:00Z'))).toMatchObject({ weekday: 0, secondOfDay: at(3) });
    expect(la.local(new Date('2026-03-08T10:00:00Z')).text).toBe('2026-03-08 03:00:00');
  });
});

describe('ZoneClock in UTC, without Intl', () => {
  it('gives the same fields as Intl does, across a year of instants', async () => {
    const { ZoneClock } = await import('../../src/window/zone.js');
    const fast = new ZoneClock('UTC');
    const viaIntl = new ZoneClock('Etc/UTC');
    for (let t = Date.UTC(2024, 0, 1); t < Date.UTC(2025, 0, 1); t += 37 * 3_600_000 + 1_234) {
      expect(fast.local(new Date(t))).toEqual(viaIntl.local(new Date(t)));
    }
  });
});
