import { describe, expect, it } from '@jest/globals';
import { MemoryLogger } from '../../src/log/logger.js';
import {
  createNotifier,
  parseNotifyUrl,
  redactUrl,
  renderMessage,
  slackHookUrlToNotifyUrl,
  stripQuotes,
} from '../../src/notify/index.js';
import { silentNotifier } from '../../src/notify/notifier.js';
import type { NotifyRequest } from '../../src/notify/target.js';

const AT = new Date('2026-01-05T10:00:00Z');

/** The HTTP requests one notification to `url` makes. */
function requestsOf(
  url: string,
  message = 'Draining node n1',
  event: 'drain' | 'reboot' = 'drain',
): NotifyRequest[] {
  const target = parseNotifyUrl(url);
  if (!('http' in target)) throw new Error(`${url} is not sent over HTTP`);
  return target.http.requests({ event, node: 'n1', message, time: AT });
}

function kindOf(url: string): string {
  const target = parseNotifyUrl(url);
  return 'http' in target ? target.http.kind : 'smtp';
}

/** The JSON body of the only request. */
function payloadOf(url: string, message?: string, event?: 'drain' | 'reboot'): unknown {
  const requests = requestsOf(url, message, event);
  expect(requests).toHaveLength(1);
  return JSON.parse(requests[0]?.body ?? '') as unknown;
}

const T = 'T00000000';
const B = 'B00000000';
const X = 'XXXXXXXXXXXXXXXXXXXXXXXX';

describe('parseNotifyUrl', () => {
  it.each([
    [
      'slack://T/B/X (kured, shoutrrr 0.4)',
      `slack://${T}/${B}/${X}`,
      'slack',
      `https://hooks.slack.com/services/${T}/${B}/${X}`,
    ],
    [
      'slack://botname@T/B/X',
      `slack://kured@${T}/${B}/${X}`,
      'slack',
      `https://hooks.slack.com/services/${T}/${B}/${X}`,
    ],
    [
      'slack://hook:T-B-X@webhook (shoutrrr 0.5+)',
      `slack://hook:${T}-${B}-${X}@webhook`,
      'slack',
      `https://hooks.slack.com/services/${T}/${B}/${X}`,
    ],
    [
      'a quoted slack URL',
      `"slack://${T}/${B}/${X}"`,
      'slack',
      `https://hooks.slack.com/services/${T}/${B}/${X}`,
    ],
    [
      'a Slack https webhook',
      `https://hooks.slack.com/services/${T}/${B}/${X}`,
      'slack',
      `https://hooks.slack.com/services/${T}/${B}/${X}`,
    ],
    [
      'teams:// with a host',
      'teams://g1@t1/alt1/owner1?host=contoso.webhook.office.com',
      'teams',
      'https://contoso.webhook.office.com/webhookb2/g1@t1/IncomingWebhook/alt1/owner1',
    ],
    [
      'teams:// with an extra id and no host',
      'teams://g1@t1/alt1/owner1/V2extra',
      'teams',
      'https://outlook.office.com/webhook/g1@t1/IncomingWebhook/alt1/owner1/V2extra',
    ],
    [
      'a Teams connector webhook',
      'https://contoso.webhook.office.com/webhookb2/g@t/IncomingWebhook/a/o',
      'teams',
      'https://contoso.webhook.office.com/webhookb2/g@t/IncomingWebhook/a/o',
    ],
    [
      'a Power Automate workflow on logic.azure.com',
      'https://prod-01.westus.logic.azure.com:443/workflows/abc/triggers/manual/paths/invoke?api-version=2016-06-01&sig=s3cr3t',
      'teams',
      'https://prod-01.westus.logic.azure.com:443/workflows/abc/triggers/manual/paths/invoke?api-version=2016-06-01&sig=s3cr3t',
    ],
    [
      'a Power Automate workflow on powerplatform.com',
      'https://default1.environment.api.powerplatform.com/powerautomate/automations/direct/workflows/abc/triggers/manual/paths/invoke?sig=s',
      'teams',
      'https://default1.environment.api.powerplatform.com/powerautomate/automations/direct/workflows/abc/triggers/manual/paths/invoke?sig=s',
    ],
    [
      'a generic https webhook',
      'https://example.com/hooks/kured?token=abc',
      'webhook',
      'https://example.com/hooks/kured?token=abc',
    ],
    ['a generic http webhook', 'http://10.0.0.1:9000/notify', 'webhook', 'http://10.0.0.1:9000/notify'],
    [
      'logic.azure.com without /workflows/',
      'https://x.logic.azure.com/other',
      'webhook',
      'https://x.logic.azure.com/other',
    ],
  ])('recognises %s', (_name, url, kind, endpoint) => {
    expect(kindOf(url)).toBe(kind);
    expect(requestsOf(url).map((r) => r.url)).toEqual([endpoint]);
  });

  it.each([
    ['not a URL', 'hooks.slack.com/services/a/b/c', 'is not a URL'],
    ['an unknown scheme', 'ifttt://key/?events=reboot', 'unsupported scheme ifttt:'],
    ['a slack URL with two parts', `slack://${T}/${B}`, 'slack notify URL must be'],
    ['a slack bot API token', 'slack://xoxb:1234-5678-abcd@C0123', 'slack bot API tokens are not supported'],
    ['a teams URL without its parts', 'teams://t1/alt1', 'teams notify URL must be'],
  ])('refuses %s with a clear error', (_name, url, message) => {
    expect(() => parseNotifyUrl(url)).toThrow(message);
  });

  it('never repeats the secret in its error', () => {
    expect(() => parseNotifyUrl('slack://xoxb:supersecret@C0123')).toThrow(
      'notify URL slack://C0123/<redacted>: slack bot API tokens are not supported',
    );
  });
});

