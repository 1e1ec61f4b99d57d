// The agent's HTTP listener: /metrics for Prometheus, /healthz and /readyz for the kubelet's probes.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../clock/clock.js';
import type { Logger } from '../log/logger.js';
import { errorText } from '../text/error-text.js';

/** The answer of a probe; `reason` is the response body (one line). */
export interface ProbeResult {
  ok: boolean;
  reason: string;
}

/** Where /metrics reads from: a prom-client Registry or PrometheusMetrics. */
interface MetricsSource {
  readonly contentType: string;
  metrics(): Promise<string>;
}

export interface HealthServerOptions {
  /** Interface to listen on; '' or undefined = all interfaces (kured's --metrics-host default). */
  host?: string;
  /** Port; 0 = ephemeral (tests). */
  port: number;
  metrics: MetricsSource;
  /** Liveness: is the loop alive? (see heartbeatHealth). */
  health: () => ProbeResult;
  /** Readiness: config valid and the API reachable. A rejection or a timeout counts as not ready. */
  ready: () => Promise<ProbeResult>;
  logger: Logger;
  /** Bound on one readiness check. Default 5 s (a probe must answer before the kubelet gives up). */
  readyTimeoutMs?: number;
}

export interface HealthServer {
  /** The port actually bound (useful with port 0). */
  readonly port: number;
  /** Stops listening and drops open keep-alive connections. Idempotent. */
  close(): Promise<void>;
}

export interface HeartbeatHealthOptions {
  clock: Clock;
  /** The agent's --period. */
  periodMs: number;
  /** The loop's last heartbeat; undefined before the first tick. */
  lastHeartbeat: () => Date | undefined;
  /** Age after which the loop counts as stuck. Default 2 periods. */
  staleAfterMs?: number;
}

/**
 * Liveness from the loop's heartbeat: healthy while the last heartbeat is younger than 2 periods.
 * Before the first heartbeat the age counts from this call, so a starting agent gets the same grace.
 */
export function heartbeatHealth(options: HeartbeatHealthOptions): () => ProbeResult {
  const { clock, lastHeartbeat } = options;
  const staleAfterMs = options.staleAfterMs ?? 2 * options.periodMs;
  const started = clock.now();
  return () => {
    const beat = lastHeartbeat();
    const ageMs = clock.now().getTime() - (beat ?? started).getTime();
    if (ageMs < staleAfterMs) return { ok: true, reason: 'ok' };
    const since = beat
      ? `last heartbeat ${beat.toISOString()}`
      : `no heartbeat since start at ${started.toISOString()}`;
    return {
      ok: false,
      reason: `loop stuck: ${since}, ${Math.round(ageMs / 1000)}s ago (limit ${Math.round(staleAfterMs / 1000)}s)`,
    };
  };
}

/** Starts the listener; resolves once it is bound, rejects when it cannot bind. */
export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const server = createServer((req, res) => {
    handle(options, req, res).catch((err: unknown) => {
      options.logger.error('health server request failed', { path: req.url, error: errorText(err) });
      if (!res.headersSent) send(res, 500, 'internal error');
      else res.destroy();
    });
  });
  await listen(server, options.host, options.port);
  const port = (server.address() as AddressInfo).port;
  options.logger.info('metrics and health listener started', { host: options.host ?? '', port });
  let closing: Promise<void> | undefined;
  return {
    port,
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

function listen(server: Server, host: string | undefined, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => {
      reject(new Error(`cannot listen on ${host ?? ''}:${port}: ${err.message}`, { cause: err }));
    };
    server.once('error', onError);
    server.listen({ port, host: host === '' ? undefined : host }, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

async function handle(
  options: HealthServerOptions,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  const route = ROUTES[path];
  if (!route) {
    send(res, 404, 'not found');
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('Allow', 'GET, HEAD');
    send(res, 405, 'method not allowed');
    return;
  }
  await route(options, res);
}

type Route = (options: HealthServerOptions, res: ServerResponse) => Promise<void>;

const ROUTES: Partial<Record<string, Route>> = {
  '/metrics': async (options, res) => {
    const body = await options.metrics.metrics();
    send(res, 200, body, options.metrics.contentType);
  },
  '/healthz': (options, res) => {
    const result = options.health();
    send(res, result.ok ? 200 : 503, result.reason);
    return Promise.resolve();
  },
  '/readyz': async (options, res) => {
    const result = await readiness(options);
    send(res, result.ok ? 200 : 503, result.reason);
  },
};

async function readiness(options: HealthServerOptions): Promise<ProbeResult> {
  const timeoutMs = options.readyTimeoutMs ?? 5000;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<ProbeResult>((resolve) => {
    timer = setTimeout(() => {
      resolve({ ok: false, reason: `readiness check timed out after ${timeoutMs}ms` });
    }, timeoutMs);
  });
  try {
    return await Promise.race([
      options
        .ready()
        .catch((err: unknown) => ({ ok: false, reason: `readiness check failed: ${errorText(err)}` })),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function send(
  res: ServerResponse,
  status: number,
  body: string,
  contentType = 'text/plain; charset=utf-8',
): void {
  const text = body.endsWith('\n') ? body : body + '\n';
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text) });
  res.end(res.req.method === 'HEAD' ? undefined : text);
}
