// runAgent: the daemon as the CLI starts it, against the fake API server, stopped by its signal.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { waitFor, realDelay } from '../../fakes/wait-for.js';
import type { V1Node } from '../../../src/kube/kube.js';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runAgent } from '../../../src/agent/run.js';
import type { Config } from '../../../src/config/config.js';
import { READ_ATTEMPTS } from '../../../src/kube/client.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { type FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { testConfig } from '../../fakes/config.js';
import { kuredDaemonSet, nodeInfo } from '../../fakes/kube-objects.js';

let server: FakeApiServer;

beforeEach(async () => {
  server = await startClusterApiServer();
  server.create('daemonsets', kuredDaemonSet());
  server.create<V1Node>('nodes', {
    metadata: { name: 'n1' },
    spec: {},
    status: { nodeInfo: nodeInfo('boot-1'), conditions: [{ type: 'Ready', status: 'True' }] },
  });
});

afterEach(async () => {
  await server.close();
});

function config(port: number): Config {
  return testConfig({ periodMs: 200, metricsPort: port, postRebootTimeoutMs: 60_000 });
}

describe('runAgent', () => {
  it('logs its effective configuration once connected, with the notify URL redacted', async () => {
    const log = new MemoryLogger();
    const controller = new AbortController();
    controller.abort(new Error('SIGTERM'));
    const config = testConfig({ metricsPort: 0, notifyUrl: 'https://hooks.example.com/SECRET' });
    await runAgent(config, log, {
      signal: controller.signal,
      kube: server.kubeInMemory(),
      version: '9.9.9',
    });
    const effective = log.entries.find((e) => e.message === 'effective configuration');
    expect(effective?.fields).toMatchObject({
      version: '9.9.9',
      config: { nodeId: config.nodeId, notifyUrl: 'https://hooks.example.com/<redacted>' },
    });
    expect(JSON.stringify(log.entries)).not.toContain('SECRET');
  });

  it('answers /readyz from its own requests: no API request per probe, unready while the API fails', async () => {
    const log = new MemoryLogger();
    const controller = new AbortController();
    const kube = server.kubeInMemory();
    const running = runAgent(testConfig({ periodMs: 3_600_000, metricsPort: 0 }), log, {
      signal: controller.signal,
      kube,
    });
    try {
      // the tick's last request is the status write, after its log line: wait for the write itself
      await waitFor(
        () =>
          server
            .get<V1Node>('nodes', undefined, 'n1')
            ?.metadata?.annotations?.['kured-ts.dev/status']?.includes('"phase":"idle"') === true,
        'the agent wrote its idle status',
      );
      const port = log.entries.find((e) => e.message === 'agent started')?.fields.metricsPort as number;
      const before = server.requests.length;
      for (let i = 0; i < 20; i++) expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
      expect(server.requests.length).toBe(before);
      // the API server fails the agent's next request (every attempt of it): unready until a request
      // is answered again
      server.injectFailure({}, 503, READ_ATTEMPTS);
      await expect(kube.getNode('n1')).rejects.toThrow();
      const unready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(unready.status).toBe(503);
      expect(await unready.text()).toContain('the last API request failed');
      await kube.getNode('n1');
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    } finally {
      controller.abort(new Error('SIGTERM'));
      await running;
    }
  });

  it('serves metrics and health, writes the node status, and stops cleanly on its signal', async () => {
    const log = new MemoryLogger();
    const controller = new AbortController();
    const kube = server.kubeInMemory();
    const running = runAgent(config(0), log, { signal: controller.signal, kube });
    await waitFor(() => log.entries.some((e) => e.message === 'agent started'));
    const port = log.entries.find((e) => e.message === 'agent started')?.fields.metricsPort as number;
    await waitFor(
      () =>
        server.get<V1Node>('nodes', undefined, 'n1')?.metadata?.annotations?.['kured-ts.dev/status'] !==
        undefined,
    );
    const status = JSON.parse(
      server.get<V1Node>('nodes', undefined, 'n1')?.metadata?.annotations?.['kured-ts.dev/status'] ?? '{}',
    ) as { phase?: string };
    expect(status.phase).toBe('idle');
    const metrics = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(await metrics.text()).toMatch(/kured_reboot_required\{node="n1"\} 0/);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    controller.abort(new Error('SIGTERM'));
    expect(await running).toBe(0);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  });

  it('stays healthy through a --reboot-delay of several periods (the agent beats while it waits)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kured-ts-run-'));
    const sentinel = join(dir, 'reboot-required');
    const rebooted = join(dir, 'rebooted');
    await writeFile(sentinel, '');
    const log = new MemoryLogger();
    const controller = new AbortController();
    const kube = server.kubeInMemory();
    // /healthz fails once the last heartbeat is 2 periods (1 s) old; the delay alone lasts 5 periods.
    const slow: Config = {
      ...config(0),
      periodMs: 500,
      rebootSentinel: sentinel,
      rebootDelayMs: 2500,
      rebootCommand: ['/bin/sh', '-c', `touch '${rebooted}'`],
    };
    const running = runAgent(slow, log, { signal: controller.signal, kube });
    try {
      await waitFor(() => log.entries.some((e) => e.message === 'agent started'));
      const port = log.entries.find((e) => e.message === 'agent started')?.fields.metricsPort as number;
      await waitFor(() => server.get<V1Node>('nodes', undefined, 'n1')?.spec?.unschedulable === true);
      const statuses: number[] = [];
      while (!existsSync(rebooted)) {
        statuses.push((await fetch(`http://127.0.0.1:${port}/healthz`)).status);
        // the agent runs on the system clock: probe /healthz every 100 ms of real time while it drains
        await realDelay(100);
      }
      expect(statuses.length).toBeGreaterThan(10);
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
    } finally {
      controller.abort(new Error('SIGTERM'));
      await running;
      await rm(dir, { recursive: true, force: true });
    }
  }, 20_000);

  it('returns 1 without running when the metrics port is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const address = blocker.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      const log = new MemoryLogger();
      const kube = server.kubeInMemory();
      expect(await runAgent(config(port), log, { signal: new AbortController().signal, kube })).toBe(1);
      expect(log.entries.map((e) => e.message)).toContain('cannot start the metrics listener');
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });
});
