// Alertmanager's silences API (v2), as --alertmanager-url names it: the list of silences, and a
// silence created or updated (a POST with its id updates it; Alertmanager may answer a new id, which
// is the one to keep). One deadline over each exchange, a bound on the answer's size, HTTP(S)_PROXY
// honoured, and the answer checked field by field.
import type { ProxySettings } from '../http/proxy.js';
import { httpText } from '../http/request.js';
import type { Matcher } from './matchers.js';

/** An answer larger than this is refused (thousands of silences fit in it). */
const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/** A silence as written. */
export interface SilenceBody {
  id?: string;
  matchers: Matcher[];
  startsAt: string;
  endsAt: string;
  createdBy: string;
  comment: string;
}

/** A silence as Alertmanager lists it. */
export interface Silence extends SilenceBody {
  id: string;
  /** 'active', 'pending' or 'expired'. */
  state: string;
}

/** What the agent asks of Alertmanager (a hand-written fake in tests, AlertmanagerClient for real). */
export interface SilenceApi {
  list(signal?: AbortSignal): Promise<Silence[]>;
  /** Creates or updates `silence`; the id Alertmanager now gives it. */
  save(silence: SilenceBody, signal?: AbortSignal): Promise<string>;
}

export interface AlertmanagerOptions {
  /** --alertmanager-url, e.g. http://alertmanager.monitoring:9093 (a path prefix is kept). */
  url: string;
  /** Bound on one exchange. Default 10 s. */
  timeoutMs?: number;
  proxy?: ProxySettings;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function matcherOf(value: unknown): Matcher {
  if (!isRecord(value) || typeof value.name !== 'string' || typeof value.value !== 'string')
    throw new Error('a matcher without name or value');
  return {
    name: value.name,
    value: value.value,
    isRegex: value.isRegex === true,
    isEqual: value.isEqual !== false,
  };
}

/** One listed silence, checked; throws on a field of the wrong type. */
function silenceOf(value: unknown): Silence {
  if (!isRecord(value)) throw new Error('a silence that is not an object');
  const { id, matchers, startsAt, endsAt, createdBy, comment, status } = value;
  if (
    typeof id !== 'string' ||
    !Array.isArray(matchers) ||
    typeof startsAt !== 'string' ||
    typeof endsAt !== 'string' ||
    typeof createdBy !== 'string' ||
    typeof comment !== 'string' ||
    !isRecord(status) ||
    typeof status.state !== 'string'
  )
    throw new Error('a silence without its id, matchers, times, author, comment or state');
  return { id, matchers: matchers.map(matcherOf), startsAt, endsAt, createdBy, comment, state: status.state };
}

export class AlertmanagerClient implements SilenceApi {
  constructor(private readonly o: AlertmanagerOptions) {}

  async list(signal?: AbortSignal): Promise<Silence[]> {
    const body = JSON.parse(await this.call('GET', 'api/v2/silences', undefined, signal)) as unknown;
    if (!Array.isArray(body)) throw new Error('Alertmanager answered a list of silences that is not a list');
    return body.map(silenceOf);
  }

  async save(silence: SilenceBody, signal?: AbortSignal): Promise<string> {
    const body = JSON.parse(await this.call('POST', 'api/v2/silences', silence, signal)) as unknown;
    if (!isRecord(body) || typeof body.silenceID !== 'string')
      throw new Error('Alertmanager answered a saved silence without its silenceID');
    return body.silenceID;
  }

  private async call(method: string, path: string, payload: unknown, signal?: AbortSignal): Promise<string> {
    const base = this.o.url.endsWith('/') ? this.o.url : `${this.o.url}/`;
    const url = new URL(path, base);
    const { status, text } = await httpText(url.toString(), {
      method,
      headers: {
        Accept: 'application/json',
        ...(payload === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      ...(payload === undefined ? {} : { body: JSON.stringify(payload) }),
      deadlineMs: this.o.timeoutMs ?? 10_000,
      maxBytes: MAX_ANSWER_BYTES,
      ...(signal === undefined ? {} : { signal }),
      ...(this.o.proxy === undefined ? {} : { proxy: this.o.proxy }),
    });
    if (status >= 200 && status < 300) return text;
    throw new Error(
      `HTTP ${status} from ${url.origin}${url.pathname}${text === '' ? '' : `: ${text.slice(0, 120)}`}`,
    );
  }
}
