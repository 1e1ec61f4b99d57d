// Reporter (src/agent/report.ts): the one place that decides to skip an unchanged status write.
import { describe, expect, it } from '@jest/globals';
import { Reporter } from '../../src/agent/report.js';
import { MemoryLogger } from '../../src/log/logger.js';
import { STATUS_ANNOTATION, formatStatus } from '../../src/node/status.js';
import { RecordingMetrics } from '../fakes/fake-cluster.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { FakeNode, newNodeRecord } from '../fakes/fake-node.js';

function setup(): { reporter: Reporter; node: FakeNode; clock: FakeClock; metrics: RecordingMetrics } {
  const clock = new FakeClock();
  const node = new FakeNode(newNodeRecord('n1'));
  const metrics = new RecordingMetrics();
  const reporter = new Reporter('n1', {
    node,
    events: { record: () => Promise.resolve() },
    metrics,
    logger: new MemoryLogger(),
    clock,
  });
  return { reporter, node, clock, metrics };
}

describe('Reporter', () => {
  it('writes the status when it says something new, and not when only the time would change', async () => {
    const { reporter, node, clock } = setup();
    await reporter.report({ kind: 'blocked', reason: 'alert A firing', blocker: 'prometheus' }, undefined);
    await clock.advance(60_000);
    await reporter.report({ kind: 'blocked', reason: 'alert A firing', blocker: 'prometheus' }, undefined);
    expect(node.record.statuses).toHaveLength(1);
    await reporter.report({ kind: 'blocked', reason: 'alert B firing', blocker: 'prometheus' }, undefined);
    expect(node.record.statuses.map((s) => s.reason)).toEqual(['alert A firing', 'alert B firing']);
  });

  it('skips the write when the node as read already says the same (a restarted agent)', async () => {
    const { reporter, node } = setup();
    const status = {
      phase: 'idle' as const,
      reason: 'reboot not required',
      since: 'earlier',
      bootID: 'boot-1',
    };
    node.record.annotations[STATUS_ANNOTATION] = formatStatus(status);
    reporter.noteNode(await node.get());
    await reporter.report({ kind: 'idle', reason: 'reboot not required' }, undefined);
    expect(node.record.statuses).toEqual([]);
  });

  it('writes again after someone else deleted the status annotation', async () => {
    const { reporter, node } = setup();
    await reporter.report({ kind: 'idle', reason: 'reboot not required' }, undefined);
    node.record.annotations = {};
    reporter.noteNode(await node.get());
    await reporter.report({ kind: 'idle', reason: 'reboot not required' }, undefined);
    expect(node.record.statuses).toHaveLength(2);
  });

  it('times a stalled lock from when the same nodes started holding it, and restarts for a new holder', async () => {
    const { reporter, clock, metrics } = setup();
    const wait = (holders: string[]): Promise<void> =>
      reporter.report({ kind: 'waiting-for-lock', reason: 'all slots held', holders }, undefined);
    const t0 = clock.now().getTime();
    await wait(['n2', 'manual']);
    await clock.advance(3_600_000);
    await wait(['manual', 'n2']); // the same holders in another order: still the same stall
    await reporter.report({ kind: 'error', reason: 'API unreachable' }, undefined);
    expect(metrics.lockStalledSince).toBe(t0);
    await wait(['n3']);
    expect(metrics.lockStalledSince).toBe(t0 + 3_600_000);
    await reporter.report({ kind: 'blocked', reason: 'alert firing', blocker: 'prometheus' }, undefined);
    expect(metrics.lockStalledSince).toBeUndefined();
  });
});
