// The simulated cluster: nodes whose kubelets keep readiness and boot IDs, a scheduler, workloads
// that recreate evicted pods, PDBs, blocking batch pods — all acting on the fake API server's
// direct API, at virtual time. The agents are not here (see simulation.ts); they only see the API.
import { NodeStates } from './node-states.js';
import {
  isReady,
  ownerKind,
  setCondition,
  type SimDaemonSet,
  type SimNode,
  type SimPod,
  type SimServer,
  type SimWriteEvent,
} from './objects.js';
import {
  agentPod,
  daemonSet,
  etcdPod,
  nodeObject,
  readyCondition,
  simKernel,
  stuck,
} from './cluster-objects.js';
import { Outages } from './outages.js';
import { BadKernel } from './bad-kernel.js';
import { forkRandom, randomBootId, type Random } from './random.js';
import { placements, podCounts } from './scheduler.js';
import { BlockingChurn } from './blocking-churn.js';
import {
  createStartupWorkloads,
  pad,
  readyPod,
  workloadPod,
  type WorkloadContext,
} from './cluster-workloads.js';
import type { VirtualTime } from './virtual-time.js';
import {
  BLOCKING_LABEL,
  REPLICA_LABEL,
  type ClusterSpec,
  type HostHooks,
  type PodStats,
  type SimNodeState,
  stuckAt,
} from './cluster-spec.js';

export class SimCluster {
  readonly nodes = new NodeStates();
  readonly names: string[] = [];
  /** Hosts down, now, at most and each time (per zone with --zones). */
  readonly outages = new Outages();
  readonly podStats: PodStats = {
    evictionsByReplica: new Map(),
    placementsOnPendingNodes: 0,
    blockingOnPendingNodes: 0,
    placements: 0,
  };
  /** When each node's reboot became required (virtual ms, absolute). */
  readonly requiredAtMs = new Map<string, number>();
  private readonly churn: BlockingChurn | undefined;
  workloads: ReturnType<typeof createStartupWorkloads> | undefined;
  private readonly random: Random;
  private readonly terminating = new Set<string>();
  private readonly starting = new Set<string>();
  private readonly pending: string[] = [];
  private placing = false;
  private started = false;
  private hooks: HostHooks | undefined;
  private unsubscribe: (() => void) | undefined;
  /** Nodes that need a reboot during the run (at the start or later, see requiredOverMs). */
  private readonly initiallyNeeded = new Set<string>();
  /** --bad-kernel: the nodes in the order their first reboot was requested, and the bad one. */
  readonly badKernel: BadKernel;
  private arrivalsLeft = 0;
  /** Mirrors of the server's pods and nodes, kept from its write feed (listing deserializes all). */
  private readonly pods = new Map<string, SimPod>();
  private readonly podsByNode = new Map<string, Set<string>>();
  private readonly nodeObjects = new Map<string, SimNode>();

  constructor(
    private readonly server: SimServer,
    private readonly time: VirtualTime,
    readonly spec: ClusterSpec,
  ) {
    this.random = forkRandom(spec.seed, 'cluster');
    this.badKernel = new BadKernel(spec.badKernel ?? 0);
    this.churn = spec.blockingChurn
      ? new BlockingChurn(server, time, spec.blockingChurn, forkRandom(spec.seed, 'churn'))
      : undefined;
    const width = String(spec.nodes).length;
    for (let i = 1; i <= spec.nodes; i++) {
      const name = `node-${pad(i, Math.max(2, width))}`;
      this.names.push(name);
      // zone-a, zone-b, … round robin (--zones)
      this.outages.place(name, i, spec.zones ?? 0);
    }
  }

