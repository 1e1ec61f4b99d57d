// Requests to the API server over client-node's KubeConfig, with a deadline on every one.
//
// client-node 1.4.0 is kept for what it does well: loading kubeconfig files and in-cluster config,
// TLS material, bearer tokens and exec/OIDC credential plugins (applyToHTTPSOptions), proxies (its
// createAgent). Its generated API classes are not used: they load every API group (5.6 MB of JS,
// about 20 MB of resident memory on every node) for the nine requests kured-ts sends, and they have
// no request timeout: an API server that accepts a connection and never answers would hang a call
// for ever. Here every request has a deadline (DEFAULT_DEADLINE_MS unless the caller asks for
// another), and a watch is bounded by the timeoutSeconds it asks the server for plus a grace period.
//
// Errors: a non-2xx answer throws KubeApiError (code = HTTP status, body = the raw Status text), which
// src/kube/errors.ts classifies; no answer in time throws KubeTimeoutError (name 'TimeoutError'); a
// network error is thrown as Node reports it, with the request named in the message.
import type http from 'node:http';
import type https from 'node:https';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { KubeConfig } from '@kubernetes/client-node';
import { abortReason } from '../clock/clock.js';
import { DeadlineError, TooLargeError, readBody, send, withDeadline } from '../http/request.js';
import type { ApiHealth } from './api-health.js';
import type { ServerTime } from './server-time.js';
import { installKeepAliveAgents, type KeepAliveAgents } from './keep-alive.js';

/** Bound of one request (connect, send, answer) unless the caller gives another. */
const DEFAULT_DEADLINE_MS = 30_000;
/** A watch may outlive the timeoutSeconds it asked for by this much before we give up on it. */
const WATCH_GRACE_MS = 30_000;
/** What kube-apiserver's audit log (and default field manager) calls us. */
const USER_AGENT = 'kured-ts';
/** The field manager of every write (metadata.managedFields names us). */
export const FIELD_MANAGER = 'kured-ts';

/** A failed call: the API server answered with a non-2xx status. */
export class KubeApiError extends Error {
  override readonly name = 'KubeApiError';
  constructor(
    /** HTTP status. */
    readonly code: number,
    /** The response body as sent (kube-apiserver: a JSON Status object). */
    readonly body: string,
    what: string,
    /** The answer's Retry-After in seconds (kube-apiserver sends it with 429 and some 5xx). */
    readonly retryAfterSeconds?: number,
  ) {
    super(`${what}: HTTP ${code}${body === '' ? '' : `: ${body.slice(0, 200)}`}`);
  }
}

/** Retry-After in seconds, when the answer gives it as a number (kube-apiserver does). */
function retryAfter(res: http.IncomingMessage): number | undefined {
  const value = Number(res.headers['retry-after']);
  return res.headers['retry-after'] === undefined || !Number.isFinite(value) || value < 0 ? undefined : value;
}

/** One request. */
export interface KubeRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** Path below the server URL, e.g. /api/v1/nodes/n1. */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  /** JSON body. */
  body?: unknown;
  /** Content-Type of the body; default application/json. */
  contentType?: string;
  signal?: AbortSignal;
  /** Overrides the transport's deadline for this request (ms). */
  deadlineMs?: number;
  /** Extra headers (kube's Impersonate-* headers). */
  headers?: Record<string, string>;
  /** The media types asked for; default application/json (a Table: `TABLE_ACCEPT`). */
  accept?: string;
  /** The largest answer read (after decompression); past it the request fails. Default: no bound. */
  maxBytes?: number;
}

/**
 * A server-side printed Table of the objects (what `kubectl get` shows), a row of cells per object
 * and none of the object itself (`includeObject=None` in the query), or plain JSON from a server
 * that does not print. A Table of every Node is about 230 bytes a node, a list of them 11 KB.
 */
export const TABLE_ACCEPT = 'application/json;as=Table;v=v1;g=meta.k8s.io, application/json';

function queryString(query: KubeRequest['query']): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value !== undefined) params.set(key, String(value));
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

