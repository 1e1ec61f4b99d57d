// The notifier registry: the --notify-url's form picks Slack, Teams or a generic JSON webhook.
import { SystemClock, type Clock } from '../clock/clock.js';
import type { Logger } from '../log/logger.js';
import { HttpNotifier, type PayloadBuilder } from './http-notifier.js';
import { silentNotifier, type Notifier } from './notifier.js';
import { redactUrl, stripQuotes } from './notify-url.js';
import { parseSlackUrl, slackPayload } from './slack.js';
import { isTeamsWebhookUrl, teamsEndpoint, teamsPayload } from './teams.js';
import { webhookPayload } from './webhook.js';
import { errorText } from '../text/error-text.js';

export { redactUrl, slackHookUrlToNotifyUrl, stripQuotes } from './notify-url.js';
export { renderMessage } from './message.js';

export interface NotifierOptions {
  logger: Logger;
  /** Bound on each attempt. Default 5000 ms. */
  timeoutMs?: number;
  /** Further attempts after a transient failure. Default 1. */
  retries?: number;
  /** Pause between attempts. Default 1000 ms. */
  retryDelayMs?: number;
  /** Timestamps of generic webhook payloads and retry pauses. Default the system clock. */
  clock?: Clock;
  /** Replaces https://hooks.slack.com for slack:// URLs (tests). */
  slackBaseUrl?: string;
  /** Replaces https://<host> for teams:// URLs (tests). */
  teamsBaseUrl?: string;
}

/** The service a notify URL addresses, and what to post where. */
export interface NotifyTarget {
  kind: 'slack' | 'teams' | 'webhook';
  endpoint: string;
  payload: PayloadBuilder;
}

/**
 * Which service a notify URL addresses. Throws (naming the redacted URL) on a form we cannot send to,
 * so that the CLI can refuse it at start instead of failing at the first reboot.
 */
export function parseNotifyUrl(
  raw: string,
  options: Pick<NotifierOptions, 'slackBaseUrl' | 'teamsBaseUrl'> = {},
): NotifyTarget {
  const value = stripQuotes(raw.trim());
  let url: URL;
  try {
    url = new URL(value);
  } catch (err: unknown) {
    throw new Error(`notify URL ${redactUrl(value)} is not a URL`, { cause: err });
  }
  try {
    return targetOf(url, value, options);
  } catch (err: unknown) {
    throw new Error(`notify URL ${redactUrl(value)}: ${errorText(err)}`, {
      cause: err,
    });
  }
}

function targetOf(
  url: URL,
  value: string,
  options: Pick<NotifierOptions, 'slackBaseUrl' | 'teamsBaseUrl'>,
): NotifyTarget {
  switch (url.protocol) {
    case 'slack:': {
      const target = parseSlackUrl(url, options.slackBaseUrl);
      return {
        kind: 'slack',
        endpoint: target.endpoint,
        payload: (_e, _n, message) => slackPayload(target, message),
      };
    }
    case 'teams:':
      return {
        kind: 'teams',
        endpoint: teamsEndpoint(url, options.teamsBaseUrl),
        payload: (_e, _n, m) => teamsPayload(m),
      };
    case 'https:':
    case 'http:':
      return httpTarget(url, value);
    default:
      throw new Error(`unsupported scheme ${url.protocol} (use slack://, teams://, https:// or http://)`);
  }
}

function httpTarget(url: URL, value: string): NotifyTarget {
  if (url.hostname.toLowerCase() === 'hooks.slack.com') {
    return {
      kind: 'slack',
      endpoint: value,
      payload: (_e, _n, message) => slackPayload({ endpoint: value }, message),
    };
  }
  if (isTeamsWebhookUrl(url))
    return { kind: 'teams', endpoint: value, payload: (_e, _n, m) => teamsPayload(m) };
  return { kind: 'webhook', endpoint: value, payload: webhookPayload };
}

/**
 * The notifier for --notify-url ('' = silent). Its notify() never throws and is bounded in time
 * (see HttpNotifier). Throws at creation when the URL cannot be used.
 */
export function createNotifier(url: string, options: NotifierOptions): Notifier {
  const value = url.trim();
  if (value === '' || value === '""' || value === "''") return silentNotifier;
  const target = parseNotifyUrl(url, options);
  return new HttpNotifier({
    endpoint: target.endpoint,
    kind: target.kind,
    payload: target.payload,
    logger: options.logger,
    clock: options.clock ?? new SystemClock(),
    timeoutMs: options.timeoutMs ?? 5000,
    retries: options.retries ?? 1,
    retryDelayMs: options.retryDelayMs ?? 1000,
  });
}
