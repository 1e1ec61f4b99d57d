// Every phase the cluster's records can put a node in, as a table: the facts, the phase, and whether
// the cycle ends at once when the sentinel no longer asks for a reboot.
import { describe, expect, it } from '@jest/globals';
import { REBOOT_GRACE_MS, phaseOf, type CycleFacts, type PhaseName } from '../../src/agent/decision/phase.js';
import type { LockHolder, LockMetadata } from '../../src/lock/lock.js';
import type { CycleRecord } from '../../src/node/cycle.js';

const BOOT = 'boot-1';
const NOW = Date.parse('2026-11-24T02:00:00Z');
/** An RFC 3339 time `ms` before NOW. */
const ago = (ms: number): string => new Date(NOW - ms).toISOString();

function entry(metadata: LockMetadata = { unschedulable: false, bootID: BOOT }): LockHolder {
  return { nodeID: 'n1', created: new Date('2026-11-24T01:00:00Z'), ttlMs: 0, metadata };
}

function record(fields: Partial<CycleRecord> = {}): CycleRecord {
  return { bootID: BOOT, cordoned: true, attempts: 0, started: '2026-11-24T01:00:00Z', ...fields };
}

/** A node in our cycle, holding its slot, on the boot the cycle began on, cordoned by us. */
function inCycle(fields: Partial<CycleFacts> = {}): CycleFacts {
  return {
    entry: entry(),
    record: record(),
    labelled: true,
    bootID: BOOT,
    unschedulable: true,
    rebootRetries: 3,
    maxRebootsPerNeed: 2,
    ownUnsent: false,
    nowMs: NOW,
    ...fields,
  };
}

/** A node with neither slot nor cycle. */
function outside(fields: Partial<CycleFacts> = {}): CycleFacts {
  return inCycle({ entry: undefined, record: undefined, labelled: false, unschedulable: false, ...fields });
}

/** kured's entry for a node it cordoned: no bootID, recorded as schedulable before. */
const KURED = entry({ unschedulable: false });

