// The wave's gates, pure (src/capacity/wave-gate.ts) and as the coordinator asks them of its view
// (src/coordinator/wave-plan.ts): slow start and its growth, soak, the failure budget, group order.
import { describe, expect, it } from '@jest/globals';
import type { WaveGrowth } from '../../src/config/config.js';
import { groupBefore, stepAllowance, waveRoom, type WaveFacts } from '../../src/capacity/wave-gate.js';
import { roomFor, type RoomQuestion } from '../../src/capacity/room.js';
import { waveFactsOf, type WavePlanConfig } from '../../src/coordinator/wave-plan.js';
import type { NodeRecord } from '../../src/coordinator/fleet-view.js';
import type { WaveState } from '../../src/node/wave.js';

const NONE: WaveGrowth = { kind: 'none' };
const X2: WaveGrowth = { kind: 'double' };
const PLUS2: WaveGrowth = { kind: 'linear', step: 2 };
const INF = Number.POSITIVE_INFINITY;

describe('slow start: how many nodes of a wave may have gone once so many settled', () => {
  it.each([
    // settled, start, growth, concurrency, allowed
    [0, 1, X2, 10, 1],
    [1, 1, X2, 10, 3],
    [2, 1, X2, 10, 3],
    [3, 1, X2, 10, 7],
    [7, 1, X2, 10, 15],
    [15, 1, X2, 10, INF], // the next step (16) would be as large as the slots: slow start over
    [0, 2, PLUS2, 10, 2],
    [2, 2, PLUS2, 10, 6],
    [6, 2, PLUS2, 10, 12],
    [12, 2, PLUS2, 10, 20],
    [20, 2, PLUS2, 10, INF],
    [0, 3, NONE, 10, 3], // the canary, then --concurrency
    [3, 3, NONE, 10, INF],
    [0, 10, X2, 10, INF], // --wave-start at --concurrency: no slow start (the default)
    [0, 0, NONE, 10, 1], // a start of 0 reads as 1 (the lock asks nothing with --wave-start 0)
  ] as const)(
    'with %i settled, --wave-start %i --wave-growth %o at --concurrency %i lets %d go in all',
    (...[settled, start, growth, concurrency, allowed]) => {
      expect(stepAllowance(settled, start, growth, concurrency)).toBe(allowed);
    },
  );
});

/** Facts of wave w1 with these parts. */
function facts(parts: Partial<WaveFacts>): WaveFacts {
  return { wave: 'w1', ...parts };
}

const steps = (entered: string[], settled: string[], soakMs = 600_000): WaveFacts['steps'] => ({
  start: 1,
  growth: X2,
  soakMs,
  entered,
  settled,
});

describe('the wave refuses, in this order: its budget, the group order, the slow start', () => {
  it.each([
    ['no gate configured', facts({}), undefined],
    ['the first node of a wave goes', facts({ steps: steps([], []) }), undefined],
    ['the second waits for the first to soak', facts({ steps: steps(['a'], []) }), 'slow-start'],
    ['the second and third go once the first has soaked', facts({ steps: steps(['a'], ['a']) }), undefined],
    [
      'the fourth waits for the second step',
      facts({ steps: steps(['a', 'b', 'c'], ['a', 'b']) }),
      'slow-start',
    ],
    ['the budget spent halts it', facts({ budget: { max: 1, failed: ['b'] } }), 'wave-halted'],
    ['within the budget it goes', facts({ budget: { max: 2, failed: ['b'] } }), undefined],
    [
      'an earlier group waits',
      facts({ order: { group: 'b', busy: [], earlier: { group: 'a', node: 'a1' } } }),
      'group-order',
    ],
    ['another group is still busy', facts({ order: { group: 'b', busy: ['a1'] } }), 'group-order'],
    [
      'the budget before the order',
      facts({ budget: { max: 1, failed: ['x'] }, order: { group: 'b', busy: ['a1'] } }),
      'wave-halted',
    ],
    [
      'the order before the slow start',
      facts({ order: { group: 'b', busy: ['a1'] }, steps: steps(['a1'], []) }),
      'group-order',
    ],
  ] as const)('%s', (_name, f, why) => {
    expect(waveRoom(f, 10)?.why).toBe(why);
  });

  it('roomFor asks the wave after the quarantine cap and before the slots', () => {
    const q: RoomQuestion = {
      live: [],
      nodeId: 'n1',
      declared: 10,
      group: undefined,
      concurrency: 10,
      groups: undefined,
      wave: facts({ steps: steps(['a'], []) }),
    };
    expect(roomFor(q)).toMatchObject({ room: false, why: 'slow-start', entered: 1, allowed: 1 });
    expect(roomFor({ ...q, quarantine: { max: 0, nodes: ['q'] } })).toMatchObject({ why: 'quarantined' });
    expect(roomFor({ ...q, wave: facts({ steps: steps(['a'], ['a']) }) })).toEqual({ room: true });
  });
});

