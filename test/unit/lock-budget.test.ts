// --concurrency and --group-concurrency as a share of the nodes (src/lock/budget.ts): rounded down,
// at least 1, and 1 while the size is not known (fail safe).
import { describe, expect, it } from '@jest/globals';
import { resolveFailureBudget } from '../../src/lock/fleet-questions.js';
import { MAX_FLEET_NODES, nodesOfDaemonSet, resolveBudget, type BudgetSpec } from '../../src/lock/budget.js';

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
    expect(resolveBudget({ count: 1, percent: 10 }, nodesOfDaemonSet(ds))).toBe(1);
    expect(resolveFailureBudget({ percent: 10 }, nodesOfDaemonSet(ds))).toBe(1);
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