  /** Creates the initial objects (steady state: every pod placed and Ready) and starts the actors. */
  populate(hooks: HostHooks): void {
    this.hooks = hooks;
    const { spec } = this;
    this.unsubscribe = this.server.onWrite(this.onWrite);
    this.server.create<SimDaemonSet>('daemonsets', daemonSet(spec.nodes));
    this.names.forEach((name, i) => {
      const needsReboot = i < spec.needsReboot;
      const preCordoned = needsReboot && i >= spec.needsReboot - spec.preCordoned;
      const bootID = randomBootId(this.random);
      const later = needsReboot && this.requirement(name);
      this.nodes.set(name, {
        name,
        needsReboot: needsReboot && !later,
        preCordoned,
        up: true,
        rebooting: false,
        reboots: 0,
        bootID,
        stuck: needsReboot && stuckAt(spec, i),
      });
      const zone = this.outages.zoneOf(name);
      const controlPlane = this.isControlPlane(name);
      const boot = { bootID, cordoned: preCordoned, controlPlane, ...(zone === undefined ? {} : { zone }) };
      this.server.create<SimNode>('nodes', nodeObject(name, boot, this.isoNow()));
      this.server.create<SimPod>('pods', readyPod(agentPod(name), name, this.isoNow()));
      if (controlPlane) this.server.create<SimPod>('pods', readyPod(etcdPod(name), name, this.isoNow()));
    });
    this.workloads = createStartupWorkloads(this.workloadContext(), spec.needsReboot);
    this.degrade();
    this.churn?.start();
    this.started = true;
  }

  /** A node that needs a reboot: required now (false), or later in the run (true, scheduled). */
  private requirement(name: string): boolean {
    this.initiallyNeeded.add(name);
    const over = this.spec.requiredOverMs ?? 0;
    if (over > 0) this.requireLater(name, this.random() * over);
    else this.required(name);
    return over > 0;
  }

  /** Is this one of the first spec.controlPlane nodes (a control-plane node with an etcd member)? */
  isControlPlane(name: string): boolean {
    const cp = this.spec.controlPlane ?? 0;
    return cp > 0 && this.names.slice(0, cp).includes(name);
  }

  /** The etcd member on a control-plane node is Ready (false without one). */
  etcdReady(name: string): boolean {
    return this.podsOn(name).some((p) => p.metadata.labels?.component === 'etcd' && isReady(p));
  }

  /** The last `unhealthy.nodes` nodes go NotReady now and come back after `unhealthy.durationMs`. */
  private degrade(): void {
    const { nodes = 0, durationMs = 0 } = this.spec.unhealthy ?? {};
    if (nodes <= 0 || durationMs <= 0) return;
    for (const name of this.names.slice(-nodes)) {
      this.setReady(name, false, 'KubeletDegraded');
      this.time.after(durationMs, () => {
        if (this.nodes.get(name)?.up === true) this.setReady(name, true, 'KubeletReady');
      });
    }
  }

  private setReady(name: string, ready: boolean, reason: string): void {
    this.patchNode(name, (n) => {
      n.status.conditions = setCondition(n.status.conditions, readyCondition(ready, this.isoNow(), reason));
    });
  }

  stop(): void {
    this.unsubscribe?.();
    this.churn?.stop();
    this.workloads?.stop();
  }

  /** Churn jobs created (--blocking-churn). */
  get churnJobs(): number {
    return this.churn?.created ?? 0;
  }

  /** Reboot-required is still to appear on some node (requiredOverMs). */
  get requirementsPending(): boolean {
    return this.arrivalsLeft > 0;
  }

  private requireLater(name: string, atMs: number): void {
    this.arrivalsLeft++;
    this.time.after(atMs, () => {
      this.arrivalsLeft--;
      this.required(name);
    });
  }

  /** `name`'s reboot became required now (its node's state, if made yet, says so). */
  private required(name: string): void {
    const node = this.nodes.get(name);
    if (node) this.nodes.update(node, { needsReboot: true });
    this.requiredAtMs.set(name, this.time.nowMs());
    this.hooks?.required?.(name);
  }

  /** The simulated Rebooter's action: the host goes down soon and boots after bootTimeMs. */
  requestReboot(name: string): void {
    const node = this.nodes.get(name);
    if (!node || node.rebooting) return;
    this.nodes.update(node, { rebooting: true });
    this.badKernel.rebooting(name);
    this.time.after(this.spec.shutdownMs, () => {
      this.goDown(node);
    });
  }

  private goDown(node: SimNodeState): void {
    node.up = false;
    this.workloads?.volumes?.down(node.name); // what is still attached is counted
    this.outages.down(node.name, this.time.nowMs());
    this.hooks?.down(node.name);
    this.setReady(node.name, false, 'KubeletNotReady');
    for (const pod of this.podsOn(node.name)) {
      if (pod.metadata.deletionTimestamp)
        this.server.delete('pods', pod.metadata.namespace, pod.metadata.name);
      else this.setPodReady(pod, false);
    }
    this.time.after(this.spec.bootTimeMs, () => {
      this.boot(node);
    });
  }

