// The agent's cycle as Prometheus sees it: the real Agent over the in-memory FakeCluster, reporting
// into a real PrometheusMetrics, scraped as text after each scripted step.
import { describe, expect, it } from '@jest/globals';
import { Agent, type AgentConfig, type Outcome } from '../../src/agent/agent.js';
import { PrometheusMetrics } from '../../src/metrics/prometheus-metrics.js';
import { AGENT_DEFAULTS, FakeBlocker, FakeCluster, settle } from '../fakes/fake-cluster.js';

async function scrape(metrics: PrometheusMetrics): Promise<Map<string, number>> {
  const samples = new Map<string, number>();
  for (const line of (await metrics.metrics()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

function currentPhase(samples: Map<string, number>): string[] {
  return [...samples.entries()]
    .filter(([k, v]) => k.startsWith('kured_ts_phase{') && v === 1)
    .map(([k]) => /phase="([^"]+)"/.exec(k)?.[1] ?? '');
}

function setup(): {
  cluster: FakeCluster;
  metrics: PrometheusMetrics;
  tick: (c?: Partial<AgentConfig>) => Promise<Outcome>;
} {
  const cluster = new FakeCluster();
  const metrics = new PrometheusMetrics('n1', { processMetrics: false });
  const tick = (config: Partial<AgentConfig> = {}): Promise<Outcome> =>
    settle(cluster.clock, new Agent({ ...AGENT_DEFAULTS, ...config }, cluster.deps({ metrics })).tick());
  return { cluster, metrics, tick };
}

describe('metrics through a scripted agent cycle', () => {
  it('follows a blocked node, then a full reboot, then idle', async () => {
    const { cluster, metrics, tick } = setup();
    cluster.sentinel = true;
    const prometheus = new FakeBlocker('prometheus');
    prometheus.verdict = { blocked: true, reason: 'alert HighErrorRate firing' };
    cluster.blockers.push(new FakeBlocker('pause'), prometheus);

    expect((await tick()).kind).toBe('blocked');
    let s = await scrape(metrics);
    expect(s.get('kured_reboot_required{node="n1"}')).toBe(1);
    expect(currentPhase(s)).toEqual(['blocked']);
    expect(s.get('kured_ts_blocked{node="n1",blocker="prometheus"}')).toBe(1);
    expect(s.get('kured_ts_blocked{node="n1",blocker="pause"}')).toBe(0);
    expect(s.get('kured_ts_lock_held{node="n1"}')).toBe(0);

    prometheus.verdict = { blocked: false };
    expect((await tick()).kind).toBe('rebooting');
    s = await scrape(metrics);
    expect(currentPhase(s)).toEqual(['rebooting']);
    expect(s.get('kured_ts_blocked{node="n1",blocker="prometheus"}')).toBe(0);
    expect(s.get('kured_ts_lock_held{node="n1"}')).toBe(1);
    expect(s.get('kured_ts_drain_duration_seconds_count')).toBe(1);
    expect(s.get('kured_ts_evictions_total{result="evicted"}')).toBe(2);

    cluster.boot();
    expect((await tick()).kind).toBe('completed');
    s = await scrape(metrics);
    expect(currentPhase(s)).toEqual(['completed']);
    expect(s.get('kured_ts_lock_held{node="n1"}')).toBe(0);
    expect(s.get('kured_ts_reboots_total{result="success"}')).toBe(1);
    expect(s.get('kured_ts_reboots_total{result="failed"}')).toBe(0);
    expect(s.get('kured_ts_reboot_duration_seconds_count')).toBe(1);

    expect((await tick()).kind).toBe('idle');
    s = await scrape(metrics);
    expect(currentPhase(s)).toEqual(['idle']);
    expect(s.get('kured_reboot_required{node="n1"}')).toBe(0);
    expect(s.get('kured_ts_reboots_total{result="success"}')).toBe(1);
    expect(metrics.lastHeartbeat()?.toISOString()).toBe(cluster.clock.now().toISOString());
  });

  it('counts a reboot that never happened as failed once, however often the agent ticks after', async () => {
    const { cluster, metrics } = setup();
    cluster.sentinel = true;
    cluster.rebootWorks = false;
    // One agent process throughout: the host ignored every reboot request, so the pod never restarted.
    const agent = new Agent({ ...AGENT_DEFAULTS, rebootRetries: 2 }, cluster.deps({ metrics }));
    const kinds: string[] = [];
    for (let i = 0; i < 5; i++) {
      const outcome = await settle(cluster.clock, agent.tick());
      kinds.push(outcome.kind);
      await cluster.clock.advance(agent.nextDelay(outcome)); // the next tick comes as the loop would
    }
    expect(kinds).toEqual(['rebooting', 'rebooting', 'failed', 'failed', 'failed']);
    const s = await scrape(metrics);
    expect(currentPhase(s)).toEqual(['failed']);
    expect(s.get('kured_ts_reboots_total{result="failed"}')).toBe(1);
    expect(s.get('kured_ts_reboots_total{result="success"}')).toBe(0);
    expect(s.get('kured_ts_lock_held{node="n1"}')).toBe(1);
  });

  it('counts sentinel errors', async () => {
    const { cluster, metrics, tick } = setup();
    cluster.sentinel = 'exit status 2';
    await tick();
    await tick();
    expect((await scrape(metrics)).get('kured_ts_sentinel_errors_total')).toBe(2);
  });
});
