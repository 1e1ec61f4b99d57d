// Reporter (src/agent/report.ts): the one place that decides to skip an unchanged status write.
import { describe, expect, it } from '@jest/globals';
import type { Outcome } from '../../src/agent/outcome.js';
import { Reporter, type ReporterOptions } from '../../src/agent/report.js';
import { MemoryLogger } from '../../src/log/logger.js';
import { STATUS_ANNOTATION, formatStatus } from '../../src/node/status.js';
import { RecordingMetrics } from '../fakes/fake-cluster.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { FakeNode, newNodeRecord } from '../fakes/fake-node.js';

interface Setup {
  reporter: Reporter;
  node: FakeNode;
  clock: FakeClock;
  metrics: RecordingMetrics;
  events: [string, string, string | undefined][];
  /** A new Reporter over the same node and clock: the agent restarted. */
  restart: () => Reporter;
}

function setup(options: ReporterOptions = { deadlineMs: 0, periodMs: 3_600_000 }): Setup {
  const clock = new FakeClock();
  const node = new FakeNode(newNodeRecord('n1'));
  const metrics = new RecordingMetrics();
  const events: [string, string, string | undefined][] = [];
  const make = (): Reporter =>
    new Reporter(
      'n1',
      {
        node,
        events: {
          record: (reason, message, type) => {
            events.push([reason, message, type]);
            return Promise.resolve();
          },
        },
        metrics,
        logger: new MemoryLogger(),
        clock,
      },
      options,
    );
  return { reporter: make(), node, clock, metrics, events, restart: make };
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

  it('reports a configuration error once: its repeats, each after the pass said pending, record no Event and no status', async () => {
    const { reporter, node, events } = setup();
    const error = (reason: string): Outcome => ({
      kind: 'misconfigured',
      reason,
      policy: 'kured-ts-agent-eviction',
      options: ['--drain-grace-period'],
    });
    for (const reason of ['denied A', 'denied A', 'denied A', 'denied B']) {
      await reporter.report({ kind: 'pending', reason: 'reboot required' }, undefined);
      await reporter.report(error(reason), undefined);
    }
    const warnings = events.filter(([, , type]) => type === 'Warning');
    expect(warnings).toEqual([
      ['ConfigurationError', 'denied A', 'Warning'],
      ['ConfigurationError', 'denied B', 'Warning'],
    ]);
    expect(node.record.statuses.map((s) => [s.phase, s.reason, s.deniedBy])).toEqual([
      ['failed', 'denied A', 'kured-ts-agent-eviction'],
      ['failed', 'denied B', 'kured-ts-agent-eviction'],
    ]);
    // after anything else, the same error again is news
    await reporter.report({ kind: 'idle', reason: 'reboot not required' }, undefined);
    await reporter.report(error('denied B'), undefined);
    expect(events.filter(([, , type]) => type === 'Warning')).toHaveLength(3);
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

  describe('how long the reboot has been required (--reboot-deadline)', () => {
    const HOUR = 3_600_000;
    const pending = { kind: 'pending', reason: 'reboot required' } as const;
    const blocked = { kind: 'blocked', reason: 'alert A firing', blocker: 'prometheus' } as const;

    it('counts from when the need was first seen, across phases and an agent restart, until the reboot is done', async () => {
      const { reporter, node, clock, restart } = setup();
      const t0 = clock.now().toISOString();
      await reporter.report(pending, undefined);
      await clock.advance(HOUR);
      await reporter.report(blocked, undefined);
      await reporter.report({ kind: 'outside-window', reason: 'window opens at 22:00' }, undefined);
      const again = restart();
      again.noteNode(await node.get());
      await clock.advance(HOUR);
      await again.report({ kind: 'waiting-for-lock', reason: 'all slots held', holders: ['n2'] }, undefined);
      await again.report(
        { kind: 'completed', reason: 'rebooted', durationMs: 1, uncordoned: true },
        undefined,
      );
      await clock.advance(HOUR);
      await again.report(pending, undefined);
      await again.report(blocked, undefined);
      expect(node.record.statuses.map((s) => [s.phase, s.requiredSince])).toEqual([
        ['blocked', t0],
        ['outside-window', t0],
        ['waiting-for-lock', t0],
        ['completed', undefined],
        ['blocked', clock.now().toISOString()],
      ]);
      expect(node.record.statuses.every((s) => s.due === undefined)).toBe(true);
    });

    it('records when it is due, and says once per period that it is overdue, with the age and the reason', async () => {
      const { reporter, node, clock, events: all, metrics } = setup({ deadlineMs: 2 * HOUR, periodMs: HOUR });
      const events = {
        get overdue() {
          return all.filter((e) => e[0] === 'RebootOverdue');
        },
      };
      const t0 = clock.now().getTime();
      await reporter.report(pending, undefined);
      await reporter.report(blocked, undefined);
      expect(node.record.statuses[0]?.due).toBe(new Date(t0 + 2 * HOUR).toISOString());
      expect(metrics.rebootNeed).toEqual({ sinceMs: t0, dueMs: t0 + 2 * HOUR });
      await clock.advance(2 * HOUR);
      await reporter.report(blocked, undefined);
      expect(events.overdue).toEqual([]); // due, not past it
      await clock.advance(HOUR);
      await reporter.report(blocked, undefined);
      await clock.advance(HOUR / 2);
      await reporter.report(blocked, undefined);
      expect(events.overdue).toEqual([
        [
          'RebootOverdue',
          'reboot required for 3h00m, past the deadline of 2h00m: blocked: alert A firing',
          'Warning',
        ],
      ]);
      await clock.advance(HOUR / 2);
      await reporter.report(blocked, undefined);
      expect(events.overdue.map((e) => e[1])).toEqual([
        'reboot required for 3h00m, past the deadline of 2h00m: blocked: alert A firing',
        'reboot required for 4h00m, past the deadline of 2h00m: blocked: alert A firing',
      ]);
      await reporter.report({ kind: 'idle', reason: 'reboot not required' }, undefined);
      expect(metrics.rebootNeed).toBeUndefined();
    });

    it('says nothing of a deadline when there is none', async () => {
      const { reporter, clock, events, metrics } = setup();
      const overdue = (): unknown[] => events.filter((e) => e[0] === 'RebootOverdue');
      await reporter.report(pending, undefined);
      await clock.advance(1000 * HOUR);
      await reporter.report(blocked, undefined);
      expect(overdue()).toEqual([]);
      expect(metrics.rebootNeed?.dueMs).toBeUndefined();
    });
  });
});

describe('a status write of a node waiting for its turn (issue 55: at most one per 30 s for a reason alone)', () => {
  const waiting = (
    reason: string,
    extra: Partial<Extract<Outcome, { kind: 'waiting-for-lock' }>> = {},
  ): Outcome => ({
    kind: 'waiting-for-lock',
    reason,
    holders: ['n2'],
    wait: { for: 'turn' },
    ...extra,
  });

  it('defers a change of the reason alone within 30 s, and writes the latest one when due while the agent waits', async () => {
    const { reporter, node, clock } = setup();
    await reporter.report(waiting('advice: a'), undefined);
    await clock.advance(5_000);
    await reporter.report(waiting('advice: b'), undefined);
    await clock.advance(5_000);
    await reporter.report(waiting('advice: c'), undefined);
    expect(node.record.statuses.map((s) => s.reason)).toEqual(['advice: a']);
    expect(reporter.deferredInMs()).toBe(20_000);
    const controller = new AbortController();
    const wait = clock.sleep(60_000, controller.signal).catch(() => undefined);
    const flushing = reporter.flushingWhile(controller.signal, () => wait);
    await clock.advance(19_000);
    expect(node.record.statuses.map((s) => s.reason)).toEqual(['advice: a']);
    await clock.advance(1_000);
    await clock.advance(0);
    expect(node.record.statuses.map((s) => s.reason)).toEqual(['advice: a', 'advice: c']);
    controller.abort();
    await flushing;
  });

  it.each<[string, Outcome]>([
    ['a change of phase', { kind: 'blocked', reason: 'alert firing', blocker: 'prometheus' }],
    [
      "the reason of a wait that is not for the coordinator's turn (a FleetLock server failing)",
      { kind: 'waiting-for-lock', reason: 'fleetlock: internal_error: boom', holders: [], fleetLock: true },
    ],
    [
      'a change of another field (the FleetLock server said full)',
      waiting('advice: b', { fleetLockFull: true }),
    ],
  ])('writes %s at once', async (_name, next) => {
    const { reporter, node, clock } = setup();
    await reporter.report(waiting('advice: a'), undefined);
    await clock.advance(1_000);
    await reporter.report(next, undefined);
    expect(node.record.statuses).toHaveLength(2);
  });

  it('writes a reason change at once 30 s after the last write', async () => {
    const { reporter, node, clock } = setup();
    await reporter.report(waiting('advice: a'), undefined);
    await clock.advance(30_000);
    await reporter.report(waiting('advice: b'), undefined);
    expect(node.record.statuses.map((s) => s.reason)).toEqual(['advice: a', 'advice: b']);
  });

  it('gives the deferred write up when the wait ends first (the next pass reports anew)', async () => {
    const { reporter, node, clock } = setup();
    await reporter.report(waiting('advice: a'), undefined);
    await clock.advance(1_000);
    await reporter.report(waiting('advice: b'), undefined);
    const controller = new AbortController();
    await reporter.flushingWhile(controller.signal, () => clock.advance(2_000));
    await clock.advance(60_000);
    expect(node.record.statuses.map((s) => s.reason)).toEqual(['advice: a']);
  });
});
