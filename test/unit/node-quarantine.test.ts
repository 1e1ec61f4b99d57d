// The quarantine's own rule (src/node/quarantine.ts): whether a node whose drain failed is still
// passed over, from its label, its record and the pods on it now.
import { describe, expect, it } from '@jest/globals';
import {
  QUARANTINE_ANNOTATION,
  QUARANTINE_LABEL,
  formatQuarantine,
  judgeQuarantine,
  parseQuarantine,
  type PresentPod,
  type QuarantineFacts,
  type QuarantineRecord,
} from '../../src/node/quarantine.js';

const SINCE = '2026-01-05T10:00:00.000Z';
const HOUR = 3_600_000;
const STUCK = { pod: 'batch/stuck', uid: 'u1', reason: 'still terminating at --drain-timeout' };

/** A node as judgeQuarantine reads it: the label (or none) and the record (or garbage, or none). */
function node(record: QuarantineRecord | string | undefined, labelled = true): QuarantineFacts['node'] {
  const text = typeof record === 'object' ? formatQuarantine(record) : record;
  return {
    labels: labelled ? { [QUARANTINE_LABEL]: 'drain-failed' } : {},
    annotations: text === undefined ? {} : { [QUARANTINE_ANNOTATION]: text },
  };
}

const quarantined: QuarantineRecord = { since: SINCE, pods: [STUCK], cordoned: false };
const stillThere: PresentPod[] = [{ pod: 'batch/stuck', uid: 'u1' }];
const heldPastTimeout: QuarantineRecord = {
  since: SINCE,
  pods: [],
  cordoned: false,
  holdKeys: ['backup.example/running'],
};

/** `n` with these annotations too (the external worker's hold). */
function withHold(n: QuarantineFacts['node'], annotations: Record<string, string>): QuarantineFacts['node'] {
  return { ...n, annotations: { ...n.annotations, ...annotations } };
}

interface Case {
  node: QuarantineFacts['node'];
  pods: PresentPod[];
  /** Since the quarantine began. */
  afterMs: number;
  retryMs?: number;
  held: boolean;
  reason: RegExp;
}

const cases: [string, Case][] = [
  [
    'a node without the label is not held, whatever its record says',
    { node: node(quarantined, false), pods: stillThere, afterMs: 0, held: false, reason: /not quarantined/ },
  ],
  [
    'holds while the pod that stopped the drain is still there, naming it and the retry',
    {
      node: node(quarantined),
      pods: stillThere,
      afterMs: 30 * 60_000,
      held: true,
      reason:
        /batch\/stuck \(still terminating at --drain-timeout\); passed over until these pods change or at 2026-01-05T11:00:00.000Z/,
    },
  ],
  [
    'lets it go once that pod is gone',
    {
      node: node(quarantined),
      pods: [],
      afterMs: 0,
      held: false,
      reason: /pods changed \(batch\/stuck .* gone\)/,
    },
  ],
  [
    'lets it go once that pod is replaced by another of the same name (another UID)',
    {
      node: node(quarantined),
      pods: [{ pod: 'batch/stuck', uid: 'u2' }],
      afterMs: 0,
      held: false,
      reason: /pods changed/,
    },
  ],
  [
    'lets it go once --quarantine-retry has passed, though the pod stayed',
    {
      node: node(quarantined),
      pods: stillThere,
      afterMs: HOUR,
      held: false,
      reason: /--quarantine-retry 1h00m passed/,
    },
  ],
  [
    'with --quarantine-retry 0 holds for as long as the pod stays',
    {
      node: node(quarantined),
      pods: stillThere,
      afterMs: 30 * 24 * HOUR,
      retryMs: 0,
      held: true,
      reason: /until these pods change$/,
    },
  ],
  [
    'holds a label without a record until the label goes (an operator quarantined it by hand)',
    {
      node: node(undefined),
      pods: [],
      afterMs: 0,
      held: true,
      reason: /without a readable kured-ts.dev\/quarantine record/,
    },
  ],
  [
    'holds a node whose hold after the drain outlasted --hold-timeout while that annotation stands (no pod to change)',
    {
      node: withHold(node(heldPastTimeout), { 'backup.example/running': 'yes' }),
      pods: [],
      afterMs: 0,
      held: true,
      reason:
        /held after the drain past --hold-timeout by backup.example\/running; passed over until the annotation goes/,
    },
  ],
  [
    'lets such a node go once the hold annotation is gone',
    {
      node: node(heldPastTimeout),
      pods: [],
      afterMs: 0,
      held: false,
      reason: /hold annotations .* are gone/,
    },
  ],
  [
    'lets such a node go once --quarantine-retry has passed, though the annotation stands',
    {
      node: withHold(node(heldPastTimeout), { 'backup.example/running': 'yes' }),
      pods: [],
      afterMs: HOUR,
      held: false,
      reason: /--quarantine-retry 1h00m passed/,
    },
  ],
  [
    'holds a label with an unreadable record the same way',
    { node: node('garbage'), pods: [], afterMs: 0, held: true, reason: /remove the label to release it/ },
  ],
];

describe('judgeQuarantine', () => {
  it.each(cases)('%s', (_name, c) => {
    const now = new Date(Date.parse(SINCE) + c.afterMs);
    const verdict = judgeQuarantine({ node: c.node, pods: c.pods, now, retryMs: c.retryMs ?? HOUR });
    expect(verdict.held).toBe(c.held);
    expect(verdict.reason).toMatch(c.reason);
  });
});

describe('the quarantine record', () => {
  it('reads back what it wrote, and nothing from a value without its time or pods', () => {
    expect(parseQuarantine(formatQuarantine({ ...quarantined, cordoned: true }))).toEqual({
      ...quarantined,
      cordoned: true,
    });
    expect(parseQuarantine('{"since":"yesterday","pods":[]}')).toBeUndefined();
    expect(parseQuarantine('{"since":"2026-01-05T10:00:00Z"}')).toBeUndefined();
    expect(parseQuarantine(undefined)).toBeUndefined();
  });
});
