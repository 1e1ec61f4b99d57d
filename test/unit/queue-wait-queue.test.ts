// The fair lock queue's order (src/queue/wait-queue.ts): who takes a freed slot.
import { describe, expect, it } from '@jest/globals';
import { compareWaiters, type Waiter } from '../../src/queue/wait-queue.js';
import { STATUS_ANNOTATION, formatStatus } from '../../src/node/status.js';
import { recordOf } from '../../src/coordinator/fleet-view.js';
import { waiterOfRecord } from '../../src/coordinator/waiters.js';

const w = (node: string, requiredSinceMs: number, extra: Partial<Waiter> = {}): Waiter => ({
  node,
  requiredSinceMs,
  overdue: false,
  group: undefined,
  ...extra,
});

describe('the fair lock queue', () => {
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
      'waiting, by an agent that records no need (an older kured-ts): behind every recorded need',
      { phase: 'waiting-for-lock' },
      true,
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
    const waiter = waiterOfRecord(recordOf(node, 'zone'), new Date('2026-01-05T10:00:00Z'), true);
    expect(waiter !== undefined).toBe(waits);
    if (waiter !== undefined) {
      expect(waiter.group).toBe('z1');
      expect(waiter.overdue).toBe('due' in fields);
    }
  });
});
