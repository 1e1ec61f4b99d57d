// Issue 46: the quarantine record says which kind of failure put the node there, and whoever reads
// it (the agent's quarantine blocker, `check`, `status`) says so.
import { describe, expect, it } from '@jest/globals';
import {
  QUARANTINE_ANNOTATION,
  QUARANTINE_LABEL,
  formatQuarantine,
  judgeQuarantine,
  parseQuarantine,
  quarantineKindOf,
  type PodFailure,
  type QuarantineKind,
  type QuarantineRecord,
} from '../../src/node/quarantine.js';
import { buildStatus } from '../../src/cli/status.js';
import { formatStatus } from '../../src/cli/status-table.js';
import type { V1Node } from '../../src/kube/kube.js';

const SINCE = '2026-01-05T10:00:00.000Z';
const STUCK = {
  pod: 'default/web-1',
  uid: 'u1',
  reason: 'eviction of default/web-1 denied by admission webhook guard: no',
};

function record(kind?: QuarantineKind): QuarantineRecord {
  return { since: SINCE, ...(kind === undefined ? {} : { kind }), pods: [STUCK], cordoned: false };
}

describe('the kind of failure a quarantine records', () => {
  it.each<[string, (PodFailure | undefined)[], QuarantineKind | undefined]>([
    [
      'a denial is the kind when one pod was denied and another stuck terminating',
      ['still-terminating', 'eviction-denied'],
      'eviction-denied',
    ],
    [
      "a budget's refusal is the kind when the others only met the API server's failures",
      ['api-server', 'disruption-budget', undefined],
      'disruption-budget',
    ],
    [
      'there is none when only the API server failed (that quarantines nothing)',
      ['api-server', undefined],
      undefined,
    ],
    [
      'a drain label not understood comes before anything else',
      ['eviction-rejected', 'drain-label'],
      'drain-label',
    ],
  ])('%s', (_name, failures, kind) => {
    expect(quarantineKindOf(failures)).toBe(kind);
  });

  it('is read back as written, and a kind it does not know is left out (an older or a forged record)', () => {
    expect(parseQuarantine(formatQuarantine(record('eviction-denied')))).toEqual(record('eviction-denied'));
    const unknown = JSON.stringify({ ...record(), kind: 'api-server' });
    expect(parseQuarantine(unknown)).toEqual(record());
  });

  it.each<[string, QuarantineKind | undefined, RegExp]>([
    [
      'names an eviction denied by admission',
      'eviction-denied',
      /^quarantined since \S+ for an eviction denied by admission: the drain failed on default\/web-1/,
    ],
    [
      'names a pod still terminating',
      'still-terminating',
      /^quarantined since \S+ for a pod still terminating: /,
    ],
    [
      'says nothing of a kind a record written before kured-ts recorded it does not have',
      undefined,
      /^quarantined since \S+: the drain failed on/,
    ],
  ])('in the reason the quarantine holds a node back with (status, check), %s', (_name, kind, reason) => {
    const node = {
      labels: { [QUARANTINE_LABEL]: 'drain-failed' },
      annotations: { [QUARANTINE_ANNOTATION]: formatQuarantine(record(kind)) },
    };
    const verdict = judgeQuarantine({
      node,
      pods: [{ pod: 'default/web-1', uid: 'u1' }],
      now: new Date(SINCE),
      retryMs: 0,
    });
    expect(verdict).toMatchObject({ held: true });
    expect(verdict.reason).toMatch(reason);
  });

  it('is in `kured-ts status`: its JSON, and the table when the status reason does not say it already', () => {
    const node: V1Node = {
      metadata: {
        name: 'n1',
        labels: { [QUARANTINE_LABEL]: 'drain-failed' },
        annotations: {
          [QUARANTINE_ANNOTATION]: formatQuarantine(record('disruption-budget')),
          'kured-ts.dev/status': JSON.stringify({
            phase: 'pending',
            reason: 'reboot required',
            since: SINCE,
          }),
        },
      },
    };
    const options = { dsNamespace: 'kube-system', dsName: 'kured', lockAnnotation: 'lock', lockTtlMs: 0 };
    const report = buildStatus(
      options,
      { ds: { metadata: { name: 'kured' } }, nodes: [node] },
      Date.parse(SINCE),
    );
    expect(report.nodes[0]?.quarantine).toEqual({
      since: SINCE,
      kind: 'disruption-budget',
      pods: ['default/web-1'],
    });
    expect(formatStatus(report, 'wide').join('\n')).toContain(
      '[quarantined for a PodDisruptionBudget that allowed no eviction] reboot required',
    );
  });
});
