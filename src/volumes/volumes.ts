// The volumes a node's reboot waits for (issue 54, DESIGN §2.8): after the drain, the volumes of the
// pods it evicted must be detached from the node (status.volumesAttached, the attach-detach
// controller's word) and unmounted (status.volumesInUse, the kubelet's) before the host goes down: a
// reboot with a CSI volume still attached is an ungraceful detach (Longhorn rebuilds its replicas, an
// xfs log comes back dirty, an RWO volume waits out the 6-minute force-detach on its new node).
// Read from the node's own status, which the agent follows anyway: the wait costs no request. The
// volumes of the pods the drain leaves on purpose (DaemonSet pods, mirror pods, pods a drain rule
// skips) cannot detach: they are named and not waited for (VolumeReads).

/** The most volume names a reason lists (a node's status is written by its kubelet: bounded). */
const LISTED_MAX = 8;
/** The longest volume name a reason quotes. */
const NAME_MAX_CHARS = 160;

/** What the node's status says of its volumes, by unique name. */
export interface NodeVolumes {
  attached: readonly string[];
  inUse: readonly string[];
}

/** What the wait judges: the volumes it waits for, and those it leaves (kept by the pods left). */
export interface VolumesJudged {
  /** Attached or in use, of no pod left on the node: the reboot waits for them. */
  waiting: string[];
  /** Attached or in use by a pod the drain left (DaemonSet, mirror, skipped): not waited for. */
  kept: string[];
}

/** What the wait reads beyond the node's status: the pods left's volumes, and the detaches still running. */
export interface VolumeReads {
  /** Unique names (`kubernetes.io/csi/<driver>^<handle>`) of the volumes the node's pods left use. */
  kept(signal?: AbortSignal): Promise<Set<string>>;
  /**
   * Of these CSI volumes, those whose VolumeAttachment to this node still exists: the attach-detach
   * controller drops a volume from the node's status before the CSI detach runs, and deletes its
   * VolumeAttachment once the detach succeeded. Throws when it cannot tell (the wait asks again).
   */
  detaching(names: readonly string[], signal?: AbortSignal): Promise<string[]>;
}

/** Sorts the node's attached and in-use volumes into those waited for and those kept. */
export function judgeVolumes(volumes: NodeVolumes, kept: ReadonlySet<string>): VolumesJudged {
  const all = [...new Set([...volumes.attached, ...volumes.inUse])].sort();
  return { waiting: all.filter((v) => !kept.has(v)), kept: all.filter((v) => kept.has(v)) };
}

/** `names` in words for a reason: the first LISTED_MAX, each bounded, and how many more. */
export function volumeList(names: readonly string[]): string {
  const shown = names
    .slice(0, LISTED_MAX)
    .map((n) => (n.length <= NAME_MAX_CHARS ? n : `${n.slice(0, NAME_MAX_CHARS - 1)}…`));
  const more = names.length - shown.length;
  return more > 0 ? `${shown.join(', ')} and ${String(more)} more` : shown.join(', ');
}

/** The unique name the kubelet and the attach-detach controller give a CSI persistent volume. */
export function csiVolumeName(driver: string, handle: string): string {
  return `kubernetes.io/csi/${driver}^${handle}`;
}

/** The driver and handle of a CSI volume's unique name; undefined for any other volume. */
export function csiParts(name: string): { driver: string; handle: string } | undefined {
  const m = /^kubernetes\.io\/csi\/([^^]+)\^(.+)$/.exec(name);
  return m === null ? undefined : { driver: m[1] ?? '', handle: m[2] ?? '' };
}
