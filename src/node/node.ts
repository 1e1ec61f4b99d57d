// This node as the agent sees and changes it: cordon, taint, labels, annotations, status, readiness.
import type { NodeStatus } from './status.js';

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
  /** metadata.resourceVersion ('' when unknown): the guard of a conditional write. */
  resourceVersion: string;
  unschedulable: boolean;
  /**
   * Field managers that own spec.unschedulable (metadata.managedFields); [] when the server does not
   * say. Anyone but kured-ts (or kured) here means someone else set the cordon as it is now.
   */
  unschedulableOwners: string[];
  taints: Taint[];
  /** status.nodeInfo.bootID ('' when unknown). */
  bootID: string;
  /** status.nodeInfo.kernelVersion and osImage, for the reboot history. */
  kernelVersion?: string;
  osImage?: string;
  conditions: NodeCondition[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /**
   * The volumes attached to the node (status.volumesAttached, the attach-detach controller's word)
   * and in use on it (status.volumesInUse, the kubelet's), by their unique names; absent when the
   * read did not carry them (src/volumes/volumes.ts).
   */
  volumes?: { attached: string[]; inUse: string[] };
}

/** kured's --annotate-nodes annotations (written by the agent, read by `kured-ts status`). */
export const KURED_IN_PROGRESS_ANNOTATION = 'weave.works/kured-reboot-in-progress';
export const KURED_REBOOT_NEEDED_ANNOTATION = 'weave.works/kured-most-recent-reboot-needed';
/** Per-node opt-out: no reboot starts, and a node cordoned for one is left cordoned at its end. */
export const NODE_PAUSE_ANNOTATION = 'kured-ts.dev/reboot-paused';

/** One write of fields kured-ts owns; null removes a label or annotation. */
export interface NodeWrite {
  /** true cordons; false uncordons (the field is removed, as `kubectl uncordon` leaves it). */
  unschedulable?: boolean;
  labels?: Record<string, string | null>;
  annotations?: Record<string, string | null>;
  /**
   * Our PreferNoSchedule taint of this key goes in the same write (the end of a cycle): only in a
   * write guarded by a resourceVersion, which then writes the Node's own taint list as it stood at
   * that version, ours left out (DESIGN §2.3: guarded, never from a stale copy).
   */
  withoutTaint?: string;
}

/**
 * Operations on one node. Every write touches only what we own and never reverts others' changes
 * (DESIGN §2.3): cordon is a merge patch of spec.unschedulable, taints a guarded JSON patch.
 */
export interface NodeOps {
  /** A fresh read of the node. */
  get(signal?: AbortSignal): Promise<NodeState>;
  /**
   * One merge patch of `change`. With `ifVersion`, only if the node is still at that resourceVersion:
   * resolves to undefined, writing nothing, when it changed since (read again and decide again).
   * Resolves to the node as written.
   */
  write(change: NodeWrite, ifVersion?: string, signal?: AbortSignal): Promise<NodeState | undefined>;
  /** Adds {key, effect: PreferNoSchedule} unless present. */
  addTaint(key: string, signal?: AbortSignal): Promise<void>;
  /** Removes our {key, PreferNoSchedule} taint if present; others' taints stay. */
  removeTaint(key: string, signal?: AbortSignal): Promise<void>;
  /** Writes the status annotation (the caller decides whether it changed). */
  setStatus(status: NodeStatus, signal?: AbortSignal): Promise<void>;
  /** Are the DaemonSet-owned pods on this node Ready? Names those that are not. */
  daemonSetPodsReady(signal?: AbortSignal): Promise<{ ready: boolean; notReady: string[] }>;
}