/** Headers as node:http wants them, from what applyToHTTPSOptions left. */
function headersOf(opts: https.RequestOptions): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(opts.headers ?? {})) {
    if (value !== undefined) headers[key] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  if (typeof opts.auth === 'string' && opts.auth !== '') {
    headers.Authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
  }
  return headers;
}

/**
 * Sends one request and resolves with the answer once its headers are in (request.ts's `send`); the
 * body is read from the answer. Tests hand the requests to the fake API server in memory instead.
 */
export type Exchange = typeof send;

/** What a KubeTransport is told of and bounded by; every field has a default. */
export interface TransportOptions {
  /** Bound of one request in ms. Default DEFAULT_DEADLINE_MS. */
  deadlineMs?: number | undefined;
  /** How long a watch may outlive its timeoutSeconds. Default WATCH_GRACE_MS. */
  watchGraceMs?: number | undefined;
  /** Told of every answer and failure (for /readyz). */
  health?: ApiHealth;
  /** Told the Date header of every answer. */
  serverTime?: ServerTime;
  /** How requests reach the server. Default over the network (request.ts's `send`). */
  exchange?: Exchange | undefined;
}

/** The transport of one ClientNodeKube; close() ends its connections. */
export class KubeTransport {
  private readonly agents: KeepAliveAgents;
  private readonly deadlineMs: number;
  private readonly watchGraceMs: number;

  constructor(
    readonly kubeConfig: KubeConfig,
    private readonly o: TransportOptions = {},
  ) {
    this.agents = installKeepAliveAgents(kubeConfig);
    this.deadlineMs = o.deadlineMs ?? DEFAULT_DEADLINE_MS;
    this.watchGraceMs = o.watchGraceMs ?? WATCH_GRACE_MS;
  }

  /** Sends the request and resolves to the parsed JSON answer (undefined for an empty body). */
  async json<T>(req: KubeRequest): Promise<T> {
    const what = `${req.method} ${req.path}`;
    const { signal, dispose } = withDeadline(req.signal, req.deadlineMs ?? this.deadlineMs, what);
    try {
      const res = await this.send(req, signal);
      const code = this.answered(res, what);
      const text = await readBody(decoded(res), signal, req.maxBytes);
      if (code < 200 || code > 299) throw new KubeApiError(code, text, what, retryAfter(res));
      return (text === '' ? undefined : JSON.parse(text)) as T;
    } catch (err) {
      throw this.failed(err, signal, req.signal, what);
    } finally {
      dispose();
    }
  }

  /**
   * A watch: streams newline-delimited JSON objects to `onLine` until the server ends the stream
   * (it does after `timeoutSeconds`), `signal` aborts, or timeoutSeconds + WATCH_GRACE_MS pass.
   * Resolves when the stream ended by itself or was aborted by `signal`; rejects on errors and when
   * the answer did not start within the request deadline.
   */
  async watch(
    req: KubeRequest & { timeoutSeconds: number },
    onLine: (value: unknown) => void,
  ): Promise<void> {
    const what = `WATCH ${req.path}`;
    const total = req.timeoutSeconds * 1000 + this.watchGraceMs;
    const whole = withDeadline(req.signal, total, what);
    const start = withDeadline(whole.signal, req.deadlineMs ?? this.deadlineMs, what);
    try {
      const res = await this.send(
        { ...req, query: { ...req.query, watch: true, timeoutSeconds: req.timeoutSeconds } },
        start.signal,
      );
      start.dispose();
      const code = this.answered(res, what);
      if (code < 200 || code > 299) throw new KubeApiError(code, await readBody(res, whole.signal), what);
      await readLines(res, whole.signal, onLine);
    } catch (err) {
      if (req.signal?.aborted === true) return;
      throw this.failed(err, start.signal.aborted ? start.signal : whole.signal, req.signal, what);
    } finally {
      start.dispose();
      whole.dispose();
    }
  }

