// The agent's memory between passes and its one writer (src/agent/decision/memory.ts): each change
// a handler can want, what it leaves, and that nothing else is touched.
import { describe, expect, it } from '@jest/globals';
import { initialMemory, remember, type Memory, type MemoryChange } from '../../src/agent/decision/memory.js';

const soaking = { wave: 'w1', backSince: 5, readySince: 7, dueAt: 100 };
const before: Memory = { clean: true, instance: 'n1/abc', unsent: 'record', settleUntil: 50, soak: soaking };

const cases: { name: string; from?: Memory; change: MemoryChange; expected: Partial<Memory> }[] = [
  {
    name: 'a pass that finds something of ours is no longer clean',
    change: { kind: 'judged-clean', clean: false },
    expected: { clean: false },
  },
  {
    name: "an attempt's record written is kept as unsent until the host is asked",
    change: { kind: 'attempt-written', record: 'next' },
    expected: { unsent: 'next' },
  },
  {
    name: 'the host asked for the reboot leaves nothing unsent',
    change: { kind: 'attempt-sent' },
    expected: { unsent: undefined },
  },
  {
    name: 'the settle as last seen on the node replaces the one before',
    change: { kind: 'settle-seen', until: undefined },
    expected: { settleUntil: undefined },
  },
  {
    name: 'a FleetLock slot granted is held',
    change: { kind: 'fleet-lock', state: 'held' },
    expected: { fleetLock: 'held' },
  },
  {
    name: 'a FleetLock slot given back is forgotten',
    from: { ...before, fleetLock: 'held' },
    change: { kind: 'fleet-lock', state: undefined },
    expected: { fleetLock: undefined },
  },
  {
    name: 'a FleetLock slot owed (its release failed) keeps the agent from being clean',
    change: { kind: 'fleet-lock', state: 'owed' },
    expected: { fleetLock: 'owed', clean: false },
  },
  {
    name: 'a soak over is forgotten',
    change: { kind: 'soak', soak: undefined },
    expected: { soak: undefined },
  },
];

describe("the agent's memory", () => {
  it.each(cases)('$name', ({ from = before, change, expected }) => {
    const frozen = Object.freeze({ ...from });
    const after = remember(frozen, change);
    expect(after).toEqual({ ...from, ...expected });
    expect(frozen).toEqual(from); // a new memory: the one before is not written
  });

  it.each([
    {
      name: 'a new agent is not clean and owes nothing',
      fleetLock: false,
      expected: { clean: false, instance: 'i' },
    },
    {
      name: 'a new agent with a FleetLock server may owe a slot from before its start',
      fleetLock: true,
      expected: { clean: false, instance: 'i', fleetLock: 'owed' },
    },
  ])('$name', ({ fleetLock, expected }) => {
    expect(initialMemory('i', fleetLock)).toEqual(expected);
  });
});
