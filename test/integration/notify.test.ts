import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { MemoryLogger } from '../../src/log/logger.js';
import { createNotifier } from '../../src/notify/index.js';

interface Received {
  method: string;
  path: string;
  contentType: string;
  body: unknown;
}

interface Recorder {
  base: string;
  received: Received[];
}

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

/** A local HTTP server that records every request and answers with `respond`. */
async function recorder(
  respond: (res: ServerResponse, n: number) => void = (res) => res.end('ok'),
): Promise<Recorder> {
  const received: Received[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      received.push({
        method: req.method ?? '',
        path: req.url ?? '',
        contentType: req.headers['content-type'] ?? '',
        body: JSON.parse(raw) as unknown,
      });
      respond(res, received.length);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

const T = 'T00000000';
const B = 'B00000000';
const X = 'XXXXXXXXXXXXXXXXXXXXXXXX';

describe('notifiers against local HTTP servers', () => {
  it('posts {text} to the Slack webhook path of a slack:// URL', async () => {
    const srv = await recorder();
    const notifier = createNotifier(`slack://${T}/${B}/${X}`, {
      logger: new MemoryLogger(),
      slackBaseUrl: srv.base,
    });
    await notifier.notify('drain', 'n1', 'Draining node n1');
    expect(srv.received).toEqual([
      {
        method: 'POST',
        path: `/services/${T}/${B}/${X}`,
        contentType: 'application/json',
        body: { text: 'Draining node n1' },
      },
    ]);
  });

  it('posts an Adaptive Card message to the Teams webhook path of a teams:// URL', async () => {
    const srv = await recorder();
    const notifier = createNotifier('teams://g1@t1/alt1/own1?host=contoso.webhook.office.com', {
      logger: new MemoryLogger(),
      teamsBaseUrl: srv.base,
    });
    await notifier.notify('reboot', 'n1', 'Rebooting node n1');
    expect(srv.received).toHaveLength(1);
    expect(srv.received[0]?.path).toBe('/webhookb2/g1@t1/IncomingWebhook/alt1/own1');
    expect(srv.received[0]?.body).toMatchObject({
      type: 'message',
      attachments: [
        {
          contentType: 'application/vnd.microsoft.card.adaptive',
          content: {
            type: 'AdaptiveCard',
            body: [{ type: 'TextBlock', text: 'Rebooting node n1', wrap: true }],
          },
        },
      ],
    });
  });

  it('posts {event, node, message, time} to a generic webhook, query string kept', async () => {
    const srv = await recorder();
    const clock = { now: () => new Date('2026-01-05T10:00:00Z'), sleep: () => Promise.resolve() };
    const notifier = createNotifier(`${srv.base}/hook?token=abc`, { logger: new MemoryLogger(), clock });
    await notifier.notify('uncordon', 'n1', 'Node n1 rebooted & uncordoned successfully!');
    expect(srv.received).toEqual([
      {
        method: 'POST',
        path: '/hook?token=abc',
        contentType: 'application/json',
        body: {
          event: 'uncordon',
          node: 'n1',
          message: 'Node n1 rebooted & uncordoned successfully!',
          time: '2026-01-05T10:00:00.000Z',
        },
      },
    ]);
  });

  it('gives up on a server that hangs after one retry, within the timeouts, and logs it redacted', async () => {
    const srv = await recorder(() => undefined); // never answers
    const logger = new MemoryLogger();
    const notifier = createNotifier(`${srv.base}/secret-path?token=s3cr3t`, {
      logger,
      timeoutMs: 300,
      retryDelayMs: 50,
    });
    const started = performance.now();
    await expect(notifier.notify('drain', 'n1', 'm')).resolves.toBeUndefined();
    const elapsed = performance.now() - started;
    expect(srv.received).toHaveLength(2);
    expect(elapsed).toBeGreaterThanOrEqual(2 * 300 + 50 - 20);
    expect(elapsed).toBeLessThan(2 * 300 + 50 + 400);
    const failed = logger.entries.filter((e) => e.message === 'notification failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]?.fields).toMatchObject({
      url: `${srv.base}/<redacted>`,
      attempts: 2,
      error: 'timed out after 300ms',
    });
    expect(JSON.stringify(logger.entries)).not.toMatch(/s3cr3t|secret-path/);
  });

  it('retries a 500 once, then logs the failure and gives up', async () => {
    const srv = await recorder((res) => {
      res.statusCode = 500;
      res.end('boom');
    });
    const logger = new MemoryLogger();
    const notifier = createNotifier(`slack://${T}/${B}/${X}`, {
      logger,
      slackBaseUrl: srv.base,
      retryDelayMs: 10,
    });
    await notifier.notify('reboot', 'n1', 'Rebooting node n1');
    expect(srv.received).toHaveLength(2);
    const failed = logger.entries.filter((e) => e.message === 'notification failed');
    expect(failed.map((e) => e.fields)).toEqual([
      {
        kind: 'slack',
        url: `${srv.base}/<redacted>`,
        event: 'reboot',
        node: 'n1',
        attempts: 2,
        error: 'HTTP 500',
      },
    ]);
    expect(JSON.stringify(logger.entries)).not.toContain(X);
  });

  it('succeeds when the retry succeeds, logging no failure', async () => {
    const srv = await recorder((res, n) => {
      res.statusCode = n === 1 ? 503 : 200;
      res.end();
    });
    const logger = new MemoryLogger();
    await createNotifier(`${srv.base}/x`, { logger, retryDelayMs: 10 }).notify('drain', 'n1', 'm');
    expect(srv.received).toHaveLength(2);
    expect(logger.entries.filter((e) => e.level === 'warn')).toEqual([]);
  });

  it('does not retry a 404 (a wrong URL does not heal)', async () => {
    const srv = await recorder((res) => {
      res.statusCode = 404;
      res.end();
    });
    const logger = new MemoryLogger();
    await createNotifier(`${srv.base}/x`, { logger, retryDelayMs: 10 }).notify('drain', 'n1', 'm');
    expect(srv.received).toHaveLength(1);
    expect(logger.entries.find((e) => e.message === 'notification failed')?.fields).toMatchObject({
      attempts: 1,
      error: 'HTTP 404',
    });
  });

  it('logs and returns when nothing listens, never throwing', async () => {
    const srv = await recorder();
    const url = `${srv.base}/x`;
    await Promise.all(
      servers.splice(0).map(
        (s) =>
          new Promise<void>((resolve) =>
            s.close(() => {
              resolve();
            }),
          ),
      ),
    );
    const logger = new MemoryLogger();
    await expect(
      createNotifier(url, { logger, retryDelayMs: 10, timeoutMs: 1000 }).notify('drain', 'n1', 'm'),
    ).resolves.toBeUndefined();
    expect(logger.entries.find((e) => e.message === 'notification failed')?.fields).toMatchObject({
      attempts: 2,
      error: expect.stringContaining('ECONNREFUSED') as unknown,
    });
  });
});
