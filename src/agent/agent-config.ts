// What the agent is built from: the flags its reboot cycle reads and the seams it talks to.
// (Apart from agent.ts and decision/, which both use them.)
import type { SilenceKeeper } from '../silence/silence-keeper.js';
import type { Hooks } from '../hooks/hooks.js';
import type { VolumeReads } from '../volumes/volumes.js';
import type { Blocker } from '../blockers/blocker.js';
import type { Clock } from '../clock/clock.js';
import type { Config } from '../config/config.js';
import type { Lock } from '../lock/lock.js';
import type { Logger } from '../log/logger.js';
import type { AgentMetrics } from '../metrics/agent-metrics.js';
import type { Drainer } from '../drain/drainer.js';
import type { RolloutRestarter } from '../drain/rollout-restart.js';
import type { ShutdownSettings } from '../host/shutdown.js';
import type { LoadBalancers } from '../drain/load-balancers.js';
import type { FleetLock } from '../fleetlock/fleetlock.js';
import type { EventRecorder } from '../events/events.js';
import type { NodeOps } from '../node/node.js';
import type { Notifier } from '../notify/notifier.js';
import type { Rebooter } from '../reboot/rebooter.js';
import type { Sentinel } from '../sentinel/sentinel.js';
import type { Window } from '../window/window.js';
import type { WaveStore } from '../lock/wave-store.js';
import type { HealthChecks } from '../blockers/health-check.js';
import type { CapacityConfig } from '../capacity/settings.js';
import type { NodeChecks } from '../blockers/node-check.js';

/** The flags the cycle reads (DESIGN §3), the capacity flags among them (its wave's failure budget). */
export type AgentConfig = CapacityConfig &
  Pick<
    Config,
    | 'nodeId'
    | 'periodMs'
    | 'drainDelayMs'
    | 'rebootDelayMs'
    | 'holdAfterDrainAnnotations'
    | 'holdTimeoutMs'
    | 'volumeDetachTimeoutMs'
    | 'volumeDetachTimeoutAction'
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
    | 'postRebootWaitTaints'
    | 'postRebootTimeoutMs'
    | 'onPostRebootTimeout'
    | 'waitForDaemonSetPods'
    | 'rebootRetries'
    | 'maxRebootsPerNeed'
    | 'onUncordonedDuringDelay'
    | 'requireApproval'
    | 'approvalTtlMs'
    | 'historyLimit'
    | 'taintTiming'
    | 'rebootDeadlineMs'
    | 'autoscalerProtection'
    | 'settleTimeMs'
    | 'excludeFromLb'
    | 'lbDrainWaitMs'
    | 'healthCheckTimeoutMs'
    | 'failureTemplates'
    // what its own admission policy is rendered from: a denial of it names them (own-denial.ts)
    | 'dsNamespace'
    | 'dsName'
    | 'lockAnnotation'
    | 'drainGracePeriodSeconds'
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
  /** Whether the cluster has cloud load balancers (the wait before the drain). */
  loadBalancers: LoadBalancers;
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
   * The agent's own Node and pods, followed by watches (src/kube/own-views.ts), through which `node`,
   * the lock, the blockers and the drain read them; absent (tests over fakes, `kured-ts check`): every
   * wait polls.
   */
  views?: AgentViews;
  /**
   * The API server's time when ours is `local` (from its answers' Date header); undefined before
   * any answer. Times written on the server's clock (approvals) are judged against it.
   */
  serverTime?: { at(local: Date): Date | undefined };
  /** Graceful node shutdown on this host, read at start (src/host/shutdown.ts); published in the status. */
  shutdown?: ShutdownSettings;
  /** The wave's side on the lock's DaemonSet (its id, the halt), when a wave is tracked (waveTracked). */
  waves?: WaveStore;
  /** --health-check, judged again after the reboot (the wave's soak). */
  checks?: HealthChecks;
  /** --node-check, judged after the drain before the reboot (and at the slot: a blocker). */
  nodeChecks?: NodeChecks;
  /**
   * The volumes of the pods the drain leaves on the node (src/drain/volume-reads.ts): the wait for
   * the volumes after the drain does not wait for them. Absent: none are kept.
   */
  volumes?: VolumeReads;
  /** --alertmanager-url with --silence-matcher: the node's silences for its cycle (src/silence/). */
  silences?: SilenceKeeper;
  /** --before-reboot-hook, --after-reboot-hook: the Jobs run around the reboot (src/hooks/). */
  hooks?: Hooks;
}

/** What the agent loop asks of the watches of its own node (OwnViews in src/kube/own-views.ts). */
export interface AgentViews {
  /** Follows the own Node (and the own pods while held) until `signal` aborts. */
  run(signal: AbortSignal): Promise<void>;
  /** Is the own Node followed now (a wait for its change is worth more than a poll)? */
  readonly following: boolean;
  /** Changes of the own Node and pods taken in so far (the `since` of changed). */
  version(): number;
  /**
   * Resolves at the next change of the own Node (and of the own pods with `pods`), when a watch
   * breaks, after `ms`, or when `signal` aborts; at once when one came since `since` (version()).
   */
  changed(ms: number, signal: AbortSignal, pods: boolean, since?: number): Promise<void>;
  /** Calls `listener` with the own Node's annotations at each change; returns the function that stops it. */
  onNodeChange(listener: (annotations: Record<string, string>) => void): () => void;
  /** Stops following the own pods (the agent is idle: nothing reads them until a reboot is wanted). */
  releasePods(): void;
  /** A new pass of the decision begins: it shares no read's answer with the pass before. */
  newPass(): void;
  /** Follows the lock's DaemonSet: this agent holds a slot (its cycle reads the lock again and again). */
  holdLock(): void;
  /** Stops following the lock's DaemonSet: no slot held (a waiter follows only its own Node). */
  releaseLock(): void;
  /**
   * What of the own Node, as followed, a pass decides on (its labels, annotations, cordon and
   * taints; not its status, which the kubelet moves), and of the lock as last seen; undefined while
   * the Node is not followed.
   */
  fingerprint(): string | undefined;
  /**
   * Which of the views has heard nothing from the API server for longer than its staleness bound, in
   * words that stay the same while it is stale ("Node n1: nothing heard for more than 90 s (the log
   * says why)"); undefined when none has. The status
   * says it (`kured-ts status`).
   */
  stale(): string | undefined;
}