describe('payloads', () => {
  it.each([
    ['slack', `slack://${T}/${B}/${X}`, { text: 'Draining node n1' }],
    [
      'slack with a bot name',
      `slack://kured@${T}/${B}/${X}`,
      { text: 'Draining node n1', username: 'kured' },
    ],
    [
      'slack with ?botname and ?channel',
      `slack://hook:${T}-${B}-${X}@webhook?botname=rb&channel=ops`,
      { text: 'Draining node n1', username: 'rb', channel: 'ops' },
    ],
    [
      'webhook',
      'https://example.com/x',
      { event: 'drain', node: 'n1', message: 'Draining node n1', time: '2026-01-05T10:00:00.000Z' },
    ],
  ])('builds the %s payload', (_name, url, expected) => {
    expect(payloadOf(url)).toEqual(expected);
  });

  it('builds a Teams message with one Adaptive Card', () => {
    expect(payloadOf('teams://g@t/a/o?host=c.webhook.office.com', 'Rebooting node n1', 'reboot')).toEqual({
      type: 'message',
      attachments: [
        {
          contentType: 'application/vnd.microsoft.card.adaptive',
          contentUrl: null,
          content: {
            $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
            type: 'AdaptiveCard',
            version: '1.4',
            body: [{ type: 'TextBlock', text: 'Rebooting node n1', wrap: true }],
          },
        },
      ],
    });
  });
});

describe('redactUrl', () => {
  it.each([
    [`slack://${T}/${B}/${X}`, `slack://${T}/<redacted>`],
    [`slack://hook:${T}-${B}-${X}@webhook`, 'slack://webhook/<redacted>'],
    [`https://hooks.slack.com/services/${T}/${B}/${X}`, 'https://hooks.slack.com/<redacted>'],
    ['teams://g@t/a/o?host=c.webhook.office.com', 'teams://t/<redacted>'],
    ['https://prod.logic.azure.com:443/workflows/abc?sig=s3cr3t', 'https://prod.logic.azure.com/<redacted>'],
    ['https://user:pw@example.com:8443/', 'https://example.com:8443/<redacted>'],
    ['http://example.com', 'http://example.com'],
    ['"https://example.com/a?token=x"', 'https://example.com/<redacted>'],
    ['not a url with secret', '<redacted>'],
    ['', ''],
  ])('turns %s into %s', (url, expected) => {
    expect(redactUrl(url)).toBe(expected);
  });
});

