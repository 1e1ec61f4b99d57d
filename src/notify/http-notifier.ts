// Delivery for every notifier kind: one JSON POST, a hard timeout per attempt, bounded retries.
import { DeadlineError, httpText } from '../http/request.js';
import type { Clock } from '../clock/clock.js';
import type { Logger } from '../log/logger.js';
import type { Notifier, NotifyEvent } from './notifier.js';
import { redactUrl } from './notify-url.js';

/** Builds the request body of one notification. */
export type PayloadBuilder = (event: NotifyEvent, node: string, message: string, time: Date) => object;

export interface HttpNotifierOptions {
  /** Where to POST. Secret: only ever logged through redactUrl. */
  endpoint: string;
  /** Service name for log lines: 'slack', 'teams', 'webhook'. */
  kind: string;
  payload: PayloadBuilder;
  logger: Logger;
  clock: Clock;
  /** Bound on each attempt (connect + response). */
  timeoutMs: number;
  /** Further attempts after a failure that may be transient (network, timeout, 429, 5xx). */
  retries: number;
  /** Pause between attempts. */
  retryDelayMs: number;
}

/**
 * Posts the payload; never throws. The worst case is (retries + 1) × timeoutMs + retries × retryDelayMs
 * (with the defaults 5 s, 1 retry, 1 s: 11 s), after which the failure is logged and given up.
 */
export class HttpNotifier implements Notifier {
  constructor(private readonly options: HttpNotifierOptions) {}

  async notify(event: NotifyEvent, node: string, message: string): Promise<void> {
    try {
      await this.deliver(event, node, message);
    } catch (err: unknown) {
      // Nothing above should throw; a notification must never stop a reboot, whatever happens.
      this.options.logger.warn('notification failed', {
        kind: this.options.kind,
        url: redactUrl(this.options.endpoint),
        event,
        node,
        error: this.scrub(describe(err)),
      });
    }
  }

  private async deliver(event: NotifyEvent, node: string, message: string): Promise<void> {
    const { logger, retries, kind } = this.options;
    const url = redactUrl(this.options.endpoint);
    const body = this.options.payload(event, node, message, this.options.clock.now());
    for (let attempt = 1; ; attempt++) {
      const failure = await this.post(body);
      if (failure === undefined) {
        logger.debug('notification sent', { kind, url, event, node, attempt });
        return;
      }
      if (!failure.retry || attempt > retries) {
        logger.warn('notification failed', {
          kind,
          url,
          event,
          node,
          attempts: attempt,
          error: failure.error,
        });
        return;
      }
      logger.debug('notification attempt failed, retrying', {
        kind,
        url,
        event,
        node,
        attempt,
        error: failure.error,
      });
      await this.options.clock.sleep(this.options.retryDelayMs);
    }
  }

  /** undefined = delivered. */
  private async post(body: object): Promise<{ error: string; retry: boolean } | undefined> {
    const { endpoint, timeoutMs } = this.options;
    try {
      const { status } = await httpText(endpoint, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
        deadlineMs: timeoutMs,
        maxBytes: MAX_ANSWER_BYTES,
      });
      if (status >= 200 && status < 300) return undefined;
      return { error: `HTTP ${status}`, retry: status === 429 || status >= 500 };
    } catch (err: unknown) {
      if (err instanceof DeadlineError) return { error: `timed out after ${timeoutMs}ms`, retry: true };
      return { error: this.scrub(describe(err)), retry: true };
    }
  }

  /** Error texts may quote the URL (path and query hold the secrets). */
  private scrub(text: string): string {
    const { endpoint } = this.options;
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
}

/** A webhook's answer is not read beyond this (only its status matters). */
const MAX_ANSWER_BYTES = 64 * 1024;

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && !err.message.includes(code) ? `${code}: ${err.message}` : err.message;
}
