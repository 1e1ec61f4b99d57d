import type { Clock } from '../../../src/clock/clock.js';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer } from 'node:tls';
import { startForwardProxy } from '../../fakes/forward-proxy.js';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { MemoryLogger } from '../../../src/log/logger.js';
import { createNotifier } from '../../../src/notify/index.js';

interface Received {
  method: string;
  path: string;
  contentType: string;
  /** Parsed when JSON or a form, else the text. */
  body: unknown;
}

function parsed(raw: string, type: string): unknown {
  if (type === 'application/x-www-form-urlencoded') return Object.fromEntries(new URLSearchParams(raw));
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
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
        body: parsed(raw, req.headers['content-type'] ?? ''),
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
      baseUrl: srv.base,
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
      baseUrl: srv.base,
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
    const pauses: number[] = []; // the retry pause, on the notifier's clock
    const clock: Clock = {
      now: () => new Date('2026-01-05T10:00:00Z'),
      sleep: (ms) => {
        pauses.push(ms);
        return Promise.resolve();
      },
    };
    const notifier = createNotifier(`${srv.base}/secret-path?token=s3cr3t`, {
      logger,
      clock,
      timeoutMs: 300,
      retryDelayMs: 50,
    });
    await expect(notifier.notify('drain', 'n1', 'm')).resolves.toBeUndefined();
    expect(srv.received).toHaveLength(2);
    expect(pauses).toEqual([50]);
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
      baseUrl: srv.base,
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

describe("each of shoutrrr's services, against a local server that records what it received", () => {
  const logger = (): MemoryLogger => new MemoryLogger();
  it.each([
    {
      name: 'telegram: one sendMessage per chat',
      url: 'telegram://110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw@telegram?chats=@ops,-1001',
      rebase: true,
      expected: [
        [
          '/bot110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage',
          { chat_id: '@ops', text: 'Draining node n1' },
        ],
        [
          '/bot110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage',
          { chat_id: '-1001', text: 'Draining node n1' },
        ],
      ],
    },
    {
      name: 'discord: the webhook gets an embed',
      url: 'discord://tok3n@123456789',
      rebase: true,
      expected: [
        ['/api/webhooks/123456789/tok3n', { embeds: [{ description: 'Draining node n1', color: 0x50d9ff }] }],
      ],
    },
    {
      name: 'rocketchat: /hooks/A/B',
      url: 'rocketchat://kured@rc.example.com/tokA/tokB/ops',
      rebase: true,
      expected: [['/hooks/tokA/tokB', { text: 'Draining node n1', username: 'kured', channel: '#ops' }]],
    },
    {
      name: 'pushover: a form',
      url: 'pushover://shoutrrr:apitoken@userkey/?devices=phone',
      rebase: true,
      expected: [
        [
          '/1/messages.json',
          { token: 'apitoken', user: 'userkey', message: 'Draining node n1', device: 'phone' },
        ],
      ],
    },
    {
      name: 'googlechat: {text} with key and token',
      url: 'googlechat://chat.googleapis.com/v1/spaces/AAA/messages?key=k1&token=t1',
      rebase: true,
      expected: [['/v1/spaces/AAA/messages?key=k1&token=t1', { text: 'Draining node n1' }]],
    },
    {
      name: 'mattermost over http (disabletls): its own host',
      url: 'mattermost://kured@HOST/abc123/ops?disabletls=yes',
      rebase: false,
      expected: [['/hooks/abc123', { text: 'Draining node n1', username: 'kured', channel: 'ops' }]],
    },
    {
      name: 'gotify over http (disabletls): its own host',
      url: 'gotify://HOST/Atoken123?disabletls=yes&priority=4',
      rebase: false,
      expected: [['/message?token=Atoken123', { message: 'Draining node n1', priority: 4 }]],
    },
    {
      name: 'generic+http: the text as is',
      url: 'generic+http://HOST/in?team=ops',
      rebase: false,
      expected: [['/in?team=ops', 'Draining node n1']],
    },
  ])('$name', async ({ url, rebase, expected }) => {
    const srv = await recorder();
    const host = new URL(srv.base).host;
    const notifier = createNotifier(url.replace('HOST', host), {
      logger: logger(),
      ...(rebase ? { baseUrl: srv.base } : {}),
    });
    await notifier.notify('drain', 'n1', 'Draining node n1');
    expect(srv.received.map((r) => [r.path, r.body])).toEqual(
      expected.map(([path, body]) => [
        path,
        typeof body === 'string' ? body : expect.objectContaining(body as object),
      ]),
    );
    expect(srv.received.every((r) => r.method === 'POST')).toBe(true);
  });
});

describe('smtp, against a local SMTP server', () => {
  interface Mail {
    from: string;
    to: string[];
    user: string;
    data: string;
  }

  async function smtpServer(options: {
    auth: boolean;
  }): Promise<{ port: number; mails: Mail[]; close: () => Promise<void> }> {
    const { SMTPServer } = await import('smtp-server');
    const mails: Mail[] = [];
    const server = new SMTPServer({
      disabledCommands: ['STARTTLS'],
      authOptional: !options.auth,
      allowInsecureAuth: true,
      logger: false,
      onAuth: (auth, _session, done) => {
        if (auth.username === 'kured' && auth.password === 'pw') done(null, { user: auth.username });
        else done(new Error('invalid credentials'));
      },
      onData: (stream, session, done) => {
        let data = '';
        stream.on('data', (chunk: Buffer) => (data += chunk.toString()));
        stream.on('end', () => {
          mails.push({
            from: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
            to: session.envelope.rcptTo.map((r) => r.address),
            user: typeof session.user === 'string' ? session.user : '',
            data,
          });
          done();
        });
      },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.server.address() as AddressInfo).port;
    const close = (): Promise<void> =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
    return { port, mails, close };
  }

  it('sends one mail per recipient, from the sender, with the subject and the text, logged in', async () => {
    const srv = await smtpServer({ auth: true });
    try {
      const log = new MemoryLogger();
      const notifier = createNotifier(
        `smtp://kured:pw@127.0.0.1:${srv.port}/?from=kured@example.com&to=ops@example.com,oncall@example.com&subject=Reboots&fromname=kured-ts`,
        { logger: log },
      );
      await notifier.notify('reboot', 'n1', 'Rebooting node n1');
      expect(srv.mails.map((m) => [m.from, m.to, m.user])).toEqual([
        ['kured@example.com', ['ops@example.com'], 'kured'],
        ['kured@example.com', ['oncall@example.com'], 'kured'],
      ]);
      for (const mail of srv.mails) {
        expect(mail.data).toMatch(/^Subject: Reboots\r?$/m);
        expect(mail.data).toMatch(/^From: "kured-ts" <kured@example\.com>\r?$/m);
        expect(mail.data).toContain('Rebooting node n1');
      }
      expect(log.entries.filter((e) => e.level === 'warn')).toEqual([]);
    } finally {
      await srv.close();
    }
  });

  it('logs a refused login without the password, and never throws', async () => {
    const srv = await smtpServer({ auth: true });
    try {
      const log = new MemoryLogger();
      const notifier = createNotifier(
        `smtp://kured:wrongsecret@127.0.0.1:${srv.port}/?from=kured@example.com&to=ops@example.com`,
        { logger: log, retryDelayMs: 10 },
      );
      await expect(notifier.notify('drain', 'n1', 'm')).resolves.toBeUndefined();
      expect(srv.mails).toEqual([]);
      const failed = log.entries.filter((e) => e.message === 'notification failed');
      expect(failed.map((e) => e.fields.to)).toEqual(['ops@example.com']);
      expect(JSON.stringify(log.entries)).not.toContain('wrongsecret');
    } finally {
      await srv.close();
    }
  });
});

describe('through HTTP(S)_PROXY', () => {
  it('posts to an http service through the proxy, which alone resolves its name', async () => {
    const srv = await recorder();
    const proxy = await startForwardProxy({ 'hooks.test': Number(new URL(srv.base).port) });
    try {
      const log = new MemoryLogger();
      const notifier = createNotifier('generic+http://hooks.test/in?template=json', {
        logger: log,
        proxy: { httpProxy: proxy.url, httpsProxy: '', noProxy: '' },
      });
      await notifier.notify('drain', 'n1', 'Draining node n1');
      expect(proxy.records.map((r) => r.line)).toEqual(['POST http://hooks.test/in']);
      expect(srv.received.map((r) => [r.path, r.body])).toEqual([['/in', { message: 'Draining node n1' }]]);
      expect(log.entries.filter((e) => e.level === 'warn')).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it('tunnels to an https service with CONNECT, and TLS runs end to end through the tunnel', async () => {
    const tlsServer = await selfSignedTlsServer();
    const proxy = await startForwardProxy({ 'api.telegram.org': tlsServer.port });
    try {
      const log = new MemoryLogger();
      const notifier = createNotifier('telegram://1:abc@telegram?chats=@ops', {
        logger: log,
        retries: 0,
        proxy: { httpProxy: '', httpsProxy: proxy.url, noProxy: '' },
      });
      await notifier.notify('drain', 'n1', 'Draining node n1');
      expect(proxy.records.map((r) => r.line)).toEqual(['CONNECT api.telegram.org:443']);
      // the agent checked the test server's own certificate against the real CAs, and refused it:
      // only that server, at the end of the tunnel, has it
      const failed = log.entries.find((e) => e.message === 'notification failed');
      expect(String(failed?.fields.error)).toMatch(/self[- ]signed certificate/i);
    } finally {
      await proxy.close();
      await tlsServer.close();
    }
  });

  it('goes direct to a host in NO_PROXY', async () => {
    const srv = await recorder();
    const proxy = await startForwardProxy({});
    try {
      const notifier = createNotifier(`${srv.base}/x`, {
        logger: new MemoryLogger(),
        proxy: { httpProxy: proxy.url, httpsProxy: proxy.url, noProxy: '127.0.0.0/8' },
      });
      await notifier.notify('drain', 'n1', 'm');
      expect(srv.received).toHaveLength(1);
      expect(proxy.records).toEqual([]);
    } finally {
      await proxy.close();
    }
  });
});

/** A TLS server with a certificate of its own (made with openssl). */
async function selfSignedTlsServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'kured-ts-tls-'));
  try {
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=api.telegram.org'].concat(
        ['-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')],
      ),
      { stdio: 'ignore' },
    );
    const server = createTlsServer({
      key: readFileSync(join(dir, 'key.pem')),
      cert: readFileSync(join(dir, 'cert.pem')),
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      port: (server.address() as AddressInfo).port,
      close: () =>
        new Promise<void>((resolve) => {
          server.close(() => {
            resolve();
          });
        }),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
