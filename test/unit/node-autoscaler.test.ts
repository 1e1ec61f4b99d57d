// The autoscaler protection's record and writes (src/node/autoscaler.ts): pure, one row per state.
import { describe, expect, it } from '@jest/globals';
import {
  CLUSTER_AUTOSCALER_ANNOTATION as CA,
  KARPENTER_ANNOTATION as KARPENTER,
  PROTECTION_ANNOTATION as P,
  parseProtection,
  protect,
  settleFrom,
  settleStep,
  unprotect,
} from '../../src/node/autoscaler.js';

const NOW = new Date('2026-01-05T10:00:00Z');
const rec = (added: string[], until?: string): string =>
  JSON.stringify(until === undefined ? { added } : { added, until });

describe('protect (at the start of a cycle)', () => {
  it.each<[string, Record<string, string>, Record<string, string>]>([
    [
      'adds both where neither is set, and records both',
      {},
      { [CA]: 'true', [KARPENTER]: 'true', [P]: rec([CA, KARPENTER]) },
    ],
    [
      'adds only the one an admin has not set, and records only it',
      { [KARPENTER]: 'true' },
      { [CA]: 'true', [P]: rec([CA]) },
    ],
    [
      'adds nothing and records nothing when an admin set both (even to another value)',
      { [CA]: 'false', [KARPENTER]: 'true' },
      {},
    ],
    [
      'writes nothing when already protected for a cycle',
      { [CA]: 'true', [KARPENTER]: 'true', [P]: rec([CA, KARPENTER]) },
      {},
    ],
    [
      'takes over a settle still running: its annotations stay ours, the end goes',
      { [CA]: 'true', [KARPENTER]: 'true', [P]: rec([CA, KARPENTER], '2026-01-05T10:05:00Z') },
      { [P]: rec([CA, KARPENTER]) },
    ],
    [
      'records afresh over an unreadable record, claiming nothing it did not add',
      { [CA]: 'true', [P]: 'garbage' },
      { [KARPENTER]: 'true', [P]: rec([KARPENTER]) },
    ],
  ])('%s', (_name, annotations, change) => {
    expect(protect(annotations)).toEqual(change);
  });
});

describe('the settle after a cycle', () => {
  it.each<[string, Record<string, string>, number, ReturnType<typeof settleStep>]>([
    ['does nothing without a record', { [CA]: 'true' }, 600_000, { step: 'none' }],
    [
      'waits until its end',
      { [CA]: 'true', [P]: rec([CA], '2026-01-05T10:05:00Z') },
      600_000,
      { step: 'wait', until: Date.parse('2026-01-05T10:05:00Z') },
    ],
    [
      'ends at its end: removes what it added, if still "true", and the record',
      { [CA]: 'true', [KARPENTER]: 'false', [P]: rec([CA, KARPENTER], '2026-01-05T10:00:00Z') },
      600_000,
      { step: 'end', change: { [P]: null, [CA]: null } },
    ],
    [
      'starts for a record without an end outside a cycle',
      { [CA]: 'true', [P]: rec([CA]) },
      600_000,
      { step: 'start', change: { [P]: rec([CA], '2026-01-05T10:10:00.000Z') } },
    ],
    [
      'ends an unreadable record at once, removing no annotation on its word',
      { [CA]: 'true', [P]: '{' },
      600_000,
      { step: 'end', change: { [P]: null } },
    ],
  ])('%s', (_name, annotations, settleMs, step) => {
    expect(settleStep(annotations, NOW, settleMs)).toEqual(step);
  });

  it('with --settle-time 0 the end of the cycle removes the protection at once', () => {
    const annotations = { [CA]: 'true', [P]: rec([CA]) };
    expect(settleFrom(annotations, NOW, 0)).toEqual(unprotect(annotations));
    expect(unprotect(annotations)).toEqual({ [CA]: null, [P]: null });
  });

  it('reads only the autoscaler annotations from a record (a forged key is never removed)', () => {
    expect(parseProtection(rec([CA, 'example.com/owner']))).toEqual({ added: [CA] });
  });
});
