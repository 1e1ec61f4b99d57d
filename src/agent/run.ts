// The agent daemon: metrics and health listener, kured_reboot_required refresher, and the loop.
// The caller (src/cli/cli.ts) turns SIGTERM/SIGINT into `signal` and the returned number into the exit.
import { SystemClock, type Clock } from '../clock/clock.js';
import { redactConfig, type Config } from '../config/config.js';
import { createWindow } from '../window/index.js';
import { connectKube } from '../kube/client.js';
import type { Kube } from '../kube/kube.js';
import type { Logger } from '../log/logger.js';
import { errorText } from '../text/error-text.js';
import { PrometheusMetrics } from '../metrics/prometheus-metrics.js';
import { createSentinel } from '../sentinel/index.js';
import { startAgentListener } from '../server/agent-listener.js';
import type { HealthServer } from '../server/http-server.js';
import { pollRebootRequest, REQUEST_POLL_MS, refreshRebootRequired } from './agent.js';
import { rebootRequestOf } from '../node/reboot-request.js';
import { createAgent } from './create-agent.js';
import { HeartbeatClock } from './heartbeat-clock.js';
import { hostView } from '../host/host-view.js';
import { OwnViews } from '../kube/own-views.js';
import { FsHostFiles } from '../host/host.js';
import { readShutdown, shutdownMeaning } from '../host/shutdown.js';

export interface RunAgentOptions {
  /** Aborted on SIGTERM/SIGINT: the current step is abandoned safely and runAgent resolves. */
  signal: AbortSignal;
  /** Default connectKube({ kubeconfig: config.kubeconfig }). */
  kube?: Kube;
  /** Default the system clock. */
  clock?: Clock;
  /** The program's version, for the configuration line. */
  version?: string;
}

/** Runs until `signal` aborts; resolves 0 then, or 1 when the agent cannot start. */
export async function runAgent(config: Config, log: Logger, options: RunAgentOptions): Promise<number> {
  const clock = options.clock ?? new SystemClock();
  let kube: Kube;
  try {
    kube = options.kube ?? connectKube({ kubeconfig: config.kubeconfig });
  } catch (err) {
    log.error('cannot load the Kubernetes client configuration', { error: errorText(err) });
    return 1;
  }
  // After the connection is configured: a missing kubeconfig is one line, not this one first.
  log.info('effective configuration', {
    ...(options.version === undefined ? {} : { version: options.version }),
    window: createWindow(config.window).describe(),
    config: redactConfig(config),
  });
  const metrics = new PrometheusMetrics(config.nodeId);
  let server: HealthServer;
  try {
    server = await startAgentListener({ config, kube, metrics, clock, logger: log });
  } catch (err) {
    log.error('cannot start the metrics listener', { error: errorText(err), port: config.metricsPort });
    return 1;
  }
  const sentinel = createSentinel(config);
  // Every wait of the agent beats, so a long drain or --reboot-delay is not mistaken for a stuck
  // loop (see HeartbeatClock). The refresher keeps the plain clock: its beats would hide a hung agent.
  const agentClock = new HeartbeatClock(
    clock,
    (at) => {
      metrics.heartbeat(at);
    },
    config.periodMs / 2,
  );
  const view = hostView(config);
  if ('notChecked' in view)
    log.warn('package manager not checked', { node: config.nodeId, reason: view.notChecked });
  const host = 'host' in view ? { host: view.host } : {};
  // graceful node shutdown on this host, read once (read-only): published in every status
  const shutdown = await readShutdown(new FsHostFiles(config.hostRoot), config.kubeletConfig);
  log.info('graceful node shutdown', {
    node: config.nodeId,
    ...shutdown,
    meaning: shutdownMeaning(shutdown).meaning,
  });
  // The agent's own Node (and pods while a reboot is wanted) followed by watches: every part of the
  // agent reads them through `views.kube`, and the request poller below costs nothing while they are.
  // The plain clock: the watches' own waits must not beat the heartbeat (they would hide a hung loop).
  const views = new OwnViews({
    kube,
    nodeName: config.nodeId,
    clock,
    log,
    random: Math.random,
    lock: { namespace: config.dsNamespace, name: config.dsName },
  });
  const agent = createAgent(config, {
    kube,
    clock: agentClock,
    logger: log,
    metrics,
    sentinel,
    views,
    shutdown,
    ...host,
  });
  log.info('agent started', { node: config.nodeId, metricsPort: server.port });
  try {
    await Promise.all([
      agent.run(options.signal),
      // The same once-a-minute sentinel check wakes an idle agent when a reboot becomes required, so
      // the PreferNoSchedule taint goes on within a minute, not at the next jittered period.
      refreshRebootRequired({
        sentinel,
        metrics,
        clock,
        logger: log,
        signal: options.signal,
        onRequired: () => {
          agent.wake();
        },
      }),
      // An admin's `kured-ts reboot` request wakes an idle agent at once through the watch of its Node
      // (Agent.run); this looks within minutes when the watch cannot be held (a read of the view
      // otherwise: no request).
      pollRebootRequest({
        requested: async (signal) =>
          rebootRequestOf((await views.kube.getNode(config.nodeId, signal)).metadata?.annotations ?? {}) !==
          undefined,
        clock,
        logger: log,
        signal: options.signal,
        intervalMs: Math.min(REQUEST_POLL_MS, config.periodMs),
        onRequested: () => {
          agent.wake();
        },
      }),
    ]);
  } finally {
    await server.close();
  }
  log.info('agent stopped', { node: config.nodeId });
  return 0;
}
