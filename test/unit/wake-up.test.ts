// When the agent looks again after a pass, and what ends the wait sooner (src/agent/wake-up.ts):
// the table of every outcome's answer, on a fixed instant and fixed draws.
import { describe, expect, it } from '@jest/globals';
import { FLEETLOCK_RETRY_MAX_MS, FLEETLOCK_RETRY_MS } from '../../src/fleetlock/fleetlock.js';
import type { Outcome } from '../../src/agent/outcome.js';
import { fleetLockWaitsAfter, wakeUp, type WakeFacts, type WakeUp } from '../../src/agent/wake-up.js';

const NOW = Date.UTC(2026, 5, 1, 12, 0, 0);
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** The facts of a followed agent with --period 1h and the coordinated queue; draws of 0.5 (no jitter). */
function facts(overrides: Partial<WakeFacts> = {}): WakeFacts {
  return {
    nowMs: NOW,
    periodMs: HOUR,
    random: () => 0.5,
    following: true,
    lockQueue: 'fair',
    fleetLockWaits: 0,
    windowOpens: () => NOW + 2 * HOUR,
    statusUnsent: false,
    ...overrides,
  };
}

const waiting: Outcome = { kind: 'waiting-for-lock', reason: 'full', holders: ['a'] };
const fleetLockRefused: Outcome = { ...waiting, fleetLock: true };
const pdb: Outcome = { kind: 'blocked', reason: 'pdb at 0', blocker: 'pdb' };

