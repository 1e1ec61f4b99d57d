// Where the fake API server writes an answer: a socket's ServerResponse, or an answer in memory.
/**
 * What the server writes an answer to: the part of node:http's ServerResponse it uses, so that an
 * answer in memory (memory-exchange.ts) goes through the same code as one on a socket.
 */
export interface ResponseSink {
  /** The status sent with the headers (200 until writeHead). */
  readonly statusCode: number;
  readonly headersSent: boolean;
  readonly writableEnded: boolean;
  writeHead(code: number, headers: Record<string, string>): unknown;
  /** Sends the headers now, before any body (a watch, a silent answer). */
  flushHeaders(): void;
  write(chunk: string): unknown;
  end(chunk?: string | Buffer): unknown;
  /** 'finish': the answer was sent; 'close': the exchange is over (answered, or the client left). */
  on(event: 'finish' | 'close', listener: () => void): unknown;
}
