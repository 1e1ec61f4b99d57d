// E-mail over SMTP: shoutrrr's `smtp://[user:password@]host[:port]/?from=…&to=a,b[&subject=…]
// [&encryption=None|ExplicitTLS|ImplicitTLS|Auto][&usestarttls=no][&auth=None|Plain|CRAMMD5]
// [&fromname=…][&clienthost=…]`, sent with nodemailer, which is loaded only when an smtp:// URL is
// used (CONTRIBUTING.md, "Dependencies": it costs about 4 MB of memory when loaded).
import type { Clock } from '../clock/clock.js';
import type { Logger } from '../log/logger.js';
import { errorText } from '../text/error-text.js';
import type { Notifier, NotifyEvent } from './notifier.js';
import { flag, param, userInfo } from './target.js';

/** Where and how to send the mail. */
export interface SmtpTarget {
  host: string;
  port: number;
  /** TLS from the first byte (port 465, or encryption=ImplicitTLS). */
  secure: boolean;
  /** STARTTLS: 'require' (ExplicitTLS), 'never' (None, or usestarttls=no), or when offered. */
  startTls: 'require' | 'never' | 'offered';
  auth?: { user: string; pass: string; method?: 'PLAIN' | 'CRAM-MD5' };
  from: string;
  to: string[];
  subject: string;
  clientHost: string;
}

const ENCRYPTIONS = ['none', 'explicittls', 'implicittls', 'auto'];

function auth(url: URL): SmtpTarget['auth'] {
  const { user, password } = userInfo(url);
  const method = param(url, 'auth').toLowerCase();
  if (method === 'oauth2') throw new Error('?auth=OAuth2 is not supported (use Plain or CRAMMD5)');
  if (!['', 'unknown', 'none', 'plain', 'crammd5'].includes(method)) {
    throw new Error(`?auth=${method} is not None, Plain or CRAMMD5`);
  }
  if (method === 'none' || user === '') return undefined;
  const named = method === 'plain' ? 'PLAIN' : method === 'crammd5' ? 'CRAM-MD5' : undefined;
  return { user, pass: password, ...(named === undefined ? {} : { method: named }) };
}

/** Sender and recipients; shoutrrr turns a space (a decoded +) back into + (tagged addresses). */
function addresses(url: URL): { from: string; to: string[] } {
  const from = param(url, 'fromaddress', 'from').replace(/ /g, '+');
  const to = param(url, 'toaddresses', 'to')
    .split(',')
    .map((a) => a.trim().replace(/ /g, '+'))
    .filter((a) => a !== '');
  if (url.hostname === '' || from === '' || to.length === 0) {
    throw new Error('smtp notify URL must be smtp://[user:password@]host[:port]/?from=…&to=…');
  }
  const fromName = param(url, 'fromname');
  return { from: fromName === '' ? from : `"${fromName.replace(/"/g, '')}" <${from}>`, to };
}

/** shoutrrr's encryption: Auto is TLS from the start on port 465, else STARTTLS when offered. */
function encryption(url: URL, port: number): Pick<SmtpTarget, 'secure' | 'startTls'> {
  const method = (param(url, 'encryption') || 'auto').toLowerCase();
  if (!ENCRYPTIONS.includes(method)) {
    throw new Error(`?encryption=${method} is not None, ExplicitTLS, ImplicitTLS or Auto`);
  }
  if (method === 'implicittls' || (method === 'auto' && port === 465))
    return { secure: true, startTls: 'never' };
  if (method === 'explicittls') return { secure: false, startTls: 'require' };
  const never = method === 'none' || !flag(url, 'usestarttls', true);
  return { secure: false, startTls: never ? 'never' : 'offered' };
}

export function parseSmtpUrl(url: URL): SmtpTarget {
  const port = url.port === '' ? 25 : Number(url.port);
  const credentials = auth(url);
  return {
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port,
    ...encryption(url, port),
    ...addresses(url),
    subject: param(url, 'subject', 'title') || 'kured-ts',
    clientHost: param(url, 'clienthost') || 'localhost',
    ...(credentials === undefined ? {} : { auth: credentials }),
  };
}

export interface SmtpNotifierOptions {
  target: SmtpTarget;
  logger: Logger;
  clock: Clock;
  /** Bound on each attempt (connect, greeting, every reply). */
  timeoutMs: number;
  /** Further attempts after a failure. */
  retries: number;
  retryDelayMs: number;
}

type Send = (to: string, message: string) => Promise<void>;

/** One mail per recipient (they do not see each other), as shoutrrr sends them; never throws. */
export class SmtpNotifier implements Notifier {
  private send: Promise<Send> | undefined;

  constructor(private readonly options: SmtpNotifierOptions) {}

  async notify(event: NotifyEvent, node: string, message: string): Promise<void> {
    const { logger, target } = this.options;
    for (const to of target.to) {
      const error = await this.deliver(to, message);
      const fields = { kind: 'smtp', url: `smtp://${target.host}:${target.port}`, event, node, to };
      if (error === undefined) logger.debug('notification sent', fields);
      else logger.warn('notification failed', { ...fields, error });
    }
  }

  /** undefined = sent. */
  private async deliver(to: string, message: string): Promise<string | undefined> {
    let error = '';
    for (let attempt = 0; attempt <= this.options.retries; attempt++) {
      if (attempt > 0) await this.options.clock.sleep(this.options.retryDelayMs);
      try {
        this.send ??= this.transport();
        await (
          await this.send
        )(to, message);
        return undefined;
      } catch (err: unknown) {
        error = errorText(err);
      }
    }
    return error;
  }

  private async transport(): Promise<Send> {
    const { target, timeoutMs } = this.options;
    const nodemailer = (await import('nodemailer')).default;
    const transport = nodemailer.createTransport({
      host: target.host,
      port: target.port,
      secure: target.secure,
      requireTLS: target.startTls === 'require',
      ignoreTLS: target.startTls === 'never',
      name: target.clientHost,
      connectionTimeout: timeoutMs,
      greetingTimeout: timeoutMs,
      socketTimeout: timeoutMs,
      ...(target.auth === undefined
        ? {}
        : {
            auth: { user: target.auth.user, pass: target.auth.pass },
            ...(target.auth.method === undefined ? {} : { authMethod: target.auth.method }),
          }),
    });
    return async (to, message) => {
      // the timeouts above bound each wait; this bounds a server that answers slowly but steadily
      const sent = transport.sendMail({ from: target.from, to, subject: target.subject, text: message });
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => {
          reject(new Error(`no answer within ${4 * timeoutMs} ms`));
        }, 4 * timeoutMs);
      });
      try {
        await Promise.race([sent, deadline]);
      } finally {
        clearTimeout(timer);
        sent.catch(() => undefined);
      }
    };
  }
}
