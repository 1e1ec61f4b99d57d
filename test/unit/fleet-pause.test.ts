// The fleet pause as read back (src/pause/fleet-pause.ts): whoever writes the annotation chose its
// size and form, and what is read of it goes into every node's status, Events and logs: bounded, and
// anything at all still pauses.
import { describe, expect, it } from '@jest/globals';
import {
  HALT_BY,
  describeFleetPause,
  formatFleetPause,
  isWaveHalt,
  parseFleetPause,
} from '../../src/pause/fleet-pause.js';

describe('a fleet pause written by someone else, read back', () => {
  it('keeps a halt written by kured-ts as it was written', () => {
    const halt = {
      reason: 'wave halted: n1 failed',
      by: HALT_BY,
      since: '2026-01-05T10:00:00Z',
      wave: 'w20260105-100000-abcdef',
      failed: ['n1'],
    };
    expect(parseFleetPause(formatFleetPause(halt))).toEqual(halt);
    expect(isWaveHalt(parseFleetPause(formatFleetPause(halt)))).toBe(true);
  });

  it('bounds a huge reason and a huge list of failed nodes, and still pauses', () => {
    const raw = JSON.stringify({
      reason: 'r'.repeat(200_000),
      by: HALT_BY,
      since: 's'.repeat(10_000),
      wave: 'w'.repeat(10_000),
      failed: Array.from({ length: 10_000 }, (_, i) => `node-${i}-${'x'.repeat(100)}`),
    });
    const pause = parseFleetPause(raw);
    expect(pause?.reason).toHaveLength(512);
    expect(pause?.since).toHaveLength(512);
    expect(pause?.wave).toHaveLength(512);
    expect(pause?.failed).toHaveLength(100);
    expect(describeFleetPause(pause!).length).toBeLessThan(2_000);
  });

  it.each([
    ['not JSON', `by ${HALT_BY}: halted`],
    ['a JSON string', '"halted"'],
    ['a number', '42'],
  ])('still pauses on %s, and is no halt a resume would acknowledge failures of', (_name, raw) => {
    const pause = parseFleetPause(raw);
    expect(pause).toBeDefined();
    expect(isWaveHalt(pause)).toBe(false);
    expect(describeFleetPause(pause!)).toMatch(/^fleet paused/);
  });

  it("keeps only the names of a halt's failed nodes, not what else a writer put in the list", () => {
    const raw = JSON.stringify({
      reason: 'x',
      by: HALT_BY,
      since: 's',
      failed: ['n1', 7, null, { n: 'n2' }, 'n3'],
    });
    expect(parseFleetPause(raw)?.failed).toEqual(['n1', 'n3']);
  });
});
