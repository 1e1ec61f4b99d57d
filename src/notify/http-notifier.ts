// Delivery for every service reached over HTTP: each request of a notification with a hard timeout
// per attempt and bounded retries, through HTTP(S)_PROXY when set.
import { DeadlineError, httpText } from '../http/request.js';
import type { ProxySettings } from '../http/proxy.js';
import type { Clock } from '../clock/clock.js';
import type { Logger } from '../log/logger.js';
import type { Notifier, NotifyEvent } from './notifier.js';
import { redactUrl } from './notify-url.js';
import type { HttpTarget, NotifyRequest } from './target.js';

export interface HttpNotifierOptions {
  target: HttpTarget;
  logger: Logger;
  clock: Clock;
  /** Bound on each attempt (connect + response). */
  timeoutMs: number;
  /** Further attempts after a failure that may be transient (network, timeout, 429, 5xx). */
  retries: number;
  /** Pause between attempts. */
  retryDelayMs: number;
  proxy?: ProxySettings;
  /** Replaces the scheme, host and port of every request (tests). */
  baseUrl?: string;
}

/**
 * Sends the requests of a notification one after the other; never throws. The worst case per
 * request is (retries + 1) × timeoutMs + retries × retryDelayMs (with the defaults 5 s, 1 retry,
 * 1 s: 11 s), after which the failure is logged and given up.
 */
export class HttpNotifier implements Notifier {
  constructor(private readonly options: HttpNotifierOptions) {}

  async notify(event: NotifyEvent, node: string, message: string): Promise<void> {
    const { target, clock, logger } = this.options;
    let requests: NotifyRequest[];
    try {
      requests = target.requests({ event, node, message, time: clock.now() });
    } catch (err: unknown) {
      logger.warn('notification failed', { kind: target.kind, event, node, error: describe(err) });
      return;
    }
    for (const request of requests) await this.deliver(this.rebased(request), event, node);
  }

  private rebased(request: NotifyRequest): NotifyRequest {
    const { baseUrl } = this.options;
    if (baseUrl === undefined) return request;
    const url = new URL(request.url);
    return { ...request, url: `${baseUrl.replace(/\/+$/, '')}${url.pathname}${url.search}` };
  }

  private async deliver(request: NotifyRequest, event: NotifyEvent, node: string): Promise<void> {
    const { logger, retries, target } = this.options;
    const fields = { kind: target.kind, url: redactUrl(request.url), event, node };
    for (let attempt = 1; ; attempt++) {
      const failure = await this.send(request);
      if (failure === undefined) {
        logger.debug('notification sent', { ...fields, attempt });
        return;
      }
      if (!failure.retry || attempt > retries) {
        logger.warn('notification failed', { ...fields, attempts: attempt, error: failure.error });
        return;
      }
      logger.debug('notification attempt failed, retrying', { ...fields, attempt, error: failure.error });
      await this.options.clock.sleep(this.options.retryDelayMs);
    }
  }

  /** undefined = delivered. */
  private async send(request: NotifyRequest): Promise<{ error: string; retry: boolean } | undefined> {
    const { timeoutMs, proxy } = this.options;
    try {
      const { status } = await httpText(request.url, {
        method: request.method,
        headers: request.headers,
        body: request.body,
        deadlineMs: timeoutMs,
        maxBytes: MAX_ANSWER_BYTES,
        ...(proxy === undefined ? {} : { proxy }),
      });
      if (status >= 200 && status < 300) return undefined;
      return { error: `HTTP ${status}`, retry: status === 429 || status >= 500 };
    } catch (err: unknown) {
      if (err instanceof DeadlineError) return { error: `timed out after ${timeoutMs}ms`, retry: true };
      return { error: scrub(describe(err), request.url), retry: true };
    }
  }
}

/** Error texts may quote the URL (path and query hold the secrets). */
function scrub(text: string, endpoint: string): string {
  let out = text.split(endpoint).join(redactUrl(endpoint));
  try {
    const { pathname, search } = new URL(endpoint);
    if (pathname.length > 1) out = out.split(pathname).join('/<redacted>');
    if (search !== '') out = out.split(search).join('');
  } catch {
    // not a URL: nothing more to hide than the whole string, done above
  }
  return out;
}

/** A service's answer is not read beyond this (only its status matters). */
const MAX_ANSWER_BYTES = 64 * 1024;

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && !err.message.includes(code) ? `${code}: ${err.message}` : err.message;
}
