// This node as the agent sees and changes it: cordon, taint, labels, status, readiness.

export interface Taint {
  key: string;
  value?: string;
  effect: string;
}

export interface NodeCondition {
  type: string;
  /** 'True' | 'False' | 'Unknown' */
  status: string;
  lastTransitionTime?: Date;
}

/** A snapshot of the Node object, reduced to what the agent decides on. */
export interface NodeState {
  name: string;
  unschedulable: boolean;
  taints: Taint[];
  /** status.nodeInfo.bootID ('' when unknown). */
  bootID: string;
  conditions: NodeCondition[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** Phases of the `kured-ts.dev/status` annotation (DESIGN §4). */
export type Phase =
  | 'idle'
  | 'pending'
  | 'outside-window'
  | 'blocked'
  | 'waiting-for-lock'
  | 'draining'
  | 'rebooting'
  | 'verifying'
  | 'completed'
  | 'failed';

export const PHASES: readonly Phase[] = [
  'idle',
  'pending',
  'outside-window',
  'blocked',
  'waiting-for-lock',
  'draining',
  'rebooting',
  'verifying',
  'completed',
  'failed',
];

/** The value of the `kured-ts.dev/status` annotation. */
export interface NodeStatus {
  phase: Phase;
  reason: string;
  /** RFC 3339 time the phase began. */
  since: string;
  bootID: string;
  /** RFC 3339 time the last reboot was verified (bootID changed, node Ready); shown by `kured-ts status`. */
  lastReboot?: string;
}

export const STATUS_ANNOTATION = 'kured-ts.dev/status';
/** kured's --annotate-nodes annotations (written by the agent, read by `kured-ts status`). */
export const KURED_IN_PROGRESS_ANNOTATION = 'weave.works/kured-reboot-in-progress';
export const KURED_REBOOT_NEEDED_ANNOTATION = 'weave.works/kured-most-recent-reboot-needed';
export const NODE_PAUSE_ANNOTATION = 'kured-ts.dev/reboot-paused';

/**
 * Operations on one node. Every write touches only what we own and never reverts others' changes
 * (DESIGN §2.3): cordon is a merge patch of spec.unschedulable, taints a guarded JSON patch.
 */
export interface NodeOps {
  /** A fresh read of the node. */
  get(signal?: AbortSignal): Promise<NodeState>;
  cordon(signal?: AbortSignal): Promise<void>;
  uncordon(signal?: AbortSignal): Promise<void>;
  /** Adds {key, effect: PreferNoSchedule} unless present. */
  addTaint(key: string, signal?: AbortSignal): Promise<void>;
  /** Removes our {key, PreferNoSchedule} taint if present; others' taints stay. */
  removeTaint(key: string, signal?: AbortSignal): Promise<void>;
  /** Merge patch of these labels only. */
  setLabels(labels: Record<string, string>, signal?: AbortSignal): Promise<void>;
  /** Merge patch of these annotations only; null deletes the key. */
  setAnnotations(annotations: Record<string, string | null>, signal?: AbortSignal): Promise<void>;
  /** Writes the status annotation (skips the write when phase, reason and bootID are unchanged). */
  setStatus(status: NodeStatus, signal?: AbortSignal): Promise<void>;
  /** Are the DaemonSet-owned pods on this node Ready? Names those that are not. */
  daemonSetPodsReady(signal?: AbortSignal): Promise<{ ready: boolean; notReady: string[] }>;
}
