// Failures told where people look (issue 45, kured #585): drain failed, quarantined, reboot failed,
// not back in time, wave halted and overdue reach the notify URL, each with its own text
// (--message-template-<kind>) and the reason after it, to real HTTP servers speaking Slack's, Teams'
// and a generic webhook's language; at most once per node and period; only the kinds
// --notify-events names.
import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from '../../../src/agent/agent.js';
import { createAgentDeps } from '../../../src/agent/create-agent.js';
import { Reporter } from '../../../src/agent/report.js';
import type { Outcome } from '../../../src/agent/outcome.js';
import { SystemClock } from '../../../src/clock/clock.js';
import { DEFAULT_FAILURE_MESSAGES } from '../../../src/config/config.js';
import { ClientNodeKube } from '../../../src/kube/client.js';
import type { V1Node } from '../../../src/kube/kube.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import { noMetrics } from '../../../src/metrics/agent-metrics.js';
import { createNotifier } from '../../../src/notify/index.js';
import { NoticeFilter } from '../../../src/notify/notice-filter.js';
import { FAILURE_EVENTS, NOTIFY_EVENTS, type NotifyEvent } from '../../../src/notify/notifier.js';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { testConfig } from '../../fakes/config.js';
import { FakeNode, newNodeRecord } from '../../fakes/fake-node.js';
import { kuredDaemonSet, nodeInfo, readyNode } from '../../fakes/kube-objects.js';
import { realDelay } from '../../fakes/wait-for.js';
import { SteeredClock } from '../../fakes/fake-clock.js';

const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (s) =>
        new Promise<void>((resolve) => {
          s.closeAllConnections();
          s.close(() => {
            resolve();
          });
        }),
    ),
  );
});

/** A local HTTP server that keeps each request's path and JSON body. */
async function recorder(): Promise<{ base: string; received: { path: string; body: unknown }[] }> {
  const received: { path: string; body: unknown }[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body: JSON.parse(raw) as unknown });
      res.end('ok');
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

/** The three services, each as a notify URL and what its payload's text is. */
const SERVICES = [
  {
    name: 'Slack',
    url: (base: string) => ({ url: 'slack://T0/B0/XXXX', baseUrl: base }),
    text: (body: unknown) => (body as { text: string }).text,
  },
  {
    name: 'Teams',
    url: (base: string) => ({
      url: 'teams://g1@t1/alt1/own1?host=contoso.webhook.office.com',
      baseUrl: base,
    }),
    text: (body: unknown) =>
      (body as { attachments: { content: { body: { text: string }[] } }[] }).attachments[0]?.content.body[0]
        ?.text,
  },
  {
    name: 'a generic webhook',
    url: (base: string) => ({ url: `${base}/hook`, baseUrl: undefined }),
    text: (body: unknown) => {
      const b = body as { event: string; message: string };
      return `[${b.event}] ${b.message}`;
    },
  },
] as const;

/** What each outcome-told kind comes from (the agent's outcome), and the reason it carries. */
const OUTCOMES: [NotifyEvent, Outcome][] = [
  ['drain-failed', { kind: 'drain-failed', reason: 'drain failed: default/web-1 (PDB web)' }],
  ['quarantined', { kind: 'quarantined', reason: 'quarantined: the drain failed on default/web-1' }],
  ['reboot-failed', { kind: 'failed', reason: 'bootID unchanged after 3 reboot attempts' }],
  ['not-back', { kind: 'holding', reason: 'not ready 30m after the reboot: condition Ready=False' }],
];

