// The FleetLock client over HTTP: each request with a deadline, transient failures retried a bounded
// number of times with jittered exponential back-off, a server's refusal returned at once as data.
import type { Clock } from '../clock/clock.js';
import type { ProxySettings } from '../http/proxy.js';
import { DeadlineError, httpText, type TextRequest } from '../http/request.js';
import { errorText } from '../text/error-text.js';
import {
  FLEETLOCK_HEADER,
  FLEETLOCK_PATHS,
  fleetLockBody,
  type FleetLock,
  type FleetLockAnswer,
} from './fleetlock.js';

/** One HTTP exchange (httpText in production; the simulator and tests inject their own). */
export type HttpExchange = (url: string, request: TextRequest) => Promise<{ status: number; text: string }>;

export interface HttpFleetLockOptions {
  /** The server's base URL (--fleetlock-url), without the /v1/… path. */
  url: string;
  /** --fleetlock-group. */
  group: string;
  /** This node's id at the server: the node's name. */
  id: string;
  clock: Clock;
  /** [0, 1), for the back-off's jitter. */
  random: () => number;
  /** Default httpText. */
  exchange?: HttpExchange;
  /** Bound on each request (connect, send, the whole answer). Default FLEETLOCK_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Requests per call, the first included, while failures are transient. Default FLEETLOCK_ATTEMPTS. */
  attempts?: number;
  /** The first back-off; doubled after each failure, up to 8 times it. Default FLEETLOCK_BACKOFF_MS. */
  backoffMs?: number;
  /** HTTP(S)_PROXY and NO_PROXY. Default none (direct). */
  proxy?: ProxySettings;
}

/** Bound on one request. */
const FLEETLOCK_TIMEOUT_MS = 5_000;
/** Requests per call while the failures are transient (no answer, 5xx, 429, an unreadable answer). */
const FLEETLOCK_ATTEMPTS = 3;
/** The first pause between attempts (then 2×, 4×, … up to 8×, each jittered ±50%). */
const FLEETLOCK_BACKOFF_MS = 1_000;
/** A server's answer is not read beyond this. */
const MAX_ANSWER_BYTES = 16 * 1024;

/** One request's result: an answer to return, or a transient failure worth another attempt. */
type Attempt = { done: FleetLockAnswer } | { retry: { kind: string; reason: string } };

/**
 * Worst case per call: attempts × timeoutMs + the back-offs (defaults: 3 × 5 s + 1.5 s + 3 s ≈ 20 s),
 * after which the answer is `granted: false` with the last failure as its reason.
 */
export class HttpFleetLock implements FleetLock {
  readonly url: string;
  readonly group: string;

  constructor(private readonly options: HttpFleetLockOptions) {
    this.url = options.url.replace(/\/+$/, '');
    this.group = options.group;
  }

  preReboot(signal: AbortSignal | undefined): Promise<FleetLockAnswer> {
    return this.call(FLEETLOCK_PATHS.preReboot, signal);
  }

  steadyState(signal: AbortSignal | undefined): Promise<FleetLockAnswer> {
    return this.call(FLEETLOCK_PATHS.steadyState, signal);
  }

  private async call(path: string, signal: AbortSignal | undefined): Promise<FleetLockAnswer> {
    const attempts = Math.max(1, this.options.attempts ?? FLEETLOCK_ATTEMPTS);
    const base = this.options.backoffMs ?? FLEETLOCK_BACKOFF_MS;
    let last = { kind: 'unreachable', reason: '' };
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (attempt > 1) {
        const backoff = base * 2 ** Math.min(attempt - 2, 3);
        await this.options.clock.sleep(backoff * (0.5 + this.options.random()), signal);
      }
      const result = await this.once(path, signal);
      if ('done' in result) return withAttempts(result.done, attempt);
      last = result.retry;
    }
    return { granted: false, kind: last.kind, reason: `${last.reason} (${attempts} attempts)`, attempts };
  }

  private async once(path: string, signal: AbortSignal | undefined): Promise<Attempt> {
    const { id, group, proxy } = this.options;
    const timeoutMs = this.options.timeoutMs ?? FLEETLOCK_TIMEOUT_MS;
    const exchange = this.options.exchange ?? httpText;
    let answer: { status: number; text: string };
    try {
      answer = await exchange(`${this.url}${path}`, {
        method: 'POST',
        headers: { [FLEETLOCK_HEADER]: 'true', 'Content-Type': 'application/json' },
        body: fleetLockBody(id, group),
        deadlineMs: timeoutMs,
        maxBytes: MAX_ANSWER_BYTES,
        ...(signal === undefined ? {} : { signal }),
        ...(proxy === undefined ? {} : { proxy }),
      });
    } catch (err) {
      if (signal?.aborted === true) throw err;
      const what = err instanceof DeadlineError ? `no answer within ${timeoutMs} ms` : errorText(err);
      return { retry: { kind: 'unreachable', reason: `fleetlock: no answer from ${this.url}: ${what}` } };
    }
    return judge(answer);
  }
}

/** A server's answer: 200 grants; an error body names its kind; 5xx and 429 are worth another try. */
function judge(answer: { status: number; text: string }): Attempt {
  const { status, text } = answer;
  if (status === 200) return { done: { granted: true } };
  const error = errorBody(text);
  const transient = status >= 500 || status === 429;
  const kind = error?.kind ?? 'bad-answer';
  const detail = error === undefined ? `HTTP ${status} without a FleetLock error body` : error.value;
  const reason = `fleetlock: ${kind}: ${detail}${transient && error !== undefined ? ` (HTTP ${status})` : ''}`;
  if (transient) return { retry: { kind, reason } };
  return { done: { granted: false, kind, reason, attempts: 1 } };
}

/** `{"kind":"…","value":"…"}`, or undefined when the body is not that. */
function errorBody(text: string): { kind: string; value: string } | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof body !== 'object' || body === null) return undefined;
  const { kind, value } = body as { kind?: unknown; value?: unknown };
  if (typeof kind !== 'string' || kind === '') return undefined;
  return { kind, value: typeof value === 'string' ? value : JSON.stringify(value ?? '') };
}

function withAttempts(answer: FleetLockAnswer, attempts: number): FleetLockAnswer {
  return answer.granted ? answer : { ...answer, attempts };
}
