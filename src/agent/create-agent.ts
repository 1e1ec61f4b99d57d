// Builds an Agent from a Config and a Kube: the real implementations of every seam, wired once.
// Used by the CLI (`kured-ts agent`) and the simulator; tests build Agent directly over fakes.
import { AlertmanagerClient, type SilenceApi } from '../silence/alertmanager.js';
import { SilenceKeeper } from '../silence/silence-keeper.js';
import { Hooks } from '../hooks/hooks.js';
import type { HookName } from '../hooks/hook-job.js';
import type { Clock } from '../clock/clock.js';
import type { Config } from '../config/config.js';
import { createBlockers } from '../blockers/index.js';
import type { Kube } from '../kube/kube.js';
import type { HostFiles } from '../host/host.js';
import { OwnViews } from '../kube/own-views.js';
import { WATCH_SILENCE_MS } from '../kube/reflector.js';
import { FleetCensus } from '../capacity/fleet-census.js';
import { DaemonSetLock } from '../lock/daemonset-lock.js';
import { WaveCensus } from '../capacity/wave-census.js';
import { KubeWaveStore } from '../lock/wave-store.js';
import { capacityOf, waveTracked, type CapacityConfig } from '../capacity/settings.js';
import { HealthChecks } from '../blockers/health-check.js';
import { NodeChecks } from '../blockers/node-check.js';
import type { CelEvaluator } from '../cel/cel.js';
import { WorkerCel } from '../cel/worker-cel.js';
import { NoticeFilter } from '../notify/notice-filter.js';
import { CoordinatorLease, coordinatorLeaseName } from '../queue/coordinator-lease.js';
import { NodeTurnGate, type OwnNodeView } from '../queue/turn-gate.js';
import type { Logger } from '../log/logger.js';
import { noMetrics, type AgentMetrics } from '../metrics/agent-metrics.js';
import { RolloutRestarter } from '../drain/rollout-restart.js';
import { KubeDrainer } from '../drain/kube-drainer.js';
import { KubeVolumeReads } from '../drain/volume-reads.js';
import { KubeLoadBalancers } from '../drain/load-balancers.js';
import type { ShutdownSettings } from '../host/shutdown.js';
import type { FleetLock } from '../fleetlock/fleetlock.js';
import { HttpFleetLock, type HttpFleetLockOptions } from '../fleetlock/http-fleetlock.js';
import { KubeEventRecorder } from '../events/kube-event-recorder.js';
import { KubeNodeOps } from '../node/kube-node-ops.js';
import { createNotifier } from '../notify/index.js';
import type { Notifier } from '../notify/notifier.js';
import { createRebooter } from '../reboot/index.js';
import type { Rebooter } from '../reboot/rebooter.js';
import { createSentinel } from '../sentinel/index.js';
import type { Sentinel } from '../sentinel/sentinel.js';
import { createWindow } from '../window/index.js';
import { Agent, type AgentDeps } from './agent.js';

/** What the caller provides; the optional parts default to the real implementations from `config`. */
export interface AgentIo {
  kube: Kube;
  clock: Clock;
  logger: Logger;
  /** Default noMetrics (the CLI passes PrometheusMetrics). */
  metrics?: AgentMetrics;
  /** Default createNotifier(config.notifyUrl). */
  notifier?: Notifier;
  /** Default createRebooter(config): command or signal (the simulator passes its own). */
  rebooter?: Rebooter;
  /** Default createSentinel(config): file or command. */
  sentinel?: Sentinel;
  /** Default AlertmanagerClient(--alertmanager-url). */
  alertmanager?: SilenceApi;
  /** Default Math.random. */
  random?: () => number;
  /** The host whose package manager is waited for (hostView); none: not checked. */
  host?: HostFiles;
  /**
   * The FleetLock client's transport and bounds (--fleetlock-url): default httpText and the client's
   * defaults. The simulator answers in memory; tests shorten the deadline and back-off.
   */
  fleetLock?: FleetLockTuning;
  /**
   * The watches of the agent's own Node and pods (src/kube/own-views.ts) that every part of the agent
   * reads through: given (runAgent's, which its request poller shares), made here (the default), or
   * none (false: a client whose watches deliver nothing, the simulator's kured polling model).
   */
  views?: OwnViews | false;
  /**
   * The staleness bound of those watches and of the lock's waits (WATCH_SILENCE_MS by default), 0 =
   * none (the simulator's feed, which sends no bookmarks).
   */
  viewSilenceMs?: number;
  /** Graceful node shutdown on the host, as read at start (runAgent reads it); published in the status. */
  shutdown?: ShutdownSettings;
  /**
   * Where the checks' CEL runs: default WorkerCel (a worker thread under a deadline and a heap cap);
   * the simulator's in-process agents pass InlineCel.
   */
  cel?: CelEvaluator;
}

