// Requests handed to the fake API server in memory, without a socket: the production client
// (src/kube/client.ts, through its transport's `exchange` seam) builds, sends, reads and retries them
// exactly as over HTTP, and the server serves them exactly as off a socket (http.ts handleExchange):
// the same routes, recorded requests, injected failures, admission of the caller its Impersonate-*
// headers name, watches with bookmarks and 410s. Only the wire is left out: no TCP, no HTTP parser,
// no event-loop round trips through the kernel. That is most of what a request cost the tests.
//
// Like a socket, an answer reaches the client in a later macrotask than the write that made it: a
// watch event is never delivered inside another caller's request.
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { abortReason } from '../../clock/clock.js';
import type { Exchange } from '../../kube/http.js';
import { handleExchange, type HttpContext } from './http.js';
import type { ResponseSink } from './response-sink.js';

/** Header names in lower case, as node:http hands them over on either side. */
function lowerCased(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = value;
  return out;
}

/** An error as node:http reports a connection the server dropped (ECONNRESET) or refused. */
function connectionError(message: string, code = 'ECONNRESET'): Error {
  return Object.assign(new Error(message), { code });
}

/** The answer as the client reads it: a stream with what the client reads of an IncomingMessage. */
class MemoryAnswer extends Readable {
  /** The whole answer arrived (IncomingMessage.complete). */
  complete = false;

  constructor(
    readonly statusCode: number,
    readonly headers: Record<string, string>,
  ) {
    super();
  }

  override _read(): void {
    // chunks are pushed as the server writes them
  }
}

/** One answer in the making: the server writes it as it would to a ServerResponse. */
class MemoryResponse implements ResponseSink {
  statusCode = 200;
  headersSent = false;
  writableEnded = false;
  private answer: MemoryAnswer | undefined;
  private readonly listeners: Record<'finish' | 'close', (() => void)[]> = { finish: [], close: [] };
  /** Chunks written and not yet delivered; null ends the answer. */
  private readonly pending: (string | Buffer | null)[] = [];
  private flushing = false;
  private closed = false;

  constructor(private readonly answered: (answer: MemoryAnswer) => void) {}

  writeHead(code: number, headers: Record<string, string>): this {
    if (this.headersSent || this.closed) return this;
    this.statusCode = code;
    this.headersSent = true;
    // node:http adds a Date header to every answer that has none (a watch's, a silent one's)
    const answer = new MemoryAnswer(code, { date: new Date().toUTCString(), ...lowerCased(headers) });
    answer.once('close', () => {
      this.close();
    });
    this.answer = answer;
    this.answered(answer);
    return this;
  }

  flushHeaders(): void {
    if (!this.headersSent) this.writeHead(this.statusCode, {});
  }

  write(chunk: string): boolean {
    if (this.writableEnded || this.closed) return false;
    this.flushHeaders();
    this.queue(chunk);
    return true;
  }

  end(chunk?: string | Buffer): this {
    if (this.writableEnded || this.closed) return this;
    this.flushHeaders();
    if (chunk !== undefined && chunk.length > 0) this.queue(chunk);
    this.writableEnded = true;
    this.queue(null);
    for (const listener of this.listeners.finish) listener();
    return this;
  }

  on(event: 'finish' | 'close', listener: () => void): this {
    this.listeners[event].push(listener);
    return this;
  }

  /** The exchange is over: the answer was read, or the client or the server dropped it. Once. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const listener of this.listeners.close) listener();
  }

  /**
   * The server went away (its close()): an answer not ended by then breaks off as a reset connection;
   * false when no answer had begun (the request itself fails).
   */
  reset(): boolean {
    if (this.answer === undefined) return false;
    if (!this.writableEnded) this.answer.destroy(connectionError('aborted'));
    return true;
  }

  /** Delivers what was written in a later macrotask, as a socket would, in order. */
  private queue(chunk: string | Buffer | null): void {
    this.pending.push(chunk);
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => {
      this.flush();
    });
  }

  private flush(): void {
    this.flushing = false;
    const answer = this.answer;
    for (const chunk of this.pending.splice(0)) {
      if (answer === undefined || answer.destroyed) return;
      if (chunk === null) answer.complete = true;
      answer.push(chunk);
    }
  }
}

/**
 * The in-memory wire to the server of `ctx`: an Exchange for ClientNodeKube (ConnectOptions.exchange),
 * and reset(), which drops every exchange still open as closing the server's connections would and
 * refuses every later one as its closed port would.
 */
export function memoryWire(ctx: HttpContext): { exchange: Exchange; reset: () => void } {
  const open = new Set<{ response: MemoryResponse; refuse: (err: Error) => void }>();
  let closed = false;
  const exchange: Exchange = (url, options, body, signal) => {
    signal.throwIfAborted();
    // a closed server's port refuses connections (a retry after the drop meets this, as over HTTP)
    if (closed)
      return Promise.reject(connectionError('connect ECONNREFUSED (fake API server closed)', 'ECONNREFUSED'));
    return new Promise<IncomingMessage>((resolve, reject) => {
      const entry = {
        response: new MemoryResponse((answer) => {
          signal.removeEventListener('abort', onAbort);
          resolve(answer as unknown as IncomingMessage);
        }),
        refuse: reject,
      };
      const onAbort = (): void => {
        entry.response.close();
        reject(abortReason(signal));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      open.add(entry);
      entry.response.on('close', () => open.delete(entry));
      const head = {
        method: options.method,
        url: url.pathname + url.search,
        headers: lowerCased(options.headers),
      };
      handleExchange(ctx, head, body?.toString('utf8') ?? '', entry.response);
    });
  };
  const reset = (): void => {
    closed = true;
    for (const entry of [...open]) {
      open.delete(entry);
      if (!entry.response.reset()) entry.refuse(connectionError('socket hang up'));
      entry.response.close();
    }
  };
  return { exchange, reset };
}
