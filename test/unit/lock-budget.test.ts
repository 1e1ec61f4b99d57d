// --concurrency and --group-concurrency as a share of the nodes (src/lock/budget.ts): rounded down,
// at least 1, and 1 while the size is not known (fail safe).
import { describe, expect, it } from '@jest/globals';
import { MAX_FLEET_NODES, nodesOfDaemonSet, resolveBudget } from '../../src/lock/budget.js';
import { budgetOf, budgetText, type Budget } from '../../src/config/budget.js';
import { share } from '../../src/config/values.js';

describe('resolveBudget', () => {
  it.each<[string, Budget, number | undefined, number]>([
    ['a number is the number, whatever the fleet', { count: 3 }, 1000, 3],
    ['10% of 1,000 nodes is 100', { percent: 10 }, 1000, 100],
    ['10% of 95 nodes rounds down to 9', { percent: 10 }, 95, 9],
    ['10% of 5 nodes is at least 1', { percent: 10 }, 5, 1],
    ['100% of 7 nodes is 7', { percent: 100 }, 7, 7],
    ['a share of a fleet whose size is not known yet is 1', { percent: 50 }, undefined, 1],
    ['a share of an empty group is 1', { percent: 50 }, 0, 1],
  ])('%s', (_name, spec, nodes, slots) => {
    expect(resolveBudget(spec, nodes)).toBe(slots);
  });
});

describe('Budget: the one shape of "N or N%"', () => {
  it.each<[string, string, Budget]>([
    ['a number of nodes', '3', { count: 3 }],
    ['a percentage of them', '25%', { percent: 25 }],
  ])('reads and says %s as the flag gives it', (_name, text, budget) => {
    expect(share(1)(text)).toEqual(budget);
    expect(budgetText(budget)).toBe(text);
  });

  it.each<[string, number, number | undefined, Budget]>([
    ['a count alone is the count', 4, 0, { count: 4 }],
    ['a count without a percentage is the count', 4, undefined, { count: 4 }],
    ['a percentage wins over the count kept beside it', 1, 20, { percent: 20 }],
  ])('keeps a count and a percentage side by side as one budget: %s', (_name, count, percent, budget) => {
    expect(budgetOf(count, percent)).toEqual(budget);
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

  // a status no DaemonSet controller writes (someone with the status subresource, a corrupt store):
  // a share of it would be no bound at all, so it counts as unknown and resolves to the least
  it.each<[string, number]>([
    ['more nodes than any cluster has', MAX_FLEET_NODES + 1],
    ["kube's largest int32", 2_147_483_647],
    ['a fraction', 12.5],
    ['a negative count', -3],
  ])('knows nothing from %s, so 10%% of it is 1 slot and a failure budget of 1', (_name, desired) => {
    const ds = {
      status: {
        desiredNumberScheduled: desired,
        currentNumberScheduled: 0,
        numberMisscheduled: 0,
        numberReady: 0,
      },
    };
    expect(nodesOfDaemonSet(ds)).toBeUndefined();
    expect(resolveBudget({ percent: 10 }, nodesOfDaemonSet(ds))).toBe(1);
    expect(resolveBudget({ percent: 10 }, nodesOfDaemonSet(ds))).toBe(1);
  });

  it('reads the largest fleet there is', () => {
    const status = {
      desiredNumberScheduled: MAX_FLEET_NODES,
      currentNumberScheduled: 0,
      numberMisscheduled: 0,
      numberReady: 0,
    };
    expect(nodesOfDaemonSet({ status })).toBe(MAX_FLEET_NODES);
  });
});
