// Every budget of the fleet resolved in one place (src/capacity/budget.ts), from one count of the
// nodes: --concurrency, --max-failures and the slow start from the nodes the lock's DaemonSet runs on,
// --group-concurrency from the group's, the caps from the census. A share rounds down, at least 1,
// and is 1 while the size is not known (fail safe); a cap may be 0.
import { describe, expect, it } from '@jest/globals';
import {
  budgetsOf,
  capsOf,
  groupSlotsOf,
  groupSlotsUncounted,
  MAX_FLEET_NODES,
  multiForm,
  nodesOfDaemonSet,
  type FleetBudgets,
} from '../../src/capacity/budget.js';
import type { CapacitySettings } from '../../src/capacity/settings.js';
import { budgetCount, budgetText, type Budget } from '../../src/config/budget.js';
import { share } from '../../src/config/values.js';

const WAVE = { growth: { kind: 'none' }, soakMs: 0 } as const;

describe("budgetsOf: the fleet's budgets from one count of its nodes", () => {
  it.each<[string, Budget, number | undefined, number]>([
    ['a number is the number, whatever the fleet', { count: 3 }, 1000, 3],
    ['10% of 1,000 nodes is 100', { percent: 10 }, 1000, 100],
    ['10% of 95 nodes rounds down to 9', { percent: 10 }, 95, 9],
    ['10% of 5 nodes is at least 1', { percent: 10 }, 5, 1],
    ['100% of 7 nodes is 7', { percent: 100 }, 7, 7],
    ['a share of a fleet whose size is not known yet is 1', { percent: 50 }, undefined, 1],
    ['a share of an empty fleet is 1', { percent: 50 }, 0, 1],
  ])('slots: %s', (_name, concurrency, nodes, slots) => {
    expect(budgetsOf({ concurrency }, nodes).slots).toBe(slots);
  });

  it.each<[string, Pick<CapacitySettings, 'concurrency' | 'wave'>, number | undefined, FleetBudgets]>([
    [
      'no wave: no failure budget, no slow start',
      { concurrency: { count: 3 } },
      100,
      { slots: 3, failures: undefined, slowStart: false },
    ],
    [
      'the failure budget is a share of the same nodes as the slots',
      { concurrency: { percent: 10 }, wave: { ...WAVE, start: 0, maxFailures: { percent: 2 } } },
      500,
      { slots: 50, failures: 10, slowStart: false },
    ],
    [
      'a failure budget of a fleet not counted yet is 1: the first failure halts',
      { concurrency: { percent: 10 }, wave: { ...WAVE, start: 0, maxFailures: { percent: 50 } } },
      undefined,
      { slots: 1, failures: 1, slowStart: false },
    ],
    [
      'a first step smaller than the slots is a slow start',
      { concurrency: { percent: 10 }, wave: { ...WAVE, start: 2 } },
      100,
      { slots: 10, failures: undefined, slowStart: true },
    ],
    [
      'a first step as large as the slots is no slow start at all',
      { concurrency: { percent: 10 }, wave: { ...WAVE, start: 10 } },
      100,
      { slots: 10, failures: undefined, slowStart: false },
    ],
    [
      'a share that shrinks with the fleet ends the slow start it had',
      { concurrency: { percent: 10 }, wave: { ...WAVE, start: 2 } },
      20,
      { slots: 2, failures: undefined, slowStart: false },
    ],
  ])('%s', (_name, settings, nodes, want) => {
    expect(budgetsOf(settings, nodes)).toEqual(want);
  });
});

describe('the budgets of a group and the caps of the fleet', () => {
  const zone = (concurrency: Budget): Pick<CapacitySettings, 'groups'> => ({
    groups: { label: 'zone', concurrency },
  });

  it.each<
    [string, Pick<CapacitySettings, 'groups'>, number | undefined, { slots?: number; uncounted?: number }]
  >([
    ['no groups: no group budget', {}, 10, {}],
    ['a number per group, counted or not', zone({ count: 2 }), 10, { slots: 2, uncounted: 2 }],
    ['25% of a group of 10 is 2', zone({ percent: 25 }), 10, { slots: 2 }],
    [
      'a share of a group not counted is 1 for the acquisition, unjudged for the waiter',
      zone({ percent: 25 }),
      undefined,
      { slots: 1 },
    ],
  ])('%s', (_name, settings, members, want) => {
    expect(groupSlotsOf(settings, members)).toBe(want.slots);
    expect(groupSlotsUncounted(settings)).toBe(want.uncounted);
  });

  it.each<[string, Pick<CapacitySettings, 'maxUnhealthy' | 'maxQuarantined'>, number, object]>([
    ['no caps', {}, 100, {}],
    ['a number is the number', { maxUnhealthy: { count: 3 } }, 100, { maxUnhealthy: 3 }],
    [
      'a share rounds down, and may be 0',
      { maxUnhealthy: { percent: 5 }, maxQuarantined: { percent: 5 } },
      19,
      { maxUnhealthy: 0, maxQuarantined: 0 },
    ],
  ])('caps: %s', (_name, settings, total, want) => {
    expect(capsOf(settings, total)).toEqual(want);
  });

  it.each<[string, Budget, number, boolean]>([
    ["one slot by number is kured's single form", { count: 1 }, 1, false],
    ['two slots are the multi form', { count: 2 }, 2, true],
    ['a share is the multi form even at one slot (its maxOwners varies)', { percent: 10 }, 1, true],
  ])('lock form: %s', (_name, concurrency, slots, multi) => {
    expect(multiForm({ concurrency }, slots)).toBe(multi);
  });
});

describe('Budget: the one shape of "N or N%"', () => {
  it.each<[string, string, Budget, number | undefined]>([
    ['a number of nodes', '3', { count: 3 }, 3],
    ['a percentage of them', '25%', { percent: 25 }, undefined],
  ])('reads and says %s as the flag gives it', (_name, text, budget, count) => {
    expect(share(1)(text)).toEqual(budget);
    expect(budgetText(budget)).toBe(text);
    expect(budgetCount(budget)).toBe(count);
  });

  it('says what a share comes to now', () => {
    expect(budgetText({ percent: 10 }, 3)).toBe('10% = 3');
    expect(budgetText({ count: 3 }, 3)).toBe('3');
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
    const wave = { ...WAVE, start: 0, maxFailures: { percent: 10 } };
    expect(budgetsOf({ concurrency: { percent: 10 }, wave }, nodesOfDaemonSet(ds))).toMatchObject({
      slots: 1,
      failures: 1,
    });
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
