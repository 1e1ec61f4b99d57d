// The notifier registry: the --notify-url's scheme picks the service (shoutrrr's URL forms, as kured
// users have them), any other http(s) URL is a JSON webhook.
import { SystemClock, type Clock } from '../clock/clock.js';
import type { ProxySettings } from '../http/proxy.js';
import type { Logger } from '../log/logger.js';
import { errorText } from '../text/error-text.js';
import { discordTarget } from './discord.js';
import { genericTarget } from './generic.js';
import { googlechatTarget } from './googlechat.js';
import { gotifyTarget } from './gotify.js';
import { HttpNotifier } from './http-notifier.js';
import { mattermostTarget } from './mattermost.js';
import { silentNotifier, type Notifier } from './notifier.js';
import { redactUrl, stripQuotes } from './notify-url.js';
import { pushoverTarget } from './pushover.js';
import { rocketchatTarget } from './rocketchat.js';
import { parseSlackUrl, slackTarget } from './slack.js';
import { parseSmtpUrl, SmtpNotifier, type SmtpTarget } from './smtp.js';
import type { HttpTarget } from './target.js';
import { isTeamsWebhookUrl, teamsEndpoint, teamsTarget } from './teams.js';
import { telegramTarget } from './telegram.js';
import { webhookTarget } from './webhook.js';

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
  /** HTTP(S)_PROXY and NO_PROXY for the HTTP services. Default none. */
  proxy?: ProxySettings;
  /** Replaces the scheme, host and port of every HTTP request, e.g. api.telegram.org (tests). */
  baseUrl?: string;
}

/** The service a notify URL addresses: over HTTP, or by mail. */
export type NotifyTarget = { http: HttpTarget } | { smtp: SmtpTarget };

/** shoutrrr's schemes kured-ts sends to, by URL scheme. */
const SERVICES: Record<string, (url: URL) => HttpTarget> = {
  'slack:': (url) => slackTarget(parseSlackUrl(url)),
  'teams:': (url) => teamsTarget(teamsEndpoint(url)),
  'telegram:': telegramTarget,
  'discord:': discordTarget,
  'mattermost:': mattermostTarget,
  'rocketchat:': rocketchatTarget,
  'gotify:': gotifyTarget,
  'pushover:': pushoverTarget,
  'googlechat:': googlechatTarget,
  'generic:': genericTarget,
  'generic+http:': genericTarget,
  'generic+https:': genericTarget,
};

/** The schemes as listed in errors and docs. */
const NOTIFY_SCHEMES = [...Object.keys(SERVICES), 'smtp:', 'https:', 'http:'];

/**
 * Which service a notify URL addresses. Throws (naming the redacted URL) on a form we cannot send to,
 * so that the CLI can refuse it at start instead of failing at the first reboot.
 */
export function parseNotifyUrl(raw: string): NotifyTarget {
  const value = stripQuotes(raw.trim());
  let url: URL;
  try {
    url = new URL(value);
  } catch (err: unknown) {
    throw new Error(`notify URL ${redactUrl(value)} is not a URL`, { cause: err });
  }
  try {
    return targetOf(url, value);
  } catch (err: unknown) {
    throw new Error(`notify URL ${redactUrl(value)}: ${errorText(err)}`, { cause: err });
  }
}

function targetOf(url: URL, value: string): NotifyTarget {
  const protocol = url.protocol.toLowerCase();
  const service = SERVICES[protocol];
  if (service !== undefined) return { http: service(url) };
  if (protocol === 'smtp:') return { smtp: parseSmtpUrl(url) };
  if (protocol === 'https:' || protocol === 'http:') return { http: httpTarget(url, value) };
  throw new Error(
    `unsupported scheme ${url.protocol} (use ${NOTIFY_SCHEMES.map((s) => `${s}//`).join(', ')})`,
  );
}

function httpTarget(url: URL, value: string): HttpTarget {
  if (url.hostname.toLowerCase() === 'hooks.slack.com') return slackTarget({ endpoint: value });
  if (isTeamsWebhookUrl(url)) return teamsTarget(value);
  return webhookTarget(value);
}

/** Each attempt's bound, the retries and their pause: the options or the defaults. */
function delivery(options: NotifierOptions): { timeoutMs: number; retries: number; retryDelayMs: number } {
  return {
    timeoutMs: options.timeoutMs ?? 5000,
    retries: options.retries ?? 1,
    retryDelayMs: options.retryDelayMs ?? 1000,
  };
}

/**
 * The notifier for --notify-url ('' = silent). Its notify() never throws and is bounded in time.
 * Throws at creation when the URL cannot be used.
 */
export function createNotifier(url: string, options: NotifierOptions): Notifier {
  const value = url.trim();
  if (value === '' || value === '""' || value === "''") return silentNotifier;
  const target = parseNotifyUrl(url);
  const common = {
    logger: options.logger,
    clock: options.clock ?? new SystemClock(),
    ...delivery(options),
  };
  if ('smtp' in target) return new SmtpNotifier({ ...common, target: target.smtp });
  return new HttpNotifier({
    ...common,
    target: target.http,
    ...(options.proxy === undefined ? {} : { proxy: options.proxy }),
    ...(options.baseUrl === undefined ? {} : { baseUrl: options.baseUrl }),
  });
}