/** The views of the agent's own node for `io` (see AgentIo.views); undefined for none. */
function ownViewsOf(
  config: Pick<Config, 'nodeId' | 'dsNamespace' | 'dsName'>,
  io: AgentIo,
): OwnViews | undefined {
  if (io.views === false) return undefined;
  return (
    io.views ??
    new OwnViews({
      kube: io.kube,
      nodeName: config.nodeId,
      clock: io.clock,
      log: io.logger,
      random: io.random ?? Math.random,
      lock: { namespace: config.dsNamespace, name: config.dsName },
      silenceMs: silenceOf(io) ?? 0,
    })
  );
}

/** The staleness bound of the agent's watches (AgentIo.viewSilenceMs); undefined for none. */
function silenceOf(io: Pick<AgentIo, 'viewSilenceMs'>): number | undefined {
  const ms = io.viewSilenceMs ?? WATCH_SILENCE_MS;
  return ms > 0 ? ms : undefined;
}

/** What may replace the FleetLock client's transport and defaults. */
export type FleetLockTuning = Pick<HttpFleetLockOptions, 'exchange' | 'timeoutMs' | 'attempts' | 'backoffMs'>;

/** What the lock's factory needs. */
export type LockConfig = CapacityConfig &
  Pick<
    Config,
    'nodeId' | 'dsNamespace' | 'dsName' | 'lockAnnotation' | 'lockTtlMs' | 'lockQueue' | 'coordinator'
  >;

/** The coordinator's Lease as this agent reads it (its liveness and the fleet's health). */
export function coordinatorOf(
  config: Pick<Config, 'dsNamespace' | 'dsName'>,
  io: Pick<AgentIo, 'kube' | 'clock'>,
): CoordinatorLease {
  return new CoordinatorLease({
    kube: io.kube,
    namespace: config.dsNamespace,
    name: coordinatorLeaseName(config.dsName),
    clock: io.clock,
  });
}

/**
 * The agent's lock, with the coordinated queue's turns unless --lock-queue none: one factory for the
 * agent and `kured-ts check`, so that check answers as the agent would.
 */
export function createLock(
  config: LockConfig,
  io: Pick<AgentIo, 'kube' | 'clock' | 'logger' | 'random' | 'viewSilenceMs'> & { ownNode?: OwnNodeView },
  coordinator: CoordinatorLease,
): DaemonSetLock {
  const { kube, clock, logger: log } = io;
  const random = io.random ?? Math.random;
  const silenceMs = silenceOf(io);
  const silence = silenceMs === undefined ? {} : { silenceMs };
  const nodeId = config.nodeId;
  const { wave, ...capacity } = capacityOf(config);
  // the wait for a turn subscribes to the agent's own view of its Node, not a watch of its own
  const own = io.ownNode === undefined ? {} : { ownNode: io.ownNode };
  return new DaemonSetLock({
    kube,
    nodeId,
    namespace: config.dsNamespace,
    name: config.dsName,
    annotation: config.lockAnnotation,
    ttlMs: config.lockTtlMs,
    ...capacity,
    census: new FleetCensus({ kube, clock, nodeId, groupLabel: capacity.groups?.label }),
    ...(wave === undefined ? {} : { wave: { ...wave, census: new WaveCensus({ kube, clock, nodeId }) } }),
    clock,
    log,
    random,
    ...silence,
    ...(config.lockQueue === 'none' || !config.coordinator
      ? {}
      : { turns: new NodeTurnGate({ kube, nodeId, coordinator, clock, log, random, ...silence, ...own }) }),
  });
}

