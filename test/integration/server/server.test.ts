import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from '@jest/globals';
import { MemoryLogger } from '../../../src/log/logger.js';
import { PrometheusMetrics } from '../../../src/metrics/prometheus-metrics.js';
import {
  heartbeatHealth,
  startHealthServer,
  type HealthServer,
  type HealthServerOptions,
  type ProbeResult,
} from '../../../src/server/http-server.js';
import { FakeClock } from '../../fakes/fake-clock.js';
import { connectKube } from '../../../src/kube/client.js';
import { apiReadiness, startAgentListener } from '../../../src/server/agent-listener.js';
import { startFakeApiServer, type FakeApiServer } from '../../../src/sim/fake-api-server.js';

const PERIOD = 60 * 60_000;
const servers: HealthServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

interface Setup {
  clock: FakeClock;
  metrics: PrometheusMetrics;
  base: string;
  server: HealthServer;
}

async function start(overrides: Partial<HealthServerOptions> = {}): Promise<Setup> {
  const clock = new FakeClock();
  const metrics = new PrometheusMetrics('n1');
  const server = await startHealthServer({
    host: '127.0.0.1',
    port: 0,
    metrics,
    health: heartbeatHealth({ clock, periodMs: PERIOD, lastHeartbeat: () => metrics.lastHeartbeat() }),
    ready: () => Promise.resolve({ ok: true, reason: 'ok' }),
    logger: new MemoryLogger(),
    ...overrides,
  });
  servers.push(server);
  return { clock, metrics, server, base: `http://127.0.0.1:${server.port}` };
}

async function get(url: string, method = 'GET'): Promise<{ status: number; body: string; type: string }> {
  const res = await fetch(url, { method });
  return { status: res.status, body: await res.text(), type: res.headers.get('content-type') ?? '' };
}

function promtool(input: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      resolve({ code, output });
    });
    child.stdin.end(input);
  });
}

describe('health server', () => {
  it('serves /metrics in the Prometheus text format with its content type', async () => {
    const { base, metrics } = await start();
    metrics.setRebootRequired(true);
    metrics.setPhase('blocked');
    metrics.setBlocked('pods');
    const res = await get(`${base}/metrics`);
    expect(res.status).toBe(200);
    expect(res.type).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.body).toContain('kured_reboot_required{node="n1"} 1');
    expect(res.body).toContain('kured_ts_phase{node="n1",phase="blocked"} 1');
    expect(res.body).toContain('kured_ts_blocked{node="n1",blocker="pods"} 1');
    expect(res.body).toContain('process_resident_memory_bytes');
  });

  it('serves /metrics that promtool check metrics accepts without lint problems', async () => {
    const { base, metrics } = await start();
    metrics.setLockHeld(true);
    metrics.countEvictions('evicted', 3);
    metrics.observeDrain(12.5);
    metrics.observeReboot(321);
    metrics.countReboot('success');
    metrics.countSentinelError();
    const { body } = await get(`${base}/metrics`);
    const result = await promtool(body);
    expect(result).toEqual({ code: 0, output: '' });
  });

  it('shows that the promtool check can fail, on an exposition with a lint problem', async () => {
    const result = await promtool(
      '# HELP bad_count a counter without _total\n# TYPE bad_count counter\nbad_count 1\n',
    );
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('counter metrics should have "_total" suffix');
  });

  it.each([
    ['healthy right after start', 0, undefined, 200],
    ['healthy with a heartbeat 1.9 periods old', 1.9 * PERIOD, 0, 200],
    ['stuck with a heartbeat 2 periods old', 2 * PERIOD, 0, 503],
    ['stuck with no heartbeat 2 periods after start', 2 * PERIOD, undefined, 503],
    ['healthy with a fresh heartbeat long after start', 10 * PERIOD, 9.5 * PERIOD, 200],
  ])('answers /healthz: %s', async (_name, advanceMs, beatAtMs, status) => {
    const { base, clock, metrics } = await start();
    const t0 = clock.now().getTime();
    if (beatAtMs !== undefined) metrics.heartbeat(new Date(t0 + beatAtMs));
    await clock.advance(advanceMs);
    const res = await get(`${base}/healthz`);
    expect(res.status).toBe(status);
    if (status === 503) expect(res.body).toMatch(/^loop stuck: .*7200s ago \(limit 7200s\)\n$/);
    else expect(res.body).toBe('ok\n');
  });

  it.each([
    ['ready', () => Promise.resolve({ ok: true, reason: 'ok' }), 200, 'ok\n'],
    [
      'not ready with the reason given',
      () => Promise.resolve({ ok: false, reason: 'API unreachable: connect ECONNREFUSED' }),
      503,
      'API unreachable: connect ECONNREFUSED\n',
    ],
    [
      'not ready when the check throws',
      () => Promise.reject(new Error('boom')),
      503,
      'readiness check failed: boom\n',
    ],
    [
      'not ready when the check hangs',
      () => new Promise<ProbeResult>(() => undefined),
      503,
      'readiness check timed out after 100ms\n',
    ],
  ])('answers /readyz: %s', async (_name, ready, status, body) => {
    const { base } = await start({ ready, readyTimeoutMs: 100 });
    const res = await get(`${base}/readyz`);
    expect(res).toMatchObject({ status, body });
  });

  it.each([
    ['/', 'GET', 404],
    ['/metricsx', 'GET', 404],
    ['/healthz/extra', 'GET', 404],
    ['/metrics', 'POST', 405],
    ['/healthz?verbose=1', 'GET', 200],
    ['/healthz', 'HEAD', 200],
  ])('answers %s %s with %d', async (path, method, status) => {
    const { base } = await start();
    expect((await get(`${base}${path}`, method)).status).toBe(status);
  });

  it('answers 500 when the registry fails and keeps serving', async () => {
    const { base } = await start({
      metrics: { contentType: 'text/plain', metrics: () => Promise.reject(new Error('collector broke')) },
    });
    expect((await get(`${base}/metrics`)).status).toBe(500);
    expect((await get(`${base}/healthz`)).status).toBe(200);
  });

  it('closes, refusing new connections, even with a keep-alive connection open', async () => {
    const { base, server } = await start();
    await fetch(`${base}/healthz`, { keepalive: true }).then((r) => r.text());
    await server.close();
    await server.close();
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
  });

  it('fails to start with a clear error when the port is taken', async () => {
    const { server } = await start();
    await expect(
      startHealthServer({
        host: '127.0.0.1',
        port: server.port,
        metrics: new PrometheusMetrics('x', { processMetrics: false }),
        health: () => ({ ok: true, reason: 'ok' }),
        ready: () => Promise.resolve({ ok: true, reason: 'ok' }),
        logger: new MemoryLogger(),
      }),
    ).rejects.toThrow(`cannot listen on 127.0.0.1:${server.port}: listen EADDRINUSE`);
  });
});