  private boot(node: SimNodeState): void {
    node.up = true;
    // a stuck sentinel asks again on the new boot
    this.nodes.update(node, { rebooting: false, needsReboot: node.stuck });
    node.reboots++;
    node.bootID = randomBootId(this.random);
    this.outages.up(node.name, this.time.nowMs());
    const ready = this.badKernel.kubeletReady(node.name, this.isoNow());
    this.patchNode(node.name, (n) => {
      n.status.nodeInfo.bootID = node.bootID;
      n.status.nodeInfo.kernelVersion = simKernel(node.reboots);
      n.status.conditions = setCondition(n.status.conditions, ready);
    });
    for (const pod of this.podsOn(node.name)) this.startPod(pod);
    this.time.after(this.spec.podStartMs, () => {
      if (node.up) this.hooks?.agentStarted(node.name);
    });
    this.schedulePlacement();
  }

  /** Did this node need a reboot at the start (or, with requiredOverMs, later in the run)? */
  neededAtStart(name: string): boolean {
    return this.initiallyNeeded.has(name);
  }

  /** Pods a drain must remove from this node: not DaemonSet-owned, not static (mirror), not terminal. */
  evictableOn(node: string): SimPod[] {
    return this.podsOn(node).filter(
      (p) =>
        ownerKind(p) !== 'DaemonSet' &&
        ownerKind(p) !== 'Node' &&
        !['Succeeded', 'Failed'].includes(p.status?.phase ?? ''),
    );
  }

  /** Workload and DaemonSet pods bound to this node (not yet removed). */
  podsOn(node: string): SimPod[] {
    const out: SimPod[] = [];
    for (const key of this.podsByNode.get(node) ?? []) {
      const pod = this.pods.get(key);
      if (pod) out.push(pod);
    }
    return out;
  }

  /** The Node objects as last written. */
  nodeList(): SimNode[] {
    return [...this.nodeObjects.values()];
  }

  nodeObject(name: string): SimNode | undefined {
    return this.nodeObjects.get(name);
  }

  private readonly onWrite = (e: SimWriteEvent): void => {
    if (e.resource === 'pods') {
      this.mirrorPod(e.type, e.object as SimPod);
      if (this.hooks) this.onPod(e.type, e.object as SimPod);
    } else if (e.resource === 'nodes') {
      const node = e.object as SimNode;
      if (e.type === 'DELETED') this.nodeObjects.delete(node.metadata.name);
      else this.nodeObjects.set(node.metadata.name, node);
      if (this.pending.length > 0) this.schedulePlacement();
    }
  };

  private mirrorPod(type: SimWriteEvent['type'], pod: SimPod): void {
    const key = `${pod.metadata.namespace ?? ''}/${pod.metadata.name}`;
    const old = this.pods.get(key);
    if (old?.spec.nodeName) this.podsByNode.get(old.spec.nodeName)?.delete(key);
    if (type === 'DELETED') {
      this.pods.delete(key);
      return;
    }
    this.pods.set(key, pod);
    const node = pod.spec.nodeName;
    if (node === undefined) return;
    let set = this.podsByNode.get(node);
    if (!set) {
      set = new Set();
      this.podsByNode.set(node, set);
    }
    set.add(key);
  }

  private onPod(type: SimWriteEvent['type'], pod: SimPod): void {
    const key = `${pod.metadata.namespace ?? ''}/${pod.metadata.name}`;
    if (type === 'DELETED') {
      if (!this.terminating.delete(key)) this.podGone(pod);
      this.starting.delete(key);
      return;
    }
    if (pod.metadata.deletionTimestamp) this.onTerminating(key, pod);
    else if (!pod.spec.nodeName) this.onUnbound(type, key);
    else if (!isReady(pod) && pod.status?.phase !== 'Succeeded') this.startPod(pod);
  }

  private onTerminating(key: string, pod: SimPod): void {
    if (this.terminating.has(key)) return;
    this.terminating.add(key);
    this.podGone(pod);
    if (!stuck(pod)) this.finishTermination(pod); // a finalizer nobody removes keeps it terminating
  }

  private onUnbound(type: SimWriteEvent['type'], key: string): void {
    if (type !== 'ADDED') return;
    this.pending.push(key);
    this.schedulePlacement();
  }

