// --concurrency and --group-concurrency as a share of the nodes (src/lock/budget.ts): rounded down,
// at least 1, and 1 while the size is not known (fail safe).
import { describe, expect, it } from '@jest/globals';
import { nodesOfDaemonSet, resolveBudget, type BudgetSpec } from '../../src/lock/budget.js';

describe('resolveBudget', () => {
  it.each<[string, BudgetSpec, number | undefined, number]>([
    ['a number is the number, whatever the fleet', { count: 3, percent: 0 }, 1000, 3],
    ['10% of 1,000 nodes is 100', { count: 1, percent: 10 }, 1000, 100],
    ['10% of 95 nodes rounds down to 9', { count: 1, percent: 10 }, 95, 9],
    ['10% of 5 nodes is at least 1', { count: 1, percent: 10 }, 5, 1],
    ['100% of 7 nodes is 7', { count: 1, percent: 100 }, 7, 7],
    ['a share of a fleet whose size is not known yet is 1', { count: 1, percent: 50 }, undefined, 1],
    ['a share of an empty group is 1', { count: 1, percent: 50 }, 0, 1],
  ])('%s', (_name, spec, nodes, slots) => {
    expect(resolveBudget(spec, nodes)).toBe(slots);
  });
});

describe('nodesOfDaemonSet', () => {
  it('reads the nodes the DaemonSet runs on from its status', () => {
    expect(
      nodesOfDaemonSet({
        status: {
          desiredNumberScheduled: 40,
          currentNumberScheduled: 38,
          numberMisscheduled: 0,
          numberReady: 37,
        },
      }),
    ).toBe(40);
  });

  it('knows nothing before the DaemonSet controller has written its status', () => {
    expect(nodesOfDaemonSet({ metadata: { name: 'kured' } })).toBeUndefined();
  });
});