describe('agent listener', () => {
  let api: FakeApiServer | undefined;

  afterEach(async () => {
    await api?.close();
    api = undefined;
  });

  it("is ready once the agent's client has had an answer, not before, and tells liveness apart", async () => {
    api = await startFakeApiServer();
    const clock = new FakeClock();
    const metrics = new PrometheusMetrics('n1', { processMetrics: false });
    const config = {
      metricsHost: '127.0.0.1',
      metricsPort: 0,
      periodMs: PERIOD,
      dsNamespace: 'kube-system',
      dsName: 'kured',
    };
    const kube = api.kubeInMemory();
    const server = await startAgentListener({ config, kube, metrics, clock, logger: new MemoryLogger() });
    servers.push(server);
    const base = `http://127.0.0.1:${server.port}`;
    const notReady = await get(`${base}/readyz`);
    expect(notReady).toMatchObject({ status: 503, body: 'no API request answered yet\n' });
    await kube.getDaemonSet('kube-system', 'kured').catch(() => undefined); // a 404 is an answer
    expect(await get(`${base}/readyz`)).toMatchObject({ status: 200, body: 'ok\n' });
    expect(api.requests).toHaveLength(1); // the agent's own request; the probes sent none
    metrics.heartbeat(clock.now());
    await clock.advance(2 * PERIOD);
    expect((await get(`${base}/healthz`)).status).toBe(503);
    metrics.heartbeat(clock.now());
    expect((await get(`${base}/healthz`)).status).toBe(200);
    expect((await get(`${base}/metrics`)).body).toContain('kured_ts_lock_held{node="n1"} 0');
  });

  it('is not ready when the API cannot be reached', async () => {
    const gone = await startFakeApiServer();
    const url = gone.url;
    await gone.close();
    const ready = apiReadiness(connectKube({ url }), { dsNamespace: 'kube-system', dsName: 'kured' });
    const result = await ready();
    expect(result.ok).toBe(false);
    expect(result.reason).toMatch(/^cannot read DaemonSet kube-system\/kured: .*ECONNREFUSED/);
  });
});
