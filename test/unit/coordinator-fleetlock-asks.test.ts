// When the coordinator last saw a node holding a turn ask the FleetLock server anew
// (src/coordinator/fleetlock-asks.ts): only a change of the status' fleetLockAsked counts.
import { describe, expect, it } from '@jest/globals';
import { FleetLockAsks } from '../../src/coordinator/fleetlock-asks.js';
import type { NodeRecord } from '../../src/coordinator/fleet-view.js';

const TURN = '{"since":"2026-01-05T09:59:00Z","by":"c-0"}';

/** Node `name` whose status says `asked`, holding a turn (null: none). */
function record(name: string, asked: string | undefined, turn: string | null = TURN): NodeRecord {
  return {
    name,
    status: {
      phase: 'waiting-for-lock',
      reason: 'r',
      ...(asked === undefined ? {} : { fleetLockAsked: asked }),
    },
    group: '',
    inCycle: false,
    unhealthy: undefined,
    controlPlane: false,
    waiting: true,
    reported: true,
    quarantined: false,
    turn: turn ?? undefined,
    lapsedTurn: undefined,
  };
}

const T1 = '2026-01-05T10:00:00Z';
const T2 = '2026-01-05T10:00:30Z';

describe('the FleetLock questions the coordinator sees', () => {
  it('counts a question asked after the turn was given though no plan ran in between', () => {
    const asks = new FleetLockAsks();
    asks.granted('a', undefined);
    asks.note([record('a', T1)], 1_000);
    expect(asks.seen()).toEqual(new Map([['a', 1_000]]));
  });

  it('takes a question first seen without a grant (a new leader) as a baseline only, and counts the next', () => {
    const asks = new FleetLockAsks();
    asks.note([record('a', T1)], 1_000);
    expect(asks.seen()).toEqual(new Map());
    asks.note([record('a', T1)], 2_000);
    expect(asks.seen()).toEqual(new Map());
    asks.note([record('a', T2)], 3_000);
    expect(asks.seen()).toEqual(new Map([['a', 3_000]]));
  });

  it('takes a question from before the turn, still on the status at the grant, as a baseline only', () => {
    const asks = new FleetLockAsks();
    asks.granted('a', T1);
    asks.note([record('a', T1)], 1_000);
    expect(asks.seen()).toEqual(new Map());
  });

  it('keeps the time of the last change, not of the last look', () => {
    const asks = new FleetLockAsks();
    asks.granted('a', undefined);
    asks.note([record('a', T1)], 1_000);
    asks.note([record('a', T1)], 9_000);
    expect(asks.seen()).toEqual(new Map([['a', 1_000]]));
  });

  it('ends the keeping when the status no longer carries a question (the agent waits for something else), and counts the next question anew', () => {
    const asks = new FleetLockAsks();
    asks.granted('a', undefined);
    asks.note([record('a', T1)], 1_000);
    asks.note([record('a', undefined)], 2_000);
    expect(asks.seen()).toEqual(new Map());
    asks.note([record('a', T2)], 3_000);
    expect(asks.seen()).toEqual(new Map([['a', 3_000]]));
  });

  it('forgets a node that no longer holds a turn, so that its next turn starts from a baseline', () => {
    const asks = new FleetLockAsks();
    asks.granted('a', undefined);
    asks.note([record('a', T1)], 1_000);
    asks.note([record('a', T1, null)], 2_000);
    asks.note([record('a', T1)], 3_000);
    expect(asks.seen()).toEqual(new Map());
  });
});
