import { describe, expect, it } from '@jest/globals';
import { parseDuration } from '../../src/config/values.js';

describe('Go durations', () => {
  const accepted: [string, number][] = [
    ['1h30m', 5_400_000],
    ['90s', 90_000],
    ['500ms', 500],
    ['1.5h', 5_400_000],
    ['0', 0],
    ['0s', 0],
    ['-1s', -1000],
    ['+2m', 120_000],
    ['1h0m0s', 3_600_000],
    ['2h45m30.5s', 9_930_500],
    ['1500us', 1.5],
    ['1000000ns', 1],
    ['.5s', 500],
  ];
  it.each(accepted)('parses %p as %p ms', (text, ms) => {
    expect(parseDuration(text)).toBeCloseTo(ms, 9);
  });

  const rejected: [string, RegExp][] = [
    ['', /expected a duration/],
    ['5', /missing unit/],
    ['1d', /unknown unit/],
    ['1h 30m', /unknown unit or syntax/],
    ['h', /unknown unit/],
    ['1.2.3s', /unknown unit/],
    ['abc', /unknown unit/],
  ];
  it.each(rejected)('rejects %p with a reason', (text, reason) => {
    expect(() => parseDuration(text)).toThrow(reason);
  });
});
