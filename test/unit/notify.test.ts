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
    const target = parseNotifyUrl(url);
    expect(target.kind).toBe(kind);
    expect(target.endpoint).toBe(endpoint);
  });

  it.each([
    ['not a URL', 'hooks.slack.com/services/a/b/c', 'is not a URL'],
    ['an unknown scheme', 'smtp://user:pw@mail.example.com/?to=ops@example.com', 'unsupported scheme smtp:'],
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

  it('uses the Slack base URL override', () => {
    expect(
      parseNotifyUrl(`slack://${T}/${B}/${X}`, { slackBaseUrl: 'http://127.0.0.1:1234/' }).endpoint,
    ).toBe(`http://127.0.0.1:1234/services/${T}/${B}/${X}`);
  });
});

describe('payloads', () => {
  const at = new Date('2026-01-05T10:00:00Z');
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
    expect(parseNotifyUrl(url).payload('drain', 'n1', 'Draining node n1', at)).toEqual(expected);
  });

  it('builds a Teams message with one Adaptive Card', () => {
    expect(
      parseNotifyUrl('teams://g@t/a/o?host=c.webhook.office.com').payload(
        'reboot',
        'n1',
        'Rebooting node n1',
        at,
      ),
    ).toEqual({
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