/** The drain of this node, following its pods through the views when there are any. */
function drainerOf(config: Config, io: AgentIo, views: OwnViews | undefined): KubeDrainer {
  return new KubeDrainer({
    kube: io.kube,
    nodeId: config.nodeId,
    clock: io.clock,
    log: io.logger,
    timeoutMs: config.drainTimeoutMs,
    gracePeriodSeconds: config.drainGracePeriodSeconds,
    podSelector: config.drainPodSelector,
    rules: config.drainRules,
    fallback: config.drainFallback,
    skipWaitForDeleteTimeoutSeconds: config.skipWaitForDeleteTimeoutSeconds,
    evictionRetryDelayMs: config.evictionRetryDelayMs,
    ...(views === undefined ? {} : { pods: views.podChanges() }),
    random: io.random ?? Math.random,
  });
}

/** --single-replica restart: the restarter of single replicas' Deployments before the drain; none when off. */
function restarterOf(config: Config, io: AgentIo): Pick<AgentDeps, 'restarter'> {
  if (config.singleReplica !== 'restart') return {};
  return {
    restarter: new RolloutRestarter({
      kube: io.kube,
      nodeId: config.nodeId,
      clock: io.clock,
      podSelector: config.drainPodSelector,
      rules: config.drainRules,
    }),
  };
}

/** The agent's dependencies for this configuration (exposed for `kured-ts check` and tests). */
export function createAgentDeps(config: Config, given: AgentIo): AgentDeps {
  const views = ownViewsOf(config, given);
  // every read of the own Node and pods goes through the views: free while their watches are open,
  // and the wait for a turn subscribes to the Node's
  const io = views === undefined ? given : { ...given, kube: views.kube, ownNode: views.node.followed };
  const { kube, clock, logger } = io;
  const random = io.random ?? Math.random;
  const nodeId = config.nodeId;
  const node = new KubeNodeOps({ kube, nodeId, clock, log: logger, random });
  const coordinator = coordinatorOf(config, io);
  const cel = io.cel ?? new WorkerCel();
  const wave = waveDepsOf(config, kube, cel);
  const storage = nodeChecksOf(config, kube, cel);
  const notifier = io.notifier ?? createNotifier(config.notifyUrl, { logger, clock, proxy: config.proxy });
  const metrics = metricsOf(io, views);
  return {
    sentinel: io.sentinel ?? createSentinel(config),
    blockers: createBlockers(config, {
      kube,
      node,
      clock,
      checks: wave.checks,
      nodeChecks: storage.nodeChecks,
      host: io.host,
      alertmanager: alertmanagerOf(config, io),
    }),
    lock: createLock(config, io, coordinator),
    node,
    drainer: drainerOf(config, io, views),
    volumes: new KubeVolumeReads({ kube, nodeId }),
    ...storage,
    loadBalancers: new KubeLoadBalancers(kube),
    ...restarterOf(config, io),
    events: new KubeEventRecorder({ kube, nodeId, clock, log: logger, periodMs: config.periodMs }),
    rebooter: io.rebooter ?? createRebooter(config),
    notifier: new NoticeFilter(notifier, { events: config.notifyEvents, periodMs: config.periodMs, clock }),
    ...wave,
    metrics,
    window: createWindow(config.window),
    ...fleetLockOf(config, io),
    ...(kube.serverTime === undefined ? {} : { serverTime: kube.serverTime }),
    ...(views === undefined ? {} : { views }),
    ...(io.shutdown === undefined ? {} : { shutdown: io.shutdown }),
    ...silencesOf(config, { ...io, metrics }),
    ...hooksOf(config, io),
    clock,
    logger,
    random,
  };
}