describe('kured compatibility helpers', () => {
  it.each([
    ['"a"', 'a'],
    ["'slack://a/b/c'", 'slack://a/b/c'],
    ['"unbalanced', '"unbalanced'],
    ['""', '""'],
    ['plain', 'plain'],
  ])('stripQuotes(%s) is %s', (input, expected) => {
    expect(stripQuotes(input)).toBe(expected);
  });

  it.each([
    [`https://hooks.slack.com/services/${T}/${B}/${X}`, `slack://${T}/${B}/${X}`],
    [`"https://hooks.slack.com/services/${T}/${B}/${X}/"`, `slack://${T}/${B}/${X}`],
    // kured's strings.Trim would eat the trailing 's' and 'e' of this token; we do not.
    [`https://hooks.slack.com/services/${T}/${B}/abcdes`, `slack://${T}/${B}/abcdes`],
  ])('converts --slack-hook-url %s into %s', (hook, expected) => {
    expect(slackHookUrlToNotifyUrl(hook)).toBe(expected);
  });

  it('refuses a slack hook URL without three token parts, without printing it', () => {
    expect(() => slackHookUrlToNotifyUrl('https://hooks.slack.com/services/T/secretB')).toThrow(
      'slack hook URL https://hooks.slack.com/<redacted> must look like',
    );
  });

  it.each([
    ['Draining node %s', 'Draining node n1'],
    ['Node %s rebooted & uncordoned successfully!', 'Node n1 rebooted & uncordoned successfully!'],
    ['%s: 100%% done (%s)', 'n1: 100% done (n1)'],
    ['no placeholder', 'no placeholder'],
  ])('renders %s', (template, expected) => {
    expect(renderMessage(template, 'n1')).toBe(expected);
  });
});

describe('createNotifier', () => {
  it.each(['', '  ', '""'])('is silent for %j', (url) => {
    expect(createNotifier(url, { logger: new MemoryLogger() })).toBe(silentNotifier);
  });

  it('throws at creation for an unusable URL', () => {
    expect(() => createNotifier('ftp://example.com/x', { logger: new MemoryLogger() })).toThrow(
      'unsupported scheme',
    );
  });
});

/** A request as the table below writes it: the body parsed when it is JSON or a form. */
function shown(request: NotifyRequest): { url: string; method: string; type: string; body: unknown } {
  const type = request.headers['Content-Type'] ?? '';
  const body =
    type === 'application/x-www-form-urlencoded'
      ? Object.fromEntries(new URLSearchParams(request.body))
      : request.body.startsWith('{')
        ? (JSON.parse(request.body) as unknown)
        : request.body;
  return { url: request.url, method: request.method, type, body };
}

