// The two duration forms (src/text/duration.ts).
import { describe, expect, it } from '@jest/globals';
import { parseDuration } from '../../src/config/values.js';
import { goDuration, shortDuration } from '../../src/text/duration.js';

describe('goDuration', () => {
  it.each([
    [0, '0s'],
    [500, '500ms'],
    [90_000, '1m30s'],
    [5_400_000, '1h30m0s'],
  ])('formats %p ms as Go prints it (%p), which parseDuration reads back', (ms, text) => {
    expect(goDuration(ms)).toBe(text);
    expect(parseDuration(text)).toBe(ms);
  });
});

describe('shortDuration', () => {
  it.each([
    [0, '0s'],
    [41_000, '41s'],
    [200_000, '3m20s'],
    [180_000, '3m'],
    [7_500_000, '2h05m'],
    [389_000_000, '4d12h'],
    [-30_000, '-30s'],
  ])('formats %i ms as %s', (ms, text) => {
    expect(shortDuration(ms)).toBe(text);
  });
});
