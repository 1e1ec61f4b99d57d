// simulate --volumes-per-node (issue 54): CSI volumes on the simulated nodes, and the part of the
// attach-detach controller and the kubelet that the reboot's wait reads: the Node's
// status.volumesAttached and status.volumesInUse. A workload replica with a volume has it attached to
// the node its pod runs on; once its pod is gone from a node, the volume is detached from it after
// --volume-detach-time (never, for a --stuck-volume). The report counts, from this attach state and
// not from any agent's word, the volumes still attached to a node when its host went down.
import { csiVolumeName } from '../volumes/volumes.js';
import { REPLICA_LABEL, type VolumeSpec } from './cluster-spec.js';
import type { SimNode, SimPod, SimServer, SimWriteEvent } from './objects.js';
import type { VirtualTime } from './virtual-time.js';

/** The CSI driver of the simulated volumes. */
const SIM_CSI_DRIVER = 'sim.csi.kured-ts.dev';

/** What the report says of the volumes. */
export interface VolumeStats {
  /** Volumes the simulation made. */
  volumes: number;
  /** Volumes that never detach (--stuck-volume), by name. */
  stuck: string[];
  /** Volumes still attached to a node when its host went down, summed over every reboot. */
  attachedAtReboot: number;
  /** Reboots of a node that had volumes on it before its drain. */
  rebootsWithVolumes: number;
}

/** The volumes of `spec` started on the cluster's nodes; undefined without any. */
export function startVolumes(
  server: SimServer,
  time: VirtualTime,
  spec: VolumeSpec | undefined,
  names: readonly string[],
): SimVolumes | undefined {
  if (spec === undefined || spec.perNode <= 0) return undefined;
  const volumes = new SimVolumes(server, time, spec);
  volumes.start(names);
  return volumes;
}

/** The simulated volumes of one cluster: see the file comment. */
export class SimVolumes {
  /** Volume name by workload replica (its pods come and go; its volume follows them). */
  private readonly byReplica = new Map<string, string>();
  private readonly stuckVolumes = new Set<string>();
  /** Nodes that have had a volume attached. */
  private readonly hadVolumes = new Set<string>();
  private readonly stats = { attachedAtReboot: 0, rebootsWithVolumes: 0 };
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly server: SimServer,
    private readonly time: VirtualTime,
    private readonly spec: VolumeSpec,
  ) {}

  /** Gives the first replicas on each node their volumes, attached there, and follows the pods from now on. */
  start(names: readonly string[]): void {
    names.forEach((node, i) => {
      const replicas = this.server
        .list<SimPod>('pods')
        .filter((p) => p.spec.nodeName === node && p.metadata.labels?.[REPLICA_LABEL] !== undefined)
        .map((p) => p.metadata.labels?.[REPLICA_LABEL] ?? '')
        .sort()
        .slice(0, this.spec.perNode);
      replicas.forEach((replica, j) => {
        const volume = csiVolumeName(SIM_CSI_DRIVER, `vol-${replica}`);
        this.byReplica.set(replica, volume);
        if (i < this.spec.stuck && j === 0) this.stuckVolumes.add(volume);
        this.attach(node, volume);
      });
    });
    this.unsubscribe = this.server.onWrite((e) => {
      this.onWrite(e);
    });
  }

  stop(): void {
    this.unsubscribe?.();
  }

  /** The host of `node` goes down: what is still attached to it is counted (the invariant of issue 54). */
  down(node: string): void {
    this.stats.attachedAtReboot += this.attachedTo(node).length;
    if (this.hadVolumes.has(node)) this.stats.rebootsWithVolumes++;
  }

  result(): VolumeStats | undefined {
    if (this.byReplica.size === 0) return undefined;
    return { volumes: this.byReplica.size, stuck: [...this.stuckVolumes].sort(), ...this.stats };
  }

  private onWrite(e: SimWriteEvent): void {
    if (e.resource !== 'pods') return;
    const pod = e.object as SimPod;
    const replica = pod.metadata.labels?.[REPLICA_LABEL] ?? '';
    const volume = this.byReplica.get(replica);
    const node = pod.spec.nodeName ?? '';
    if (volume === undefined || node === '') return;
    if (e.type === 'DELETED') this.detachLater(node, volume, replica);
    else if (pod.metadata.deletionTimestamp === undefined) this.attachSoon(node, volume);
  }

  /** A pod with `volume` bound to `node`: attached there (once its write is done). */
  private attachSoon(node: string, volume: string): void {
    if (this.attachedTo(node).includes(volume)) return;
    this.time.after(0, () => {
      this.attach(node, volume);
    });
  }

  /** The pod of `replica` is gone from `node`: its volume leaves it after detachMs, unless stuck. */
  private detachLater(node: string, volume: string, replica: string): void {
    if (this.stuckVolumes.has(volume)) return;
    this.time.after(this.spec.detachMs, () => {
      // a pod of the same replica back on the node meanwhile keeps it
      const back = this.server
        .list<SimPod>('pods')
        .some((p) => p.spec.nodeName === node && p.metadata.labels?.[REPLICA_LABEL] === replica);
      if (!back) this.patch(node, (names) => names.filter((v) => v !== volume));
    });
  }

  private attach(node: string, volume: string): void {
    this.hadVolumes.add(node);
    this.patch(node, (names) => (names.includes(volume) ? names : [...names, volume]));
  }

  /** The volumes attached to `node` now, as its status says. */
  private attachedTo(node: string): string[] {
    const n = this.server.get<SimNode>('nodes', undefined, node);
    return (n?.status.volumesAttached ?? []).map((v) => v.name);
  }

  /** Sets the node's attached and in-use volumes to `change` of what is attached now. */
  private patch(node: string, change: (names: string[]) => string[]): void {
    const n = this.server.get<SimNode>('nodes', undefined, node);
    if (n === undefined) return;
    const before = (n.status.volumesAttached ?? []).map((v) => v.name);
    const after = change(before);
    if (after.length === before.length && after.every((v, i) => v === before[i])) return;
    n.status.volumesAttached = after.map((name) => ({ name, devicePath: '' }));
    n.status.volumesInUse = after;
    this.server.update('nodes', n);
  }
}
