// The fair lock queue's order (src/lock/wait-queue.ts): who takes a freed slot.
import { describe, expect, it } from '@jest/globals';
import { compareWaiters, firstAhead, waiterOf, type Waiter } from '../../src/lock/wait-queue.js';
import { STATUS_ANNOTATION, formatStatus } from '../../src/node/status.js';

const w = (node: string, requiredSinceMs: number, extra: Partial<Waiter> = {}): Waiter => ({
  node,
  requiredSinceMs,
  overdue: false,
  group: undefined,
  ...extra,
});
const anyone = (): boolean => true;

describe('the fair lock queue', () => {
  it.each([
    ['the oldest need goes first', 'n3', [w('n1', 300), w('n2', 100), w('n3', 200)], 'n2'],
    [
      'this node goes when its need is the oldest',
      'n2',
      [w('n1', 300), w('n2', 100), w('n3', 200)],
      undefined,
    ],
    [
      'an overdue node goes before an older one that is not',
      'n1',
      [w('n1', 100), w('n2', 500, { overdue: true })],
      'n2',
    ],
    ['ties go by name', 'n2', [w('n2', 100), w('n1', 100)], 'n1'],
    [
      'a node not yet recorded as waiting (its first try) queues behind those that are',
      'n9',
      [w('n1', 900)],
      'n1',
    ],
    ['with nobody waiting, this node goes', 'n9', [], undefined],
  ])('%s', (_name, self, waiters, expected) => {
    expect(firstAhead(self, waiters, anyone)?.node).toBe(expected);
  });

  it('passes over an older waiter whose group has no room (group concurrency)', () => {
    const waiters = [w('a1', 100, { group: 'zone-a' }), w('b1', 200, { group: 'zone-b' })];
    expect(firstAhead('b1', waiters, (group) => group === 'zone-b')).toBeUndefined();
    expect(firstAhead('b1', waiters, anyone)?.node).toBe('a1');
  });

  it('sorts overdue, then oldest, then by name', () => {
    const sorted = [w('c', 1), w('b', 1), w('a', 2), w('z', 9, { overdue: true })].sort(compareWaiters);
    expect(sorted.map((x) => x.node)).toEqual(['z', 'b', 'c', 'a']);
  });

  it.each([
    [
      'waiting, with its need recorded',
      { phase: 'waiting-for-lock', requiredSince: '2026-01-05T09:00:00Z' },
      true,
    ],
    [
      'waiting, overdue',
      { phase: 'waiting-for-lock', requiredSince: '2026-01-05T06:00:00Z', due: '2026-01-05T08:00:00Z' },
      true,
    ],
    ['blocked: not waiting for a slot', { phase: 'blocked', requiredSince: '2026-01-05T09:00:00Z' }, false],
    [
      'waiting, but by an agent that records no need (an older kured-ts)',
      { phase: 'waiting-for-lock' },
      false,
    ],
  ])('reads a node %s from its status annotation', (_name, fields, waits) => {
    const status = formatStatus({
      reason: 'r',
      since: '2026-01-05T09:00:00Z',
      bootID: 'b',
      ...fields,
    } as never);
    const node = {
      metadata: { name: 'n1', annotations: { [STATUS_ANNOTATION]: status }, labels: { zone: 'z1' } },
    };
    const waiter = waiterOf(node, new Date('2026-01-05T10:00:00Z'), 'zone');
    expect(waiter !== undefined).toBe(waits);
    if (waiter !== undefined) {
      expect(waiter.group).toBe('z1');
      expect(waiter.overdue).toBe('due' in fields);
    }
  });
});
