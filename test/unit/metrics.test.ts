import { describe, expect, it } from '@jest/globals';
import { PHASES } from '../../src/node/status.js';
import { PrometheusMetrics } from '../../src/metrics/prometheus-metrics.js';
import { samples } from '../fakes/metric-samples.js';

/** Sample lines of the exposition: `name{labels}` → value (HELP/TYPE lines dropped). */
function fresh(): PrometheusMetrics {
  return new PrometheusMetrics('n1', { processMetrics: false });
}

describe('PrometheusMetrics', () => {
  it('exposes every series at its resting value before anything happens', async () => {
    const s = await samples(fresh());
    expect(s.get('kured_reboot_required{node="n1"}')).toBe(0);
    expect(s.get('kured_ts_phase{node="n1",phase="idle"}')).toBe(1);
    expect(s.get('kured_ts_lock_held{node="n1"}')).toBe(0);
    expect(s.get('kured_ts_lock_stalled_seconds{node="n1"}')).toBe(0);
    for (const blocker of ['pause', 'prometheus', 'pods', 'pdb'])
      expect(s.get(`kured_ts_blocked{node="n1",blocker="${blocker}"}`)).toBe(0);
    for (const result of ['evicted', 'refused', 'failed'])
      expect(s.get(`kured_ts_evictions_total{result="${result}"}`)).toBe(0);
    for (const result of ['success', 'failed', 'aborted', 'timeout'])
      expect(s.get(`kured_ts_reboots_total{result="${result}"}`)).toBe(0);
    expect(s.get('kured_ts_sentinel_errors_total')).toBe(0);
    expect(s.get('kured_ts_drain_duration_seconds_count')).toBe(0);
    expect(s.get('kured_ts_reboot_duration_seconds_count')).toBe(0);
  });

  it('reads how long the lock has stalled at each scrape, from the time it was told, until told it ended', async () => {
    let now = 1_000;
    const m = new PrometheusMetrics('n1', { processMetrics: false, monotonicMs: () => now });
    m.setLockStalledSince(1_000);
    now = 61_000;
    expect((await samples(m)).get('kured_ts_lock_stalled_seconds{node="n1"}')).toBe(60);
    now = 3_601_000;
    expect((await samples(m)).get('kured_ts_lock_stalled_seconds{node="n1"}')).toBe(3600);
    m.setLockStalledSince(undefined);
    expect((await samples(m)).get('kured_ts_lock_stalled_seconds{node="n1"}')).toBe(0);
  });

  it("reads each view's age at each scrape, and shows no series for a view not followed", async () => {
    const m = fresh();
    let ages: { view: 'node' | 'pods' | 'lock'; seconds: number | undefined }[] = [
      { view: 'node', seconds: 12 },
    ];
    m.followViews(() => ages);
    expect((await samples(m)).get('kured_ts_view_age_seconds{node="n1",view="node"}')).toBe(12);
    ages = [
      { view: 'node', seconds: 95 },
      { view: 'pods', seconds: undefined },
    ];
    const s = await samples(m);
    expect(s.get('kured_ts_view_age_seconds{node="n1",view="node"}')).toBe(95);
    expect(s.has('kured_ts_view_age_seconds{node="n1",view="pods"}')).toBe(false);
  });

  it('reads the age of the reboot need and whether it is overdue at each scrape, from the wall clock', async () => {
    let now = 0;
    const m = new PrometheusMetrics('n1', { processMetrics: false, nowMs: () => now });
    const read = async (): Promise<[number | undefined, number | undefined]> => {
      const s = await samples(m);
      return [
        s.get('kured_ts_reboot_required_seconds{node="n1"}'),
        s.get('kured_ts_reboot_overdue{node="n1"}'),
      ];
    };
    expect(await read()).toEqual([0, 0]);
    m.setRebootNeed({ sinceMs: 1_000, dueMs: 7_201_000 });
    now = 3_601_000;
    expect(await read()).toEqual([3600, 0]);
    now = 7_201_000;
    expect(await read()).toEqual([7200, 0]); // due, not past it
    now = 7_201_001;
    expect((await read())[1]).toBe(1);
    m.setRebootNeed({ sinceMs: 1_000, dueMs: undefined }); // no deadline
    expect((await read())[1]).toBe(0);
    m.setRebootNeed(undefined);
    expect(await read()).toEqual([0, 0]);
  });

  it('reports exactly one phase at a time through a scripted cycle', async () => {
    const m = fresh();
    for (const phase of [
      'pending',
      'waiting-for-lock',
      'draining',
      'rebooting',
      'verifying',
      'idle',
    ] as const) {
      m.setPhase(phase);
      const s = await samples(m);
      for (const p of PHASES)
        expect(s.get(`kured_ts_phase{node="n1",phase="${p}"}`)).toBe(p === phase ? 1 : 0);
    }
  });

  it('records the values of a scripted successful cycle', async () => {
    const m = fresh();
    m.setRebootRequired(true);
    m.setBlocked('prometheus');
    m.setBlocked(undefined);
    m.setLockHeld(true);
    m.countEvictions('evicted', 5);
    m.countEvictions('refused', 2);
    m.countEvictions('evicted', 1);
    m.countEvictions('failed', 0);
    m.observeDrain(42);
    m.observeReboot(400);
    m.setLockHeld(false);
    m.setRebootRequired(false);
    m.countReboot('success');
    const s = await samples(m);
    expect(s.get('kured_reboot_required{node="n1"}')).toBe(0);
    expect(s.get('kured_ts_lock_held{node="n1"}')).toBe(0);
    expect(s.get('kured_ts_blocked{node="n1",blocker="prometheus"}')).toBe(0);
    expect(s.get('kured_ts_evictions_total{result="evicted"}')).toBe(6);
    expect(s.get('kured_ts_evictions_total{result="refused"}')).toBe(2);
    expect(s.get('kured_ts_evictions_total{result="failed"}')).toBe(0);
    expect(s.get('kured_ts_drain_duration_seconds_count')).toBe(1);
    expect(s.get('kured_ts_drain_duration_seconds_sum')).toBe(42);
    expect(s.get('kured_ts_drain_duration_seconds_bucket{le="30"}')).toBe(0);
    expect(s.get('kured_ts_drain_duration_seconds_bucket{le="60"}')).toBe(1);
    expect(s.get('kured_ts_reboot_duration_seconds_bucket{le="300"}')).toBe(0);
    expect(s.get('kured_ts_reboot_duration_seconds_bucket{le="450"}')).toBe(1);
    expect(s.get('kured_ts_reboots_total{result="success"}')).toBe(1);
    expect(s.get('kured_ts_reboots_total{result="failed"}')).toBe(0);
  });

  it.each([
    ['marks only pods as blocking when pods block', 'pods', { pause: 0, prometheus: 0, pods: 1, pdb: 0 }],
    ['marks only pdb as blocking when a PDB blocks', 'pdb', { pause: 0, prometheus: 0, pods: 0, pdb: 1 }],
    ['clears every blocker when nothing blocks', undefined, { pause: 0, prometheus: 0, pods: 0, pdb: 0 }],
  ] as const)('%s', async (_name, blocker, expected) => {
    const m = fresh();
    m.setBlocked('pause');
    m.setBlocked(blocker);
    const s = await samples(m);
    for (const [name, value] of Object.entries(expected))
      expect(s.get(`kured_ts_blocked{node="n1",blocker="${name}"}`)).toBe(value);
  });

  it('adds a series for a blocker it was not told about and clears it later', async () => {
    const m = fresh();
    m.setBlocked('custom');
    expect((await samples(m)).get('kured_ts_blocked{node="n1",blocker="custom"}')).toBe(1);
    m.setBlocked('pods');
    const s = await samples(m);
    expect(s.get('kured_ts_blocked{node="n1",blocker="custom"}')).toBe(0);
    expect(s.get('kured_ts_blocked{node="n1",blocker="pods"}')).toBe(1);
  });

  it('counts failed and aborted reboots and sentinel errors separately', async () => {
    const m = fresh();
    m.countReboot('failed');
    m.countReboot('failed');
    m.countReboot('aborted');
    m.countSentinelError();
    const s = await samples(m);
    expect(s.get('kured_ts_reboots_total{result="failed"}')).toBe(2);
    expect(s.get('kured_ts_reboots_total{result="aborted"}')).toBe(1);
    expect(s.get('kured_ts_reboots_total{result="success"}')).toBe(0);
    expect(s.get('kured_ts_sentinel_errors_total')).toBe(1);
  });

  it('keeps two agents in one process apart', async () => {
    const a = new PrometheusMetrics('a', { processMetrics: false });
    const b = new PrometheusMetrics('b', { processMetrics: false });
    a.setRebootRequired(true);
    b.countReboot('success');
    const sa = await samples(a);
    const sb = await samples(b);
    expect(sa.get('kured_reboot_required{node="a"}')).toBe(1);
    expect(sb.get('kured_reboot_required{node="b"}')).toBe(0);
    expect(sa.has('kured_reboot_required{node="b"}')).toBe(false);
    expect(sa.get('kured_ts_reboots_total{result="success"}')).toBe(0);
    expect(sb.get('kured_ts_reboots_total{result="success"}')).toBe(1);
  });

  it('includes process metrics when asked and in two registries at once', async () => {
    const a = new PrometheusMetrics('a');
    const b = new PrometheusMetrics('b');
    expect(await a.metrics()).toContain('process_cpu_seconds_total');
    expect(await b.metrics()).toContain('nodejs_heap_size_total_bytes');
  });

  it('remembers the last heartbeat', () => {
    const m = fresh();
    expect(m.lastHeartbeat()).toBeUndefined();
    m.heartbeat(new Date('2026-01-05T10:00:00Z'));
    expect(m.lastHeartbeat()?.toISOString()).toBe('2026-01-05T10:00:00.000Z');
  });
});
