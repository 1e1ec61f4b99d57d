// Builds an Agent from a Config and a Kube: the real implementations of every seam, wired once.
// Used by the CLI (`kured-ts agent`) and the simulator; tests build Agent directly over fakes.
import type { Clock } from '../clock/clock.js';
import type { Config } from '../config/config.js';
import { createBlockers } from '../blockers/index.js';
import type { Kube } from '../kube/kube.js';
import { FleetCensus } from '../lock/fleet-census.js';
import { DaemonSetLock } from '../lock/daemonset-lock.js';
import { CoordinatorLease, coordinatorLeaseName } from '../queue/coordinator-lease.js';
import { NodeTurnGate } from '../queue/turn-gate.js';
import type { Logger } from '../log/logger.js';
import { noMetrics, type AgentMetrics } from '../metrics/agent-metrics.js';
import { RolloutRestarter } from '../drain/rollout-restart.js';
import { KubeDrainer } from '../drain/kube-drainer.js';
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
  /** Default Math.random. */
  random?: () => number;
  /**
   * The FleetLock client's transport and bounds (--fleetlock-url): default httpText and the client's
   * defaults. The simulator answers in memory; tests shorten the deadline and back-off.
   */
  fleetLock?: FleetLockTuning;
}

/** What may replace the FleetLock client's transport and defaults. */
export type FleetLockTuning = Pick<HttpFleetLockOptions, 'exchange' | 'timeoutMs' | 'attempts' | 'backoffMs'>;

/** What the lock's factory needs. */
export type LockConfig = Pick<
  Config,
  | 'nodeId'
  | 'dsNamespace'
  | 'dsName'
  | 'lockAnnotation'
  | 'lockTtlMs'
  | 'concurrency'
  | 'concurrencyPercent'
  | 'groupLabel'
  | 'groupConcurrency'
  | 'groupConcurrencyPercent'
  | 'countUnavailable'
  | 'controlPlaneLast'
  | 'lockQueue'
  | 'coordinator'
  | 'maxUnhealthyNodes'
  | 'maxQuarantined'
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
  io: Pick<AgentIo, 'kube' | 'clock' | 'logger' | 'random'>,
  coordinator: CoordinatorLease,
): DaemonSetLock {
  const { kube, clock, logger: log } = io;
  const random = io.random ?? Math.random;
  const nodeId = config.nodeId;
  const grouped = config.groupConcurrency > 0;
  return new DaemonSetLock({
    kube,
    nodeId,
    namespace: config.dsNamespace,
    name: config.dsName,
    annotation: config.lockAnnotation,
    ttlMs: config.lockTtlMs,
    concurrency: config.concurrency,
    concurrencyPercent: config.concurrencyPercent,
    ...(grouped
      ? {
          groups: {
            label: config.groupLabel,
            concurrency: config.groupConcurrency,
            percent: config.groupConcurrencyPercent,
          },
        }
      : {}),
    census: new FleetCensus({ kube, clock, groupLabel: grouped ? config.groupLabel : undefined }),
    countUnavailable: config.countUnavailable,
    controlPlaneLast: config.controlPlaneLast,
    ...(config.maxUnhealthyNodes === undefined ? {} : { maxUnhealthy: config.maxUnhealthyNodes }),
    ...(config.maxQuarantined === undefined ? {} : { maxQuarantined: config.maxQuarantined }),
    clock,
    log,
    random,
    ...(config.lockQueue === 'none' || !config.coordinator
      ? {}
      : { turns: new NodeTurnGate({ kube, nodeId, coordinator, clock, log, random }) }),
  });
}

/** The agent's dependencies for this configuration (exposed for `kured-ts check` and tests). */
export function createAgentDeps(config: Config, io: AgentIo): AgentDeps {
  const { kube, clock, logger } = io;
  const random = io.random ?? Math.random;
  const nodeId = config.nodeId;
  const node = new KubeNodeOps({ kube, nodeId, clock, log: logger, random });
  const coordinator = coordinatorOf(config, io);
  return {
    sentinel: io.sentinel ?? createSentinel(config),
    blockers: createBlockers(config, { kube, node, clock }),
    lock: createLock(config, io, coordinator),
    node,
    drainer: new KubeDrainer({
      kube,
      nodeId,
      clock,
      log: logger,
      timeoutMs: config.drainTimeoutMs,
      gracePeriodSeconds: config.drainGracePeriodSeconds,
      podSelector: config.drainPodSelector,
      rules: config.drainRules,
      fallback: config.drainFallback,
      skipWaitForDeleteTimeoutSeconds: config.skipWaitForDeleteTimeoutSeconds,
      evictionRetryDelayMs: config.evictionRetryDelayMs,
      random,
    }),
    ...(config.singleReplica === 'restart'
      ? {
          restarter: new RolloutRestarter({
            kube,
            nodeId,
            clock,
            podSelector: config.drainPodSelector,
            rules: config.drainRules,
          }),
        }
      : {}),
    events: new KubeEventRecorder({ kube, nodeId, clock, log: logger, periodMs: config.periodMs }),
    rebooter: io.rebooter ?? createRebooter(config),
    notifier: io.notifier ?? createNotifier(config.notifyUrl, { logger, clock, proxy: config.proxy }),
    metrics: io.metrics ?? noMetrics,
    window: createWindow(config.window),
    ...fleetLockOf(config, io),
    ...(kube.serverTime === undefined ? {} : { serverTime: kube.serverTime }),
    clock,
    logger,
    random,
  };
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
