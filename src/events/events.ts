// Events on the Node object, the first place an operator looks (`kubectl describe node`).

export type EventReason =
  | 'RebootRequired'
  | 'RebootBlocked'
  | 'AwaitingApproval'
  | 'LockAcquired'
  | 'Draining'
  | 'DrainFailed'
  /** --drain-fallback delete deleted pods whose eviction was refused until --drain-timeout (named). */
  | 'DrainFallback'
  /** --single-replica restart: Deployments restarted before the drain, or single replicas evicted as today (why). */
  | 'SingleReplicaRestart'
  /** The drained node is held before the reboot while a --hold-after-drain-annotation stands. */
  | 'RebootHeld'
  /** The drained node waits for the volumes of its evicted pods to detach (named) before its reboot. */
  | 'WaitingForVolumes'
  | 'Rebooting'
  | 'RebootAborted'
  | 'RebootVerified'
  | 'RebootFailed'
  | 'Uncordoned'
  | 'RebootCompleted'
  | 'LockLost'
  | 'RebootOverdue'
  /** The wave's failure budget is spent (--max-failures): a fleet pause by kured-ts names the failed nodes. */
  | 'WaveHalted'
  /** The agent's own admission policy denies one of its requests: the chart and the agent disagree. */
  | 'ConfigurationError'
  /** An admin asked for the node's reboot (`kured-ts reboot`), or took the request back. */
  | 'RebootRequested'
  | 'RebootRequestCancelled'
  /** The need survived --max-reboots-per-need reboots: the node is quarantined reboot-loop, for an operator. */
  | 'RebootLoop';

export interface EventRecorder {
  /**
   * Records an Event (involvedObject = this Node, reportingComponent kured-ts). The same reason and
   * message on the same node is written at most once per period; failures are logged, never thrown.
   */
  record(reason: EventReason, message: string, type?: 'Normal' | 'Warning'): Promise<void>;
}