describe('group order: the groups given first, then by name, the nodes without the label last', () => {
  it.each([
    [[], 'a', 'b', true],
    [[], 'b', 'a', false],
    [[], 'a', '', true],
    [[], '', 'a', false],
    [['c', 'a'], 'c', 'a', true],
    [['c', 'a'], 'a', 'b', true],
    [['c', 'a'], 'b', 'c', false],
    [['c'], 'b', '', true],
  ] as const)('with order %o, %s goes before %s: %s', (order, a, b, before) => {
    expect(groupBefore(order)(a, b)).toBe(before);
  });
});

/** A record of the coordinator's view: in wave w1 at `state`. */
function rec(name: string, state: WaveState | undefined, more: Partial<NodeRecord> = {}): NodeRecord {
  return {
    name,
    status: undefined,
    group: '',
    inCycle: false,
    unhealthy: undefined,
    controlPlane: false,
    waiting: state === 'waiting',
    reported: true,
    quarantined: false,
    turn: undefined,
    lapsedTurn: undefined,
    wave: 'w1',
    ...(state === undefined ? {} : { waveState: state }),
    ready: true,
    ...more,
  };
}

function plan(members: NodeRecord[], more: Partial<WavePlanConfig> = {}): WavePlanConfig {
  return { start: 1, growth: X2, soakMs: 600_000, slowStart: true, members: () => members, ...more };
}

describe('the coordinator counts the same facts from its view', () => {
  const me = rec('me', 'waiting');
  it.each([
    [
      'a node back but not soaked has gone and not settled',
      [me, rec('a', 'back')],
      { entered: ['a'], settled: [] },
    ],
    [
      'a soaked node that is not Ready does not settle',
      [me, rec('a', 'soaked', { ready: false })],
      { entered: ['a'], settled: [] },
    ],
    [
      'a node in its cycle has gone',
      [me, rec('a', 'waiting', { inCycle: true })],
      { entered: ['a'], settled: [] },
    ],
    ['a failed node has gone and settled', [me, rec('a', 'failed')], { entered: ['a'], settled: ['a'] }],
    ['a waiter has not gone', [me, rec('a', 'waiting')], { entered: [], settled: [] }],
  ] as const)('%s', (_name, members, want) => {
    const got = waveFactsOf(plan([...members]), me, { live: [], claims: [] });
    expect({ entered: got?.steps?.entered, settled: got?.steps?.settled }).toEqual(want);
  });

  it('a turn promised in this plan counts as gone (no two turns past the step)', () => {
    const got = waveFactsOf(plan([me]), me, { live: [], claims: [{ name: 'x', group: '' }] });
    expect(got?.steps?.entered).toEqual(['x']);
    expect(waveRoom(got, 10)?.why).toBe('slow-start');
  });

  it('the budget leaves out the failures kured-ts resume acknowledged', () => {
    const members = [me, rec('a', 'failed'), rec('b', 'failed')];
    const got = waveFactsOf(plan(members, { maxFailures: 2, resumed: { wave: 'w1', nodes: ['a'] } }), me, {
      live: [],
      claims: [],
    });
    expect(got?.budget).toEqual({ max: 2, failed: ['b'] });
    expect(waveRoom(got, 10)).toBeUndefined();
  });

  it.each([
    ['a waiter of an earlier zone', [rec('a1', 'waiting', { group: 'a' })], 'group-order'],
    [
      'a quarantined waiter of an earlier zone does not hold it (its zone is done)',
      [rec('a1', 'waiting', { group: 'a', quarantined: true })],
      undefined,
    ],
    ['a node of another zone back, not soaked', [rec('c1', 'back', { group: 'c' })], 'group-order'],
    [
      'a failed node of another zone does not hold it',
      [rec('a1', 'failed', { group: 'a', inCycle: true })],
      undefined,
    ],
    ['a waiter of a later zone', [rec('c1', 'waiting', { group: 'c' })], undefined],
  ] as const)('zone b: %s', (_name, others, why) => {
    const mine = rec('b1', 'waiting', { group: 'b' });
    const got = waveFactsOf(plan([mine, ...others], { start: 0, slowStart: false, order: [] }), mine, {
      live: [],
      claims: [],
    });
    expect(waveRoom(got, 10)?.why).toBe(why);
  });
});
