// The agent's listener in one call: metrics, liveness from the loop's heartbeat, readiness from what
// the agent's own requests found of the API server (no request per probe).
import type { Clock } from '../clock/clock.js';
import type { Config } from '../config/config.js';
import { statusMessage } from '../kube/errors.js';
import type { Kube } from '../kube/kube.js';
import type { Logger } from '../log/logger.js';
import type { PrometheusMetrics } from '../metrics/prometheus-metrics.js';
import { heartbeatHealth, startHealthServer, type HealthServer, type ProbeResult } from './http-server.js';

/** Bound on the readiness GET: the kubelet's probe gives up after its own timeoutSeconds (default 1 s). */
const READY_CHECK_TIMEOUT_MS = 3000;

/**
 * Readiness from a GET of our DaemonSet, for a client that keeps no track of the API server's health.
 * The agent's own client does (ClientNodeKube.health): then /readyz costs no request at all.
 */
export function apiReadiness(
  kube: Kube,
  ds: Pick<Config, 'dsNamespace' | 'dsName'>,
  timeoutMs = READY_CHECK_TIMEOUT_MS,
): () => Promise<ProbeResult> {
  return async () => {
    try {
      await kube.getDaemonSet(ds.dsNamespace, ds.dsName, AbortSignal.timeout(timeoutMs));
      return { ok: true, reason: 'ok' };
    } catch (err: unknown) {
      return {
        ok: false,
        reason: `cannot read DaemonSet ${ds.dsNamespace}/${ds.dsName}: ${statusMessage(err)}`,
      };
    }
  };
}

/**
 * Readiness: the configuration is valid (the agent does not start otherwise) and the API server
 * answered the agent's latest request (ApiHealth), or, for a client without that record, a GET.
 */
function readiness(kube: Kube, ds: Pick<Config, 'dsNamespace' | 'dsName'>): () => Promise<ProbeResult> {
  const health = kube.health;
  return health === undefined ? apiReadiness(kube, ds) : () => Promise.resolve(health.state());
}

export interface AgentListenerOptions {
  config: Pick<Config, 'metricsHost' | 'metricsPort' | 'periodMs' | 'dsNamespace' | 'dsName'>;
  kube: Kube;
  metrics: PrometheusMetrics;
  clock: Clock;
  logger: Logger;
}

/**
 * Starts --metrics-host:--metrics-port with /metrics, /healthz (heartbeat younger than 2 periods; the
 * agent beats on every wait it chooses, so only a hung await fails it: see HeartbeatClock) and
 * /readyz (the API answered the latest request). Rejects when the port cannot be bound.
 */
export function startAgentListener(options: AgentListenerOptions): Promise<HealthServer> {
  const { config, kube, metrics, clock, logger } = options;
  return startHealthServer({
    host: config.metricsHost,
    port: config.metricsPort,
    metrics,
    health: heartbeatHealth({
      clock,
      periodMs: config.periodMs,
      lastHeartbeat: () => metrics.lastHeartbeat(),
    }),
    ready: readiness(kube, config),
    logger,
  });
}
