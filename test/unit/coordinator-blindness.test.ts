// Whether a blind leader hands the lead over (src/coordinator/blindness.ts): after a lease duration,
// unless the API server is what turns it away (429), which its standby would meet alike.
import { describe, expect, it } from '@jest/globals';
import {
  MAX_BLIND_LEASES,
  blindnessOf,
  leadership,
  type ViewSight,
} from '../../src/coordinator/blindness.js';

const LEASE_MS = 30_000;
const STARTED = 1_000_000;
const sees: ViewSight = {
  synced: true,
  answered: true,
  blindSince: undefined,
  throttled: false,
  lastFailure: '',
};
/** A first list still being answered: nothing read, nothing failed. */
const unlisted: ViewSight = { ...sees, synced: false, answered: false };

/**
 * A view whose list (nothing read yet) or watch (read before) fails since `since`, turned away by the
 * API server (429) or not.
 */
function failing(what: 'list' | 'watch', since: number, throttled: boolean): ViewSight {
  const read = what === 'watch';
  const lastFailure = `${what}: ${throttled ? '429' : 'boom'}`;
  return { synced: read, answered: read, blindSince: since, throttled, lastFailure };
}

describe('a leader that cannot see the fleet', () => {
  it.each([
    {
      name: 'a leader whose views follow plans',
      nodes: sees,
      lock: sees,
      at: STARTED + 5 * LEASE_MS,
      expected: { verdict: 'sees', reason: undefined },
    },
    {
      name: 'a new leader without its list of the nodes waits a lease duration for it',
      nodes: unlisted,
      lock: sees,
      at: STARTED + LEASE_MS - 1,
      expected: { verdict: 'waits', reason: 'no list of the nodes yet' },
    },
    {
      name: 'a new leader whose first list is still being answered after a lease duration waits for it (its standby would start over)',
      nodes: unlisted,
      lock: sees,
      at: STARTED + 5 * LEASE_MS,
      expected: { verdict: 'waits', reason: 'no list of the nodes yet' },
    },
    {
      name: 'a leader whose list of the nodes keeps failing hands over after a lease duration',
      nodes: failing('list', STARTED, false),
      lock: sees,
      at: STARTED + LEASE_MS,
      expected: { verdict: 'hands-over', reason: 'no list of the nodes yet' },
    },
    {
      name: 'a leader whose list of the nodes the server turns away (429) leads on',
      nodes: failing('list', STARTED, true),
      lock: sees,
      at: STARTED + 5 * LEASE_MS,
      expected: { verdict: 'leads-on', reason: 'no list of the nodes yet' },
    },
    {
      name: 'a watch of the nodes failing since before the term counts from the term',
      nodes: failing('watch', STARTED - 10 * LEASE_MS, false),
      lock: sees,
      at: STARTED + LEASE_MS - 1,
      expected: { verdict: 'waits', reason: 'the watch of the nodes is failing' },
    },
    {
      name: 'a lock whose first read is still being answered is waited for',
      nodes: sees,
      lock: unlisted,
      at: STARTED + 3 * LEASE_MS,
      expected: { verdict: 'waits', reason: 'the lock DaemonSet not read yet' },
    },
    {
      name: 'a lock DaemonSet answered as not there is not waited for as if still being read',
      nodes: sees,
      lock: { ...sees, synced: false, answered: true },
      at: STARTED + LEASE_MS,
      expected: { verdict: 'hands-over', reason: 'the lock DaemonSet not read yet' },
    },
    {
      name: 'a first list still being answered after six lease durations is handed over all the same',
      nodes: unlisted,
      lock: sees,
      at: STARTED + MAX_BLIND_LEASES * LEASE_MS,
      expected: { verdict: 'hands-over', reason: 'no list of the nodes yet' },
    },
    {
      name: 'a leader turned away (429) for six lease durations hands over (its own apiserver may be the loaded one)',
      nodes: failing('list', STARTED, true),
      lock: sees,
      at: STARTED + MAX_BLIND_LEASES * LEASE_MS,
      expected: { verdict: 'hands-over', reason: 'no list of the nodes yet' },
    },
    {
      name: 'a lock never read hands over, the nodes seen',
      nodes: sees,
      lock: failing('list', STARTED, false),
      at: STARTED + LEASE_MS,
      expected: { verdict: 'hands-over', reason: 'the lock DaemonSet not read yet' },
    },
    {
      name: 'a watch of the lock the server turns away leads on',
      nodes: sees,
      lock: failing('watch', STARTED + 1_000, true),
      at: STARTED + 1_000 + LEASE_MS,
      expected: { verdict: 'leads-on', reason: 'the watch of the lock is failing' },
    },
  ])('$name', ({ nodes, lock, at, expected }) => {
    const blind = blindnessOf(at, STARTED, { nodes, lock });
    expect(blind?.reason).toBe(expected.reason);
    const { verdict, warning } = leadership(blind, LEASE_MS);
    expect(verdict).toBe(expected.verdict);
    expect(warning !== undefined).toBe(verdict === 'hands-over' || verdict === 'leads-on');
  });
});