  /** The answer's status code, told to health (any answer shows the server is there). */
  private answered(res: http.IncomingMessage, what: string): number {
    const code = res.statusCode ?? 0;
    this.o.health?.answer(code, what);
    this.o.serverTime?.observe(res.headers.date, Date.now());
    return code;
  }

  /**
   * The error to throw for a failed request; health hears of it unless the server answered (that
   * was told in answered()) or the caller gave up.
   */
  private failed(err: unknown, signal: AbortSignal, caller: AbortSignal | undefined, what: string): unknown {
    const thrown = settled(err, signal, caller, what);
    // an answer too large to read was an answer: health heard of it in answered()
    if (!(thrown instanceof KubeApiError) && !(err instanceof TooLargeError) && caller?.aborted !== true)
      this.o.health?.fail(what, String(thrown));
    return thrown;
  }

  /** Ends every connection, in flight or idle; later requests open new ones. */
  close(): void {
    this.agents.close();
  }

  private async send(req: KubeRequest, signal: AbortSignal): Promise<http.IncomingMessage> {
    signal.throwIfAborted();
    const cluster = this.kubeConfig.getCurrentCluster();
    if (cluster === null) throw new Error('the kubeconfig has no current cluster');
    const opts: https.RequestOptions = { headers: {} };
    await this.kubeConfig.applyToHTTPSOptions(opts);
    const url = new URL(cluster.server.replace(/\/+$/, '') + req.path + queryString(req.query));
    const body = req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body));
    const headers: Record<string, string> = {
      ...headersOf(opts),
      ...req.headers,
      Accept: req.accept ?? 'application/json',
      'User-Agent': USER_AGENT,
    };
    // as client-go (Go's transport) asks: kube-apiserver compresses answers over 128 KB (a list of
    // every Node: 11 MB at 1,000 Nodes, 0.8 MB compressed; its Table 228 KB, 9 KB compressed)
    if (req.method === 'GET' && req.query?.watch === undefined) headers['Accept-Encoding'] = 'gzip';
    if (body !== undefined) {
      headers['Content-Type'] = req.contentType ?? 'application/json';
      headers['Content-Length'] = String(body.length);
    }
    return (this.o.exchange ?? send)(
      url,
      { method: req.method, headers, agent: opts.agent as http.Agent | undefined },
      body,
      signal,
    );
  }
}

/** The answer's body as sent before its content encoding (gzip, when the server compressed it). */
function decoded(res: http.IncomingMessage): Readable {
  if (res.headers['content-encoding'] !== 'gzip') return res;
  const gunzip = createGunzip();
  res.on('error', (err) => gunzip.destroy(err));
  // given up before the end (a deadline, an abort, a corrupt stream): the answer goes with it
  gunzip.on('close', () => {
    if (!res.complete) res.destroy();
  });
  return res.pipe(gunzip);
}

/**
 * The error to throw after a failure: the caller's abort reason, the deadline, the API's answer, or
 * a network error with the request named.
 */
function settled(err: unknown, signal: AbortSignal, caller: AbortSignal | undefined, what: string): unknown {
  if (caller?.aborted === true) return abortReason(caller);
  if (signal.aborted && signal.reason instanceof DeadlineError) return signal.reason;
  if (err instanceof KubeApiError || !(err instanceof Error)) return err;
  return new Error(`${what}: ${err.message}`, { cause: err });
}

function readLines(
  res: http.IncomingMessage,
  signal: AbortSignal,
  onLine: (value: unknown) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let rest = '';
    const onAbort = (): void => {
      res.destroy();
      reject(abortReason(signal));
    };
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      rest += chunk;
      const lines = rest.split('\n');
      rest = lines.pop() ?? '';
      try {
        for (const line of lines) if (line.trim() !== '') onLine(JSON.parse(line));
      } catch (err) {
        res.destroy();
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
    res.on('end', () => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
    res.on('error', (err) => {
      signal.removeEventListener('abort', onAbort);
      reject(err);
    });
    res.on('close', () => {
      signal.removeEventListener('abort', onAbort);
      if (!res.complete) reject(new Error('watch stream closed before its end'));
    });
  });
}