  /** A pod stops counting for its workload: count the eviction and create a replacement. */
  private podGone(pod: SimPod): void {
    const replica = pod.metadata.labels?.[REPLICA_LABEL];
    if (!replica || !this.started) return;
    const stats = this.podStats.evictionsByReplica;
    stats.set(replica, (stats.get(replica) ?? 0) + 1);
    const app = pod.metadata.labels?.app ?? 'app';
    this.time.after(0, () => {
      this.server.create<SimPod>('pods', workloadPod({ random: this.random, spec: this.spec }, app, replica));
    });
  }

  /** The kubelet removes a terminating pod after its grace period (at once when its node is down). */
  private finishTermination(pod: SimPod): void {
    const node = pod.spec.nodeName ? this.nodes.get(pod.spec.nodeName) : undefined;
    const grace = pod.metadata.deletionGracePeriodSeconds ?? pod.spec.terminationGracePeriodSeconds ?? 30;
    const delay = node?.up ? grace * 1000 : 0;
    const { namespace, name, uid } = pod.metadata;
    this.time.after(delay, () => {
      const current = this.server.get<SimPod>('pods', namespace, name);
      if (current && current.metadata.uid === uid) this.server.delete('pods', namespace, name);
    });
  }

  /** The kubelet starts a pod on an up node; it becomes Ready after podStartMs. */
  private startPod(pod: SimPod): void {
    const key = `${pod.metadata.namespace ?? ''}/${pod.metadata.name}`;
    const node = pod.spec.nodeName ? this.nodes.get(pod.spec.nodeName) : undefined;
    if (!node?.up || this.starting.has(key) || pod.status?.phase === 'Succeeded') return;
    this.starting.add(key);
    const { namespace, name, uid } = pod.metadata;
    this.time.after(this.spec.podStartMs, () => {
      this.starting.delete(key);
      const current = this.server.get<SimPod>('pods', namespace, name);
      if (!current || current.metadata.uid !== uid || current.metadata.deletionTimestamp || !node.up) return;
      this.setPodReady(current, true);
    });
  }

  private setPodReady(pod: SimPod, ready: boolean): void {
    const status = pod.status ?? {};
    const next: SimPod = {
      ...pod,
      status: {
        ...status,
        phase: 'Running',
        conditions: setCondition(status.conditions ?? [], {
          type: 'Ready',
          status: ready ? 'True' : 'False',
          lastTransitionTime: this.isoNow(),
        }),
      },
    };
    this.server.update('pods', next);
  }

  private schedulePlacement(): void {
    if (this.placing) return;
    this.placing = true;
    this.time.after(0, () => {
      this.placing = false;
      this.placePending();
    });
  }

  /** The scheduler (scheduler.ts) places every pending pod it can. */
  private placePending(): void {
    const pods = this.pending
      .map((key) => this.pods.get(key))
      .filter(
        (pod): pod is SimPod => pod !== undefined && !pod.spec.nodeName && !pod.metadata.deletionTimestamp,
      );
    const targets = placements(this.nodeList(), podCounts(this.pods.values()), pods.length, this.random);
    if (targets.every((t) => t === undefined) && pods.length > 0) return;
    pods.forEach((pod, i) => {
      const target = targets[i];
      if (target !== undefined) this.bind(pod, target);
    });
    this.pending.length = 0;
  }

  private bind(pod: SimPod, node: string): void {
    this.podStats.placements++;
    const pending = this.nodes.get(node)?.needsReboot === true;
    const blocking = pod.metadata.labels?.[BLOCKING_LABEL] === 'true';
    if (pending && blocking) this.podStats.blockingOnPendingNodes++;
    else if (pending) this.podStats.placementsOnPendingNodes++;
    const bound = this.server.update<SimPod>('pods', { ...pod, spec: { ...pod.spec, nodeName: node } });
    this.churn?.placed(bound, this.spec.podStartMs);
  }

  private patchNode(name: string, change: (n: SimNode) => void): void {
    const node = this.nodeObjects.get(name);
    if (!node) return;
    const copy = structuredClone(node);
    change(copy);
    this.server.update('nodes', copy);
  }

  /** What the start-up workloads are made with. */
  private workloadContext(): WorkloadContext {
    const { server, time, spec, names, random } = this;
    return { server, time, spec, names, random, isoNow: () => this.isoNow() };
  }

  isoNow(): string {
    return new Date(this.time.nowMs()).toISOString();
  }
}
