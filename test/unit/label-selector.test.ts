import { describe, expect, it } from '@jest/globals';
import { matches, parseLabelSelector, formatLabelSelector } from '../../src/selector/label-selector.js';

describe('label selectors', () => {
  const cases: [string, string, Record<string, string>, boolean][] = [
    ['matches an equality term', 'app=web', { app: 'web' }, true],
    ['rejects a different value', 'app=web', { app: 'db' }, false],
    ['ANDs comma-separated terms', 'app=web,tier=front', { app: 'web', tier: 'back' }, false],
    ['treats != as true when the label is absent', 'app!=web', {}, true],
    ['matches set membership', 'env in (a, b)', { env: 'b' }, true],
    ['matches notin when absent', 'env notin (a)', {}, true],
    ['matches an existence term', 'gpu', { gpu: '' }, true],
    ['matches a non-existence term', '!gpu', { gpu: 'x' }, false],
    ['accepts == as =', 'app==web', { app: 'web' }, true],
    ['the empty selector matches everything', '', { any: 'thing' }, true],
  ];
  it.each(cases)('%s', (_name, text, labels, want) => {
    expect(matches(parseLabelSelector(text), labels)).toBe(want);
  });

  it.each(['app=', 'app=web,', '=web', 'app=we b', 'bad key=1'])(
    'rejects or parses %p consistently',
    (text) => {
      if (text === 'app=') {
        expect(matches(parseLabelSelector(text), { app: '' })).toBe(true);
        return;
      }
      expect(() => parseLabelSelector(text)).toThrow();
    },
  );

  it('round-trips through its string form', () => {
    const text = 'app=web,tier!=db,env in (a,b),gpu,!legacy';
    expect(formatLabelSelector(parseLabelSelector(text))).toBe(text);
  });
});
