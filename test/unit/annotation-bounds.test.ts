// Issue 55, item 2: every node annotation the agent writes is bounded by its writer. The history
// keeps its latest entries that fit, the quarantine record names at most so many pods and volumes,
// and KubeNodeOps refuses a write over a bound, naming it, before a request is sent (the admission
// policy's side: test/integration/admission/admission-policy.test.ts).
import { describe, expect, it } from '@jest/globals';
import { ANNOTATION_MAX_BYTES, overBound } from '../../src/node/annotation-bounds.js';
import {
  HISTORY_ANNOTATION,
  historyAnnotations,
  parseHistory,
  type HistoryRecord,
} from '../../src/node/history.js';
import { KubeNodeOps } from '../../src/node/kube-node-ops.js';
import { QUARANTINE_ANNOTATION, formatQuarantine } from '../../src/node/quarantine.js';
import { STATUS_ANNOTATION } from '../../src/node/status.js';
import { MemoryLogger } from '../../src/log/logger.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { FakeKube } from '../fakes/fake-kube.js';

function entry(n: number, reasonChars = 0): HistoryRecord {
  return {
    result: 'success',
    bootIDBefore: `boot-${String(n)}`,
    bootIDAfter: `boot-${String(n + 1)}`,
    kernelBefore: '6.1.0-1',
    kernelAfter: '6.1.0-2',
    osImageBefore: 'Debian GNU/Linux 12',
    osImageAfter: 'Debian GNU/Linux 12',
    lockedAt: '2026-01-05T10:00:00.000Z',
    endedAt: '2026-01-05T10:10:00.000Z',
    ...(reasonChars > 0 ? { requestReason: 'r'.repeat(reasonChars) } : {}),
  };
}

describe('the writers keep their annotations within the bounds', () => {
  it('the history keeps --history-limit 100 entries of a usual size within its bound', () => {
    let annotations: Record<string, string> = {};
    for (let n = 0; n < 120; n++) annotations = historyAnnotations(annotations, entry(n), 100);
    const raw = annotations[HISTORY_ANNOTATION]!;
    expect(parseHistory(raw)).toHaveLength(100);
    expect(overBound({ [HISTORY_ANNOTATION]: raw })).toBeUndefined();
  });

  it('the history drops its oldest entries when large ones would not fit, keeping the newest', () => {
    let annotations: Record<string, string> = {};
    for (let n = 0; n < 40; n++) annotations = historyAnnotations(annotations, entry(n, 2_000), 100);
    const kept = parseHistory(annotations[HISTORY_ANNOTATION]);
    expect(kept.length).toBeLessThan(40);
    expect(kept.at(-1)?.bootIDBefore).toBe('boot-39');
    expect(Buffer.byteLength(annotations[HISTORY_ANNOTATION]!)).toBeLessThanOrEqual(
      ANNOTATION_MAX_BYTES[HISTORY_ANNOTATION]!,
    );
  });

  it('the quarantine record names at most 32 pods, each reason cut short, and says how many more', () => {
    const pods = Array.from({ length: 500 }, (_, i) => ({
      pod: `default/web-${String(i)}`,
      reason: 'x'.repeat(2_000),
    }));
    const volumes = Array.from({ length: 300 }, (_, i) => `kubernetes.io/csi/driver^pvc-${String(i)}`);
    const raw = formatQuarantine({ since: '2026-01-05T10:00:00.000Z', pods, cordoned: false, volumes });
    const record = JSON.parse(raw) as { pods: { reason: string }[]; podsNotNamed: number; volumes: string[] };
    expect(record.pods).toHaveLength(32);
    expect(record.podsNotNamed).toBe(468);
    expect(record.pods[0]?.reason).toHaveLength(256);
    expect(record.volumes).toHaveLength(64);
    expect(overBound({ [QUARANTINE_ANNOTATION]: raw })).toBeUndefined();
  });
});

describe('KubeNodeOps refuses a write over a bound', () => {
  it('names the annotation, its size and its bound, and sends no request', async () => {
    const kube = new FakeKube();
    let sent = 0;
    kube.mergePatchNode = () => {
      sent++;
      return Promise.reject(new Error('not expected'));
    };
    const ops = new KubeNodeOps({ kube, nodeId: 'n1', clock: new FakeClock(), log: new MemoryLogger() });
    await expect(ops.write({ annotations: { [STATUS_ANNOTATION]: 'x'.repeat(200_000) } })).rejects.toThrow(
      'cannot write node n1: annotation kured-ts.dev/status of 200000 bytes is over its bound of 4096 bytes: not written',
    );
    expect(sent).toBe(0);
  });

  it('counts bytes, not characters, and lets a removal (null) through', () => {
    expect(overBound({ [STATUS_ANNOTATION]: '€'.repeat(1_400) })).toContain('of 4200 bytes');
    expect(overBound({ [STATUS_ANNOTATION]: null, 'example.com/x': 'y' })).toBeUndefined();
  });
});