const cases: { name: string; outcome: Outcome; facts?: Partial<WakeFacts>; expected: WakeUp }[] = [
  {
    name: 'an idle agent sleeps a period, and only wake() ends it sooner',
    outcome: { kind: 'idle', reason: 'no reboot required' },
    expected: { delayMs: HOUR, on: 'wake' },
  },
  {
    name: 'the first lock attempt after start-up comes within a minute, by the draw',
    outcome: { kind: 'pending', reason: 'start-up' },
    facts: { random: () => 0.25 },
    expected: { delayMs: 15 * SECOND, on: 'timer' },
  },
  {
    name: 'a followed readiness wait looks at each change of the Node, and every 30 s at least',
    outcome: { kind: 'verifying', reason: 'not ready' },
    expected: { delayMs: 30 * SECOND, on: 'node' },
  },
  {
    name: 'a readiness wait without the watch polls every 2 s',
    outcome: { kind: 'verifying', reason: 'not ready' },
    facts: { following: false },
    expected: { delayMs: 2 * SECOND, on: 'timer' },
  },
  {
    name: 'a readiness wait ends a moment after --post-reboot-timeout passes',
    outcome: { kind: 'verifying', reason: 'not ready', timeoutAt: NOW + 5 * SECOND },
    expected: { delayMs: 5 * SECOND + 1, on: 'node' },
  },
  {
    name: 'a node holding the lock after the readiness timeout looks every 10 s',
    outcome: { kind: 'holding', reason: 'held' },
    expected: { delayMs: 10 * SECOND, on: 'timer' },
  },
  {
    name: 'a waiter for a slot waits a period, and a lock change ends it',
    outcome: waiting,
    expected: { delayMs: HOUR, on: 'lock' },
  },
  {
    name: 'a node whose slot was lost retries in 30 s, and a lock change ends it',
    outcome: { kind: 'lock-lost', reason: 'gone' },
    expected: { delayMs: 30 * SECOND, on: 'lock' },
  },
  {
    name: 'an error retries in 30 s on the timer alone',
    outcome: { kind: 'error', reason: '500' },
    expected: { delayMs: 30 * SECOND, on: 'timer' },
  },
  {
    name: 'a PDB-blocked node under the coordinated queue waits out its 5 minutes',
    outcome: pdb,
    expected: { delayMs: 5 * MINUTE, on: 'timer' },
  },
  {
    name: 'a PDB-blocked node without the queue wakes on a lock change (the wave frees its budget)',
    outcome: pdb,
    facts: { lockQueue: 'none' },
    expected: { delayMs: 5 * MINUTE, on: 'lock' },
  },
  {
    name: 'a node outside its window looks again when the window opens, spread by the draw',
    outcome: { kind: 'outside-window', reason: 'closed' },
    facts: { windowOpens: () => NOW + 20 * MINUTE },
    expected: { delayMs: 20 * MINUTE + 30 * SECOND, on: 'timer' },
  },
  {
    name: 'a node outside a window that never opens looks again each period',
    outcome: { kind: 'outside-window', reason: 'closed' },
    facts: { windowOpens: () => undefined },
    expected: { delayMs: HOUR, on: 'timer' },
  },
  {
    name: 'a FleetLock refusal retries after the first pause, on the timer (no lock of ours changes)',
    outcome: fleetLockRefused,
    facts: { fleetLockWaits: 1 },
    expected: { delayMs: FLEETLOCK_RETRY_MS, on: 'timer' },
  },
  {
    name: 'the FleetLock retry doubles per refusal in a row, up to its cap',
    outcome: fleetLockRefused,
    facts: { fleetLockWaits: 9 },
    expected: { delayMs: Math.min(FLEETLOCK_RETRY_MAX_MS, FLEETLOCK_RETRY_MS * 16), on: 'timer' },
  },
  {
    name: 'the end of the autoscaler settle or the soak comes first when it is sooner',
    outcome: { kind: 'idle', reason: 'no reboot required' },
    facts: { dueMs: NOW + 4 * MINUTE },
    expected: { delayMs: 4 * MINUTE, on: 'wake' },
  },
  {
    name: 'a settle already over means a pass at once',
    outcome: waiting,
    facts: { dueMs: NOW - MINUTE },
    expected: { delayMs: 0, on: 'lock' },
  },
  {
    name: 'a waiter whose status write failed says it again within 30 s, not a period later',
    outcome: waiting,
    facts: { statusUnsent: true },
    expected: { delayMs: 30 * SECOND, on: 'lock' },
  },
  {
    name: 'every pause is capped by --period',
    outcome: { kind: 'blocked', reason: 'alert firing', blocker: 'prometheus' },
    facts: { periodMs: 10 * SECOND },
    expected: { delayMs: 10 * SECOND, on: 'timer' },
  },
  {
    name: 'the jitter spreads a pause from half to one and a half times',
    outcome: { kind: 'error', reason: '500' },
    facts: { random: () => 0.999 },
    expected: { delayMs: 30 * SECOND * 1.499, on: 'timer' },
  },
];

describe('the wake-up after a pass', () => {
  it.each(cases)('$name', ({ outcome, facts: given, expected }) => {
    const got = wakeUp(outcome, facts(given));
    expect(got.on).toBe(expected.on);
    expect(got.delayMs).toBeCloseTo(expected.delayMs, 6);
  });

  it('asks when the window opens only after an outside-window pass', () => {
    let asked = 0;
    const windowOpens = (): number => {
      asked++;
      return NOW;
    };
    wakeUp(waiting, facts({ windowOpens }));
    wakeUp({ kind: 'idle', reason: '' }, facts({ windowOpens }));
    expect(asked).toBe(0);
    wakeUp({ kind: 'outside-window', reason: 'closed' }, facts({ windowOpens }));
    expect(asked).toBe(1);
  });

  it.each([
    { name: 'a FleetLock refusal counts one more in a row', outcome: fleetLockRefused, before: 2, after: 3 },
    { name: 'a wait for our own lock starts the count again', outcome: waiting, before: 2, after: 0 },
    { name: 'any other outcome starts it again', outcome: pdb, before: 5, after: 0 },
  ])('$name', ({ outcome, before, after }) => {
    expect(fleetLockWaitsAfter(outcome, before)).toBe(after);
  });
});