const rows: [string, CycleFacts, PhaseName, boolean][] = [
  ['a node with no slot and no cycle is before the lock', outside(), 'before-lock', false],
  [
    'a cordoned node with no slot and no cycle is before the lock (an admin cordon is not a cycle)',
    outside({ unschedulable: true }),
    'before-lock',
    false,
  ],
  [
    'a lock entry naming the node without a cycle record is unproven, and asked for anew',
    outside({ entry: entry() }),
    'unproven-entry',
    true,
  ],
  [
    "kured's entry for a node kured cordoned is adopted as a cycle of ours",
    outside({ entry: KURED, unschedulable: true }),
    'kured-entry',
    false,
  ],
  [
    "kured's entry on a schedulable node is unproven (kured's cordon is not there to adopt)",
    outside({ entry: KURED }),
    'unproven-entry',
    true,
  ],
  [
    'an entry recorded as cordoned before the slot, on a cordoned node, is unproven (not kured)',
    outside({ entry: entry({ unschedulable: true }), unschedulable: true }),
    'unproven-entry',
    true,
  ],
  [
    'an entry of kured-ts (it records a bootID) on a cordoned node is unproven',
    outside({ entry: entry(), unschedulable: true }),
    'unproven-entry',
    true,
  ],
  [
    'a cycle whose label an operator removed is released, slot held',
    inCycle({ labelled: false }),
    'released',
    false,
  ],
  [
    'a cycle whose label an operator removed is released, slot gone, after the reboot too',
    inCycle({ labelled: false, entry: undefined, bootID: 'boot-2' }),
    'released',
    false,
  ],
  [
    'a held cycle on the same boot before any reboot request resumes at the drain, and may be cancelled',
    inCycle(),
    'drain',
    true,
  ],
  [
    'a held cycle on the same boot after a reboot request drains again, and is no longer cancelled',
    inCycle({ record: record({ attempts: 1 }) }),
    'drain',
    false,
  ],
  [
    'a held cycle on the same boot after --reboot-retries requests has given up',
    inCycle({ record: record({ attempts: 3 }) }),
    'given-up',
    false,
  ],
  [
    'giving up wins over an uncordon meanwhile: the operator decides',
    inCycle({ record: record({ attempts: 3 }), unschedulable: false }),
    'given-up',
    false,
  ],
  [
    'a reboot requested a minute ago on this boot may still come: no drain, no second request',
    inCycle({ record: record({ attempts: 1, rebootRequestedAt: ago(60_000) }) }),
    'reboot-requested',
    false,
  ],
  [
    'a reboot requested longer ago than the grace, on the same boot, did not come: drain again',
    inCycle({ record: record({ attempts: 1, rebootRequestedAt: ago(REBOOT_GRACE_MS) }) }),
    'drain',
    false,
  ],
  [
    'a request time ahead of now (the clock stepped back) is no reason to wait',
    inCycle({ record: record({ attempts: 1, rebootRequestedAt: ago(-60_000) }) }),
    'drain',
    false,
  ],
  [
    'a failed request (the record keeps the attempt, not the request time) is retried at once',
    inCycle({ record: record({ attempts: 1 }) }),
    'drain',
    false,
  ],
  [
    "this agent's own attempt, counted a minute ago and never asked for, is asked for now: no reboot is coming",
    inCycle({ record: record({ attempts: 1, rebootRequestedAt: ago(60_000) }), ownUnsent: true }),
    'unsent-reboot',
    false,
  ],
  [
    "this agent's own last attempt, never asked for, is asked for rather than waited for",
    inCycle({ record: record({ attempts: 3, rebootRequestedAt: ago(1000) }), ownUnsent: true }),
    'unsent-reboot',
    false,
  ],
  [
    "this agent's own attempt past the grace drains and reboots as any cycle on the same boot",
    inCycle({
      record: record({ attempts: 1, rebootRequestedAt: ago(REBOOT_GRACE_MS + 1000) }),
      ownUnsent: true,
    }),
    'drain',
    false,
  ],
  [
    'the last attempt, requested a moment ago, is waited for before giving up',
    inCycle({ record: record({ attempts: 3, rebootRequestedAt: ago(1000) }) }),
    'reboot-requested',
    false,
  ],
  [
    'the last attempt, requested longer ago than the grace, has given up',
    inCycle({ record: record({ attempts: 3, rebootRequestedAt: ago(REBOOT_GRACE_MS) }) }),
    'given-up',
    false,
  ],
  [
    'a recent request wins over an uncordon meanwhile: one reboot per boot',
    inCycle({ record: record({ attempts: 1, rebootRequestedAt: ago(1000) }), unschedulable: false }),
    'reboot-requested',
    false,
  ],
  [
    'a recent request on a boot that is gone is proven: readiness',
    inCycle({ record: record({ attempts: 1, rebootRequestedAt: ago(1000) }), bootID: 'boot-2' }),
    'readiness',
    false,
  ],
  [
    'a held cycle whose cordon of ours someone lifted is uncordoned meanwhile',
    inCycle({ unschedulable: false }),
    'uncordoned-meanwhile',
    true,
  ],
  [
    'an uncordon after a reboot request is still uncordoned meanwhile, not cancellable',
    inCycle({ unschedulable: false, record: record({ attempts: 1 }) }),
    'uncordoned-meanwhile',
    false,
  ],
  [
    'a schedulable node whose cordon was not ours (it was cordoned before) resumes at the drain',
    inCycle({ unschedulable: false, record: record({ cordoned: false }) }),
    'drain',
    true,
  ],
  ['a held cycle on a new boot waits for readiness', inCycle({ bootID: 'boot-2' }), 'readiness', false],
  [
    'a new boot after the last allowed attempt still waits for readiness (the reboot came)',
    inCycle({ bootID: 'boot-2', record: record({ attempts: 3 }) }),
    'readiness',
    false,
  ],
  [
    'a node that reports no bootID is not proven rebooted: back to the drain',
    inCycle({ bootID: '', record: record({ attempts: 1 }) }),
    'drain',
    false,
  ],
  [
    'an unreadable record (no boot) is never proven rebooted',
    inCycle({ record: record({ bootID: '', attempts: 0 }), bootID: 'boot-2' }),
    'drain',
    true,
  ],
  [
    'a new round whose need already survived --max-reboots-per-need reboots stops in reboot-loop',
    inCycle({ record: record({ needReboots: 2 }) }),
    'reboot-loop',
    false,
  ],
  [
    'a new round under --max-reboots-per-need goes on to the drain, and may be cancelled',
    inCycle({ record: record({ needReboots: 1 }) }),
    'drain',
    true,
  ],
  [
    'a record whose count of reboots for the need cannot be read stops in reboot-loop (fail safe)',
    inCycle({ record: record({ bootID: '', needReboots: Number.POSITIVE_INFINITY }) }),
    'reboot-loop',
    false,
  ],
  [
    'a record past the bound on a new boot waits for readiness first (the reboot came)',
    inCycle({ bootID: 'boot-2', record: record({ needReboots: 2 }) }),
    'readiness',
    false,
  ],
  [
    'a cycle on the same boot whose slot is gone takes it back, and may be cancelled',
    inCycle({ entry: undefined }),
    'retake-before-reboot',
    true,
  ],
  [
    'a cycle whose slot is gone after a reboot request takes it back, not cancellable',
    inCycle({ entry: undefined, record: record({ attempts: 1 }) }),
    'retake-before-reboot',
    false,
  ],
  [
    'a cycle on a new boot whose slot is gone (a lock wiped while the node was down) takes it back',
    inCycle({ entry: undefined, bootID: 'boot-2' }),
    'retake-after-reboot',
    false,
  ],
  [
    'an uncordoned cycle whose slot is gone takes the slot back first',
    inCycle({ entry: undefined, unschedulable: false }),
    'retake-before-reboot',
    true,
  ],
];

describe('phaseOf: where the cluster records put a node in its cycle', () => {
  it.each(rows)('%s', (_name, facts, phase, cancellable) => {
    const found = phaseOf(facts);
    expect(found.name).toBe(phase);
    expect(found.cancellable).toBe(cancellable);
    expect(found.reason).not.toBe('');
  });

  it('covers every phase in the table', () => {
    const covered = new Set(rows.map((r) => r[2]));
    // a Record, so that a phase added to the type without a row here fails to compile
    const every: Record<PhaseName, true> = {
      'before-lock': true,
      'unproven-entry': true,
      'kured-entry': true,
      released: true,
      'retake-before-reboot': true,
      'retake-after-reboot': true,
      'given-up': true,
      'reboot-requested': true,
      'unsent-reboot': true,
      'uncordoned-meanwhile': true,
      'reboot-loop': true,
      drain: true,
      readiness: true,
    };
    const all = Object.keys(every);
    expect([...covered].sort()).toEqual([...all].sort());
  });

  it('carries the record and the entry it was decided on to the handler', () => {
    const facts = inCycle({ record: record({ attempts: 2 }) });
    const found = phaseOf(facts);
    expect(found).toMatchObject({ name: 'drain', record: facts.record });
    const kured = phaseOf(outside({ entry: KURED, unschedulable: true }));
    expect(kured).toMatchObject({ name: 'kured-entry', entry: KURED });
  });
});
