// What the agent is built from: the flags its reboot cycle reads and the seams it talks to.
// (Apart from agent.ts and decision/, which both use them.)
import type { Blocker } from '../blockers/blocker.js';
import type { Clock } from '../clock/clock.js';
import type { Config } from '../config/config.js';
import type { Lock } from '../lock/lock.js';
import type { Logger } from '../log/logger.js';
import type { AgentMetrics } from '../metrics/agent-metrics.js';
import type { Drainer } from '../drain/drainer.js';
import type { RolloutRestarter } from '../drain/rollout-restart.js';
import type { FleetLock } from '../fleetlock/fleetlock.js';
import type { EventRecorder } from '../events/events.js';
import type { NodeOps } from '../node/node.js';
import type { Notifier } from '../notify/notifier.js';
import type { Rebooter } from '../reboot/rebooter.js';
import type { Sentinel } from '../sentinel/sentinel.js';
import type { Window } from '../window/window.js';

/** The flags the cycle reads (DESIGN §3). */
export type AgentConfig = Pick<
  Config,
  | 'nodeId'
  | 'periodMs'
  | 'drainDelayMs'
  | 'rebootDelayMs'
  | 'holdAfterDrainAnnotations'
  | 'holdTimeoutMs'
  | 'singleReplica'
  | 'singleReplicaTimeoutMs'
  | 'forceReboot'
  | 'onDrainFailure'
  | 'quarantineCordon'
  | 'quarantineRetryMs'
  | 'lockTtlMs'
  | 'lockQueue'
  | 'lockReleaseDelayMs'
  | 'preferNoScheduleTaint'
  | 'annotateNodes'
  | 'preRebootNodeLabels'
  | 'postRebootNodeLabels'
  | 'messageTemplateDrain'
  | 'messageTemplateReboot'
  | 'messageTemplateUncordon'
  | 'readinessGates'
  | 'postRebootTimeoutMs'
  | 'onPostRebootTimeout'
  | 'waitForDaemonSetPods'
  | 'rebootRetries'
  | 'onUncordonedDuringDelay'
  | 'groupLabel'
  | 'groupConcurrency'
  | 'requireApproval'
  | 'approvalTtlMs'
  | 'historyLimit'
  | 'taintTiming'
  | 'rebootDeadlineMs'
  | 'autoscalerProtection'
  | 'settleTimeMs'
  // what its own admission policy is rendered from: a denial of it names them (own-denial.ts)
  | 'dsNamespace'
  | 'dsName'
  | 'lockAnnotation'
  | 'drainGracePeriodSeconds'
  | 'concurrency'
  | 'concurrencyPercent'
  | 'drainFallback'
>;

/** Everything the agent talks to. */
export interface AgentDeps {
  sentinel: Sentinel;
  /** Evaluated in order; the first block wins (firstBlock). */
  blockers: readonly Blocker[];
  lock: Lock;
  node: NodeOps;
  drainer: Drainer;
  /** --single-replica restart: restarts single replicas' Deployments before the drain; undefined when off. */
  restarter?: RolloutRestarter;
  events: EventRecorder;
  rebooter: Rebooter;
  notifier: Notifier;
  metrics: AgentMetrics;
  window: Window;
  clock: Clock;
  logger: Logger;
  /** [0, 1), for jitter. */
  random: () => number;
  /** Who this agent is (its pod name), written into the cycle record for people reading it. */
  agentId?: string;
  /** --fleetlock-url: the FleetLock server whose slot the node takes before the lock; undefined = none. */
  fleetLock?: FleetLock;
  /**
   * The API server's time when ours is `local` (from its answers' Date header); undefined before
   * any answer. Times written on the server's clock (approvals) are judged against it.
   */
  serverTime?: { at(local: Date): Date | undefined };
}
