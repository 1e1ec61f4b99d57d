// Plain HTTP requests with one overall deadline and a bound on the answer's size: what the
// Prometheus blocker and the notifiers send, and the building blocks of the API server transport.
//
// Written on node:http rather than with axios or fetch for memory, which every node of the fleet
// pays: loading axios costs about 14 MB of resident memory, Node's fetch (undici) about 11 MB,
// node:http and node:https about 3 MB (CONTRIBUTING.md, "Dependencies"). And for the two bounds an
// agent needs from a server it does not control: axios' `timeout` is reset by every byte (a response
// dripping one byte a second never times out), and neither bounds the body by default.
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import { abortReason } from '../clock/clock.js';
import { proxyAgent, type ProxySettings } from './proxy.js';

/** No complete answer within the deadline. */
export class DeadlineError extends Error {
  override readonly name = 'TimeoutError';
}

/** The answer was larger than allowed; the connection was dropped. */
export class TooLargeError extends Error {
  override readonly name = 'TooLargeError';
}

/**
 * A signal that aborts with `parent` or, with a DeadlineError, after `ms`. dispose() when done: it
 * removes the listener and the timer (a long-lived parent collects nothing per request).
 */
export function withDeadline(
  parent: AbortSignal | undefined,
  ms: number,
  what: string,
): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const onParent = (): void => {
    controller.abort(abortReason(parent));
  };
  const timer = setTimeout(() => {
    controller.abort(new DeadlineError(`${what}: no complete answer within ${ms} ms`));
  }, ms);
  timer.unref();
  if (parent?.aborted === true) onParent();
  else parent?.addEventListener('abort', onParent, { once: true });
  return {
    signal: controller.signal,
    dispose: () => {
      clearTimeout(timer);
      parent?.removeEventListener('abort', onParent);
    },
  };
}

/**
 * The whole body as text; rejects with the signal's reason when it aborts, and with TooLargeError
 * (destroying the response) past `maxBytes`.
 */
export function readBody(
  res: Readable,
  signal: AbortSignal,
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const fail = (err: Error): void => {
      signal.removeEventListener('abort', onAbort);
      res.destroy();
      reject(err);
    };
    const onAbort = (): void => {
      fail(abortReason(signal));
    };
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) fail(new TooLargeError(`answer larger than ${maxBytes} bytes`));
      else chunks.push(chunk);
    });
    res.on('end', () => {
      signal.removeEventListener('abort', onAbort);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    res.on('error', (err) => {
      fail(err);
    });
  });
}

/** Sends one request and resolves with the response (headers received); the caller reads the body. */
export function send(
  url: URL,
  options: { method: string; headers: Record<string, string>; agent?: http.Agent | undefined },
  body: Buffer | undefined,
  signal: AbortSignal,
): Promise<http.IncomingMessage> {
  signal.throwIfAborted();
  const request = url.protocol === 'http:' ? http.request : https.request;
  return new Promise((resolve, reject) => {
    const req = request(url, { ...options, signal }, resolve);
    req.on('error', reject);
    req.end(body);
  });
}

/** One exchange of `httpText`. */
export interface TextRequest {
  method?: string;
  headers?: Record<string, string>;
  /** Sent as is (the caller sets Content-Type). */
  body?: string;
  signal?: AbortSignal;
  /** Bound on the whole exchange: connect, send, the complete answer. */
  deadlineMs: number;
  /** Bound on the answer's size in bytes. */
  maxBytes: number;
  /** HTTP(S)_PROXY and NO_PROXY; default none (direct). */
  proxy?: ProxySettings;
}

/** The status and body of any answer (non-2xx included); rejects on transport errors and the bounds. */
export async function httpText(url: string, req: TextRequest): Promise<{ status: number; text: string }> {
  const target = new URL(url);
  const method = req.method ?? 'GET';
  const { signal, dispose } = withDeadline(
    req.signal,
    req.deadlineMs,
    `${method} ${target.origin}${target.pathname}`,
  );
  try {
    const body = req.body === undefined ? undefined : Buffer.from(req.body);
    const length: Record<string, string> = body ? { 'Content-Length': String(body.length) } : {};
    const agent = req.proxy === undefined ? undefined : await proxyAgent(target, req.proxy);
    const res = await send(target, { method, headers: { ...req.headers, ...length }, agent }, body, signal);
    const text = await readBody(res, signal, req.maxBytes);
    return { status: res.statusCode ?? 0, text };
  } catch (err) {
    throw failure(err, signal, req.signal);
  } finally {
    dispose();
  }
}

/** What to throw after a failed exchange: the caller's abort reason, the deadline, or the error. */
function failure(err: unknown, signal: AbortSignal, caller: AbortSignal | undefined): unknown {
  if (caller?.aborted === true) return abortReason(caller);
  if (signal.aborted && signal.reason instanceof DeadlineError) return signal.reason;
  return err;
}
