// The agent's listener in one call: metrics, liveness from the loop's heartbeat, readiness from the API.
import type { Clock } from '../clock/clock.js';
import type { Config } from '../config/config.js';
import { statusMessage } from '../kube/errors.js';
import type { Kube } from '../kube/kube.js';
import type { Logger } from '../log/logger.js';
import type { PrometheusMetrics } from '../metrics/prometheus-metrics.js';
import { heartbeatHealth, startHealthServer, type HealthServer, type ProbeResult } from './http-server.js';

/** Bound on the readiness GET: the kubelet's probe gives up after its own timeoutSeconds (default 1 s). */
export const READY_CHECK_TIMEOUT_MS = 3000;

/**
 * Readiness: the API server answers a GET of our DaemonSet (the object every agent needs: lock and
 * pause live there). The configuration is valid by construction: the agent does not start otherwise.
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
 * /readyz (the API answers). Rejects when the port cannot be bound.
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
    ready: apiReadiness(kube, config),
    logger,
  });
}