/** --before-reboot-hook, --after-reboot-hook: the Jobs around the reboot, in --hook-namespace. */
function hooksOf(config: Config, io: Pick<AgentIo, 'kube' | 'clock'>): { hooks?: Hooks } {
  const templates: Partial<Record<HookName, string>> = {
    ...(config.beforeRebootHook === '' ? {} : { 'before-reboot': config.beforeRebootHook }),
    ...(config.afterRebootHook === '' ? {} : { 'after-reboot': config.afterRebootHook }),
  };
  if (Object.keys(templates).length === 0) return {};
  const namespace = config.hookNamespace === '' ? config.dsNamespace : config.hookNamespace;
  const { kube, clock } = io;
  return {
    hooks: new Hooks({
      kube,
      clock,
      nodeId: config.nodeId,
      namespace,
      templates,
      timeoutMs: config.hookTimeoutMs,
    }),
  };
}

/** --alertmanager-url with --silence-matcher: the node's silences (io.alertmanager, or Alertmanager's API). */
function silencesOf(config: Config, io: AgentIo & { metrics: AgentMetrics }): { silences?: SilenceKeeper } {
  const api = alertmanagerOf(config, io);
  if (api === undefined || config.silenceMatchers.length === 0) return {};
  const silences = new SilenceKeeper({
    api,
    node: config.nodeId,
    sets: config.silenceMatchers,
    durationMs: config.silenceDurationMs,
    tailMs: config.silenceTailMs,
    clock: io.clock,
    log: io.logger,
    failed: () => io.metrics.countSilenceError?.(),
  });
  return { silences };
}

/** The Alertmanager silences are asked of: io.alertmanager, or --alertmanager-url's; undefined without. */
function alertmanagerOf(config: Config, io: Pick<AgentIo, 'alertmanager'>): SilenceApi | undefined {
  if (config.alertmanagerUrl === '') return undefined;
  return io.alertmanager ?? new AlertmanagerClient({ url: config.alertmanagerUrl, proxy: config.proxy });
}

/** The agent's metrics, told the ages of its views when it has any. */
function metricsOf(io: AgentIo, views: OwnViews | undefined): AgentMetrics {
  const metrics = io.metrics ?? noMetrics;
  if (views !== undefined) metrics.followViews?.(() => views.ages());
  return metrics;
}

/** The wave's store when a wave is tracked, and the health checks when any is configured. */
function waveDepsOf(config: Config, kube: Kube, cel: CelEvaluator): Pick<AgentDeps, 'waves' | 'checks'> {
  return {
    ...(waveTracked(config)
      ? { waves: new KubeWaveStore({ kube, namespace: config.dsNamespace, name: config.dsName }) }
      : {}),
    ...(config.healthChecks.length > 0 ? { checks: new HealthChecks(kube, config.healthChecks, cel) } : {}),
  };
}

/** The node checks when any is configured. */
function nodeChecksOf(config: Config, kube: Kube, cel: CelEvaluator): Pick<AgentDeps, 'nodeChecks'> {
  if (config.nodeChecks.length === 0) return {};
  return { nodeChecks: new NodeChecks({ kube, nodeId: config.nodeId, checks: config.nodeChecks, cel }) };
}

/** The FleetLock client for --fleetlock-url (the node's name is its id); nothing without it. */
function fleetLockOf(config: Config, io: AgentIo): { fleetLock?: FleetLock } {
  if (config.fleetlockUrl === '') return {};
  const fleetLock = new HttpFleetLock({
    url: config.fleetlockUrl,
    group: config.fleetlockGroup,
    id: config.nodeId,
    clock: io.clock,
    random: io.random ?? Math.random,
    proxy: config.proxy,
    ...io.fleetLock,
  });
  return { fleetLock };
}

/** The agent for this configuration; `run(signal)` it, abort the signal on SIGTERM. */
export function createAgent(config: Config, io: AgentIo): Agent {
  return new Agent(config, createAgentDeps(config, io));
}