describe("shoutrrr's services, as kured users write their URLs", () => {
  const json = 'application/json';
  it.each([
    [
      'telegram sends one message per chat, a thread after the colon',
      'telegram://110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw@telegram?chats=@ops,-1001234:42',
      [
        {
          url: 'https://api.telegram.org/bot110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage',
          method: 'POST',
          type: json,
          body: {
            chat_id: '@ops',
            text: 'Draining node n1',
            disable_web_page_preview: false,
            disable_notification: false,
          },
        },
        {
          url: 'https://api.telegram.org/bot110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage',
          method: 'POST',
          type: json,
          body: {
            chat_id: '-1001234',
            message_thread_id: 42,
            text: 'Draining node n1',
            disable_web_page_preview: false,
            disable_notification: false,
          },
        },
      ],
    ],
    [
      'telegram with a title sends HTML, silently with notification=no',
      'telegram://1:abc@telegram?channels=@ops&title=<prod>&notification=no&preview=No',
      [
        {
          url: 'https://api.telegram.org/bot1:abc/sendMessage',
          method: 'POST',
          type: json,
          body: {
            chat_id: '@ops',
            text: '<b>&lt;prod&gt;</b>\nDraining node n1',
            parse_mode: 'HTML',
            disable_web_page_preview: true,
            disable_notification: true,
          },
        },
      ],
    ],
    [
      'discord posts an embed to the webhook',
      'discord://tok3n@123456789?username=kured&title=prod',
      [
        {
          url: 'https://discord.com/api/webhooks/123456789/tok3n',
          method: 'POST',
          type: json,
          body: {
            embeds: [{ title: 'prod', description: 'Draining node n1', color: 0x50d9ff }],
            username: 'kured',
          },
        },
      ],
    ],
    [
      'mattermost posts to /hooks/TOKEN with the user and channel',
      'mattermost://kured@chat.example.com:8065/abc123/ops?icon=:robot:',
      [
        {
          url: 'https://chat.example.com:8065/hooks/abc123',
          method: 'POST',
          type: json,
          body: { text: 'Draining node n1', username: 'kured', channel: 'ops', icon_emoji: ':robot:' },
        },
      ],
    ],
    [
      'rocketchat posts to /hooks/A/B, a channel with #',
      'rocketchat://kured@rc.example.com/tokA/tokB/ops',
      [
        {
          url: 'https://rc.example.com/hooks/tokA/tokB',
          method: 'POST',
          type: json,
          body: { text: 'Draining node n1', username: 'kured', channel: '#ops' },
        },
      ],
    ],
    [
      'rocketchat to a person with @',
      'rocketchat://rc.example.com/tokA/tokB/@alice',
      [
        {
          url: 'https://rc.example.com/hooks/tokA/tokB',
          method: 'POST',
          type: json,
          body: { text: 'Draining node n1', channel: '@alice' },
        },
      ],
    ],
    [
      'gotify posts to /message?token= under its subpath, over http with disabletls',
      'gotify://gotify.example.com/sub/Aaa.bbb.ccc-ddd?priority=5&title=Reboots&disabletls=yes',
      [
        {
          url: 'http://gotify.example.com/sub/message?token=Aaa.bbb.ccc-ddd',
          method: 'POST',
          type: json,
          body: { message: 'Draining node n1', title: 'Reboots', priority: 5 },
        },
      ],
    ],
    [
      'pushover posts a form with the devices',
      'pushover://shoutrrr:apitoken@userkey/?devices=phone,tablet&title=prod&priority=1',
      [
        {
          url: 'https://api.pushover.net/1/messages.json',
          method: 'POST',
          type: 'application/x-www-form-urlencoded',
          body: {
            token: 'apitoken',
            user: 'userkey',
            message: 'Draining node n1',
            device: 'phone,tablet',
            title: 'prod',
            priority: '1',
          },
        },
      ],
    ],
    [
      'googlechat posts {text} to the webhook Google gave',
      'googlechat://chat.googleapis.com/v1/spaces/AAA/messages?key=k1&token=t1',
      [
        {
          url: 'https://chat.googleapis.com/v1/spaces/AAA/messages?key=k1&token=t1',
          method: 'POST',
          type: json,
          body: { text: 'Draining node n1' },
        },
      ],
    ],
    [
      'generic sends the text as is over https, keeping the webhook its own query',
      'generic://hooks.example.com/reboots?team=ops&@Authorization=Bearer%20x',
      [
        {
          url: 'https://hooks.example.com/reboots?team=ops',
          method: 'POST',
          type: json,
          body: 'Draining node n1',
        },
      ],
    ],
    [
      'generic+http with the JSON template, extra fields and keys renamed',
      'generic+http://10.0.0.5:8080/in?template=json&messagekey=text&title=prod&$source=kured&method=put',
      [
        {
          url: 'http://10.0.0.5:8080/in',
          method: 'PUT',
          type: json,
          body: { source: 'kured', title: 'prod', text: 'Draining node n1' },
        },
      ],
    ],
  ])('%s', (_name, url, expected) => {
    expect(requestsOf(url).map(shown)).toEqual(expected);
  });

  it('sets the headers asked for with @, named as shoutrrr names them', () => {
    const [request] = requestsOf('generic://h.example.com/x?@Authorization=Bearer%20x&@XApiKey=k');
    expect(request?.headers).toEqual({
      'Content-Type': 'application/json',
      Accept: 'application/json',
      Authorization: 'Bearer x',
      'X-Api-Key': 'k',
    });
  });

  it.each([
    ['telegram without chats', 'telegram://1:abc@telegram', 'names no chats'],
    [
      'telegram with a malformed token',
      'telegram://abc@telegram?chats=@x',
      'telegram://<bot id>:<bot token>@telegram',
    ],
    ['discord without its token', 'discord://123456', 'discord://<token>@<webhook id>'],
    ['discord raw JSON', 'discord://t@1/raw', 'not raw JSON'],
    ['mattermost without a token', 'mattermost://chat.example.com', 'mattermost://[user@]host/token'],
    [
      'rocketchat with one token',
      'rocketchat://rc.example.com/tokA',
      'rocketchat://[user@]host/tokenA/tokenB',
    ],
    ['gotify with a bad priority', 'gotify://g.example.com/Atoken?priority=high', '?priority=high'],
    ['pushover without its API token', 'pushover://userkey/', 'pushover://shoutrrr:<api token>@<user key>/'],
    [
      'googlechat without its key',
      'googlechat://chat.googleapis.com/v1/spaces/A/messages?token=t',
      '?key=…&token=…',
    ],
    ['generic with a Go template', 'generic://h.example.com/x?template=mine', 'template=json or none'],
    [
      'a yes/no that is neither',
      'gotify://g.example.com/Atoken?disabletls=maybe',
      '?disabletls=maybe is not yes or no',
    ],
    [
      'smtp without a recipient',
      'smtp://mail.example.com:25/?from=kured@example.com',
      'smtp://[user:password@]host[:port]/?from=…&to=…',
    ],
    [
      'smtp with OAuth2',
      'smtp://u:p@mail.example.com/?from=a@x&to=b@x&auth=OAuth2',
      'OAuth2 is not supported',
    ],
  ])('refuses %s, saying what it needs', (_name, url, message) => {
    expect(() => parseNotifyUrl(url)).toThrow(message);
  });

  it.each([
    [
      'port 465 is TLS from the start',
      'smtp://u:p@mail.example.com:465/?from=a@x&to=b@x',
      { secure: true, startTls: 'never' },
    ],
    [
      'port 587 upgrades with STARTTLS when offered',
      'smtp://mail.example.com:587/?from=a@x&to=b@x',
      { secure: false, startTls: 'offered' },
    ],
    [
      'ExplicitTLS requires STARTTLS',
      'smtp://mail.example.com/?from=a@x&to=b@x&encryption=ExplicitTLS',
      { secure: false, startTls: 'require' },
    ],
    [
      'usestarttls=no never upgrades',
      'smtp://mail.example.com/?from=a@x&to=b@x&usestarttls=no',
      { secure: false, startTls: 'never' },
    ],
  ])('smtp: %s', (_name, url, expected) => {
    const target = parseNotifyUrl(url);
    expect('smtp' in target ? target.smtp : undefined).toMatchObject(expected);
  });

  it('never repeats a token in its error', () => {
    expect(() => parseNotifyUrl('telegram://1:supersecret@telegram')).toThrow(
      'notify URL telegram://telegram/<redacted>',
    );
    expect(() => parseNotifyUrl('telegram://1:supersecret@telegram')).not.toThrow(/supersecret/);
  });
});
