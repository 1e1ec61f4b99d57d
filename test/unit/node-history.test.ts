// The reboot history's assembly (src/node/history.ts): one finished cycle as a record, appended
// within --history-limit.
import { describe, expect, it } from '@jest/globals';
import type { CycleRecord } from '../../src/node/cycle.js';
import {
  HISTORY_ANNOTATION,
  cycleHistoryRecord,
  historyAnnotations,
  parseHistory,
} from '../../src/node/history.js';

const record: CycleRecord = {
  bootID: 'boot-1',
  cordoned: true,
  attempts: 1,
  started: '2026-01-05T10:00:00.000Z',
  kernel: '6.1.0-1',
  osImage: 'Debian 12',
  requiredAt: '2026-01-05T09:00:00.000Z',
  drainedAt: '2026-01-05T10:05:00.000Z',
  rebootRequestedAt: '2026-01-05T10:06:00.000Z',
  verifyingSince: '2026-01-05T10:09:00.000Z',
};
const node = { bootID: 'boot-2', kernelVersion: '6.1.0-2', osImage: 'Debian 12' };

describe('the reboot history', () => {
  it('puts before and after side by side, with every time the cycle record kept', () => {
    expect(cycleHistoryRecord(node, record, 'success', '2026-01-05T10:10:00.000Z')).toEqual({
      result: 'success',
      bootIDBefore: 'boot-1',
      bootIDAfter: 'boot-2',
      kernelBefore: '6.1.0-1',
      kernelAfter: '6.1.0-2',
      osImageBefore: 'Debian 12',
      osImageAfter: 'Debian 12',
      lockedAt: '2026-01-05T10:00:00.000Z',
      endedAt: '2026-01-05T10:10:00.000Z',
      requiredAt: '2026-01-05T09:00:00.000Z',
      drainedAt: '2026-01-05T10:05:00.000Z',
      rebootRequestedAt: '2026-01-05T10:06:00.000Z',
      upAt: '2026-01-05T10:09:00.000Z',
    });
  });

  it('leaves out the times a cycle that ended early never reached', () => {
    const early: CycleRecord = { bootID: 'boot-1', cordoned: true, attempts: 0, started: record.started };
    const entry = cycleHistoryRecord(node, early, 'drain-failed', '2026-01-05T10:01:00.000Z');
    expect(Object.keys(entry)).not.toEqual(expect.arrayContaining(['drainedAt', 'upAt', 'requiredAt']));
    expect(entry.kernelBefore).toBe('');
  });

  it.each([
    ['keeps the last --history-limit records', 2, 2],
    ['writes nothing with --history-limit 0', 0, 0],
  ])('%s', (_name, limit, kept) => {
    let annotations: Record<string, string> = {};
    for (const end of ['10:10', '11:10', '12:10']) {
      const entry = cycleHistoryRecord(node, record, 'success', `2026-01-05T${end}:00.000Z`);
      annotations = { ...annotations, ...historyAnnotations(annotations, entry, limit) };
    }
    const history = parseHistory(annotations[HISTORY_ANNOTATION]);
    expect(history).toHaveLength(kept);
    if (kept > 0) expect(history.at(-1)?.endedAt).toBe('2026-01-05T12:10:00.000Z');
  });
});