describe.each(SERVICES)('told to $name', (service) => {
  it.each(OUTCOMES)('%s: its text with the node, then the reason', async (kind, outcome) => {
    const srv = await recorder();
    const { url, baseUrl } = service.url(srv.base);
    const logger = new MemoryLogger();
    const notifier = createNotifier(url, { logger, ...(baseUrl === undefined ? {} : { baseUrl }) });
    const reporter = new Reporter(
      'n1',
      {
        node: new FakeNode(newNodeRecord('n1')),
        events: { record: () => Promise.resolve() },
        metrics: noMetrics,
        logger,
        clock: new SystemClock(),
        notifier,
      },
      { deadlineMs: 0, periodMs: 3_600_000, templates: DEFAULT_FAILURE_MESSAGES },
    );
    await reporter.report(outcome, undefined);
    const texts = srv.received.map((r) => service.text(r.body));
    const line = `${DEFAULT_FAILURE_MESSAGES[kind as keyof typeof DEFAULT_FAILURE_MESSAGES].replace('%s', 'n1')}: ${outcome.reason}`;
    expect(texts).toEqual([service.name === 'a generic webhook' ? `[${kind}] ${line}` : line]);
  });

  it('overdue: once per period, with its age and what holds it', async () => {
    const srv = await recorder();
    const { url, baseUrl } = service.url(srv.base);
    const logger = new MemoryLogger();
    const notifier = new NoticeFilter(
      createNotifier(url, { logger, ...(baseUrl === undefined ? {} : { baseUrl }) }),
      { events: [...NOTIFY_EVENTS], periodMs: 3_600_000, clock: new SystemClock() },
    );
    const node = new FakeNode(newNodeRecord('n1'));
    const reporter = new Reporter(
      'n1',
      {
        node,
        events: { record: () => Promise.resolve() },
        metrics: noMetrics,
        logger,
        clock: new SystemClock(),
        notifier,
      },
      {
        deadlineMs: 1,
        periodMs: 3_600_000,
        templates: { ...DEFAULT_FAILURE_MESSAGES, overdue: 'Patch deadline missed on %s' },
      },
    );
    const blocked: Outcome = { kind: 'blocked', reason: 'alert HighLoad firing', blocker: 'prometheus' };
    await reporter.report({ kind: 'pending', reason: 'reboot required' }, undefined);
    await realDelay(5);
    await reporter.report(blocked, undefined);
    await reporter.report({ ...blocked, reason: 'alert HighLoad still firing' }, undefined);
    const texts = srv.received.map((r) => service.text(r.body) ?? '');
    expect(texts).toHaveLength(1);
    expect(texts[0]).toMatch(
      /Patch deadline missed on n1: reboot required for \d+s, past the deadline of 0s: blocked: alert HighLoad firing/,
    );
  });
});

describe('through the agent, against the fake API server', () => {
  it('a node not back in time is told once as not-back, and the wave it halts as wave-halted, naming it', async () => {
    const server = await startClusterApiServer();
    try {
      const srv = await recorder();
      server.create('daemonsets', kuredDaemonSet());
      server.create<V1Node>('nodes', readyNode('n1'));
      const clock = new SteeredClock();
      let required = true;
      const config = testConfig({
        coordinator: false,
        blockOnPdb: false,
        maxFailures: { count: 1 },
        postRebootTimeoutMs: 60_000,
        notifyUrl: `${srv.base}/hook`,
        notifyEvents: ['not-back', 'wave-halted'],
      });
      const kube = new ClientNodeKube(server.kubeConfig());
      const agent = new Agent(
        config,
        createAgentDeps(config, {
          kube,
          clock,
          logger: new MemoryLogger(),
          sentinel: { rebootRequired: () => Promise.resolve({ required }) },
          rebooter: {
            reboot: () => {
              const n = server.get<V1Node>('nodes', undefined, 'n1')!;
              n.status = {
                ...n.status,
                nodeInfo: nodeInfo('boot-2'),
                conditions: [{ type: 'Ready', status: 'False' }],
              };
              server.update('nodes', n);
              required = false;
              return Promise.resolve();
            },
          },
        }),
      );
      expect((await agent.tick()).kind).toBe('rebooting');
      expect((await agent.tick()).kind).toBe('verifying');
      clock.offsetMs = 2 * 60_000;
      expect((await agent.tick()).kind).toBe('holding');
      expect((await agent.tick()).kind).toBe('holding');
      const sent = srv.received.map((r) => r.body as { event: string; node: string; message: string });
      expect(sent.map((s) => s.event).sort()).toEqual(['not-back', 'wave-halted']);
      expect(sent.find((s) => s.event === 'wave-halted')?.message).toMatch(
        /^Reboot wave halted after node n1 failed: wave w\S+ halted by its failure budget \(--max-failures 1\): n1 failed; kured-ts resume continues it; this node: not ready 1m after the reboot/,
      );
      expect(sent.find((s) => s.event === 'not-back')?.message).toContain(
        'Node n1 not back in time after its reboot: not ready 1m after the reboot',
      );
    } finally {
      await server.close();
    }
  });
});

it('names every failure kind the issue lists', () => {
  expect([...FAILURE_EVENTS]).toEqual([
    'drain-failed',
    'quarantined',
    'reboot-failed',
    'not-back',
    'wave-halted',
    'overdue',
  ]);
});
