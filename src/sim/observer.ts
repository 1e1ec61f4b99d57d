// Watches every write of a simulation: checks DESIGN §2's safety invariants at the moment they could
// break, and keeps the timeline (phases from the status annotation, lock holders) for the report.
import type { SimCluster } from './cluster.js';
import { DS_NAME, DS_NAMESPACE } from './cluster-spec.js';
import {
  type SimDaemonSet,
  type SimNode,
  type SimPod,
  type SimServer,
  type SimWriteEvent,
} from './objects.js';
import type { VirtualTime } from './virtual-time.js';

import { STATUS_ANNOTATION, parseStatus } from '../node/status.js';
import { CYCLE_LABEL } from '../node/cycle.js';
import { quorumGaps, workerAhead } from './control-plane-checks.js';
import { DrainOrderCheck } from './drain-order-checks.js';
import { HELD_BACK, blockedGroup } from './blocked-group.js';
import { lockHolders } from './lock-holders.js';
import { takenOutExcess, unavailableExcess } from './unavailable-checks.js';
import type { Violation } from './violation.js';

/** One phase change of a node's status annotation. */
export interface PhaseChange {
  atMs: number;
  node: string;
  phase: string;
  reason: string;
}

export interface ObserverOptions {
  concurrency: number;
  /** --group-concurrency per zone (the simulated --group-label); undefined = no group limit. */
  groupConcurrency?: number;
  lockAnnotation: string;
  taintKey: string;
  /** The agents' --control-plane-last (default true): checked as an invariant only when on. */
  controlPlaneLast?: boolean;
  /** The agents' --count-unavailable: unavailable nodes take slots (unavailable-checks.ts). Default false. */
  countUnavailable?: boolean;
}

/** Per-node timeline facts for the report. */
export interface NodeTimeline {
  phase: string;
  reason: string;
  sinceMs: number;
  /** First lock acquisition (virtual ms since start). */
  lockedAtMs?: number;
  /** The status annotation's requiredSince (epoch ms): the node's place in the fair lock queue. */
  requiredSinceMs?: number;
  /** Last lock release. */
  releasedAtMs?: number;
  /** Cordon of the current/last cycle and when its drain finished (reboot requested). */
  cordonedAtMs?: number;
  /** Physical drain time of each cycle: cordon until the last evictable pod was gone. */
  drainMs: number[];
  /** The current cycle's drain finished this long after the cordon. */
  drainDoneMs?: number;
  /** The reboot of the current lock tenure was requested (no new drain until the release). */
  rebootedInTenure: boolean;
  rebootRequestedAtMs?: number;
}

export class Observer {
  readonly violations: Violation[] = [];
  readonly phases: PhaseChange[] = [];
  readonly timeline = new Map<string, NodeTimeline>();
  /** Held-back (blocked, waiting-for-lock, outside-window, awaiting-approval) virtual ms by reason group. */
  readonly blockedMs = new Map<string, number>();
  holders: string[] = [];
  /** How many lock slots were taken, from each change on (virtual ms since start), for the timeline. */
  readonly slotChanges: { atMs: number; slots: number }[] = [];
  /** Nodes carrying the cycle label: each holds a slot whether or not the lock still names it. */
  readonly inCycle = new Set<string>();
  maxHolders = 0;
  /** Hand-offs of a slot to a node while one that has needed a reboot longer was waiting for it. */
  readonly outOfOrder: { atMs: number; node: string; passedOver: string }[] = [];
  /** With control-plane nodes: the first slot one took, and the last slot a worker took (virtual ms). */
  readonly controlPlane: { firstLockMs: number | undefined; lastWorkerLockMs: number | undefined } = {
    firstLockMs: undefined,
    lastWorkerLockMs: undefined,
  };
  private readonly startMs: number;
  private unsubscribe: (() => void) | undefined;
  /** Storage pods (order 10) evicted, none while a pod of a lower order was on their node. */
  readonly drainOrder: DrainOrderCheck;
  /** Called on every phase change (for the progress view). */
  onPhase: ((change: PhaseChange) => void) | undefined;

  constructor(
    private readonly server: SimServer,
    private readonly time: VirtualTime,
    private readonly cluster: SimCluster,
    private readonly options: ObserverOptions,
  ) {
    this.startMs = time.nowMs();
    this.drainOrder = new DrainOrderCheck(server, (node, detail) => {
      this.violate(node, 'drain-order', detail);
    });
    for (const name of cluster.names)
      this.timeline.set(name, {
        phase: 'starting',
        reason: '',
        sinceMs: 0,
        drainMs: [],
        rebootedInTenure: false,
      });
  }

  start(): void {
    this.unsubscribe = this.server.onWrite((e) => {
      this.onWrite(e);
    });
  }

  stop(): void {
    this.unsubscribe?.();
    const now = this.elapsed();
    for (const [, t] of this.timeline) this.accountBlocked(t, now);
  }

  elapsed(): number {
    return this.time.nowMs() - this.startMs;
  }

  private violate(node: string, rule: Violation['rule'], detail: string): void {
    this.violations.push({ atMs: this.elapsed(), node, rule, detail });
  }

  private onWrite(e: SimWriteEvent): void {
    if (e.resource === 'pods') this.drainOrder.onPod(e.type, e.object as SimPod);
    if (e.resource === 'daemonsets') this.onDaemonSet(e.object as SimDaemonSet);
    else if (e.resource === 'pods' && e.type === 'DELETED') this.onPodGone(e.object as SimPod);
    else if (e.resource === 'nodes' && e.type !== 'DELETED') this.onNode(e.object as SimNode);
  }

  private onDaemonSet(ds: SimDaemonSet): void {
    if (ds.metadata.name !== DS_NAME || ds.metadata.namespace !== DS_NAMESPACE) return;
    const holders = lockHolders(ds.metadata.annotations?.[this.options.lockAnnotation]) ?? this.holders;
    const before = this.holders;
    this.holders = holders;
    for (const h of holders) if (!before.includes(h)) this.acquired(h);
    for (const h of before) if (!holders.includes(h)) this.released(h);
    this.maxHolders = Math.max(this.maxHolders, holders.length);
    this.checkHolders();
  }

  /**
   * Slots taken: nodes the lock names, and nodes in a reboot cycle whose slot is missing (a lock
   * deleted or expired while they were down): those count too, and kured-ts agents count them.
   */
  private slots(): string[] {
    return [...new Set([...this.holders, ...this.inCycle])];
  }

  /** Holds a slot: named by the lock, or in a reboot cycle (see slots). */
  private holding(name: string): boolean {
    return this.holders.includes(name) || this.inCycle.has(name);
  }

  private checkHolders(): void {
    const c = this.options.concurrency;
    const slots = this.slots();
    if (slots.length !== this.slotChanges.at(-1)?.slots)
      this.slotChanges.push({ atMs: this.elapsed(), slots: slots.length });
    if (slots.length > c)
      this.violate(slots.join(','), 'too-many-holders', `${slots.length} nodes hold slots, concurrency ${c}`);
    const controlPlane = slots.filter((n) => this.cluster.isControlPlane(n));
    if (controlPlane.length > 1)
      this.violate(
        controlPlane.join(','),
        'control-plane-concurrent',
        `${controlPlane.length} control-plane nodes hold slots at once`,
      );
    this.checkGroups(slots);
    for (const node of this.cluster.nodeList()) this.checkCordon(node);
  }

  /** With a group limit: no zone holds more slots than it. */
  private checkGroups(slots: readonly string[]): void {
    const limit = this.options.groupConcurrency;
    if (limit === undefined) return;
    const byZone = new Map<string, string[]>();
    for (const node of slots) {
      const zone = this.cluster.outages.zoneOf(node) ?? '';
      byZone.set(zone, [...(byZone.get(zone) ?? []), node]);
    }
    for (const [zone, nodes] of byZone)
      if (nodes.length > limit)
        this.violate(
          nodes.join(','),
          'too-many-in-group',
          `${nodes.length} slots in ${zone}, group concurrency ${limit}`,
        );
  }

  private acquired(name: string): void {
    const t = this.timeline.get(name);
    if (!t) return;
    this.checkNeedOrder(name, t);
    this.checkControlPlaneLast(name);
    // other operators' nodes count from their taint on: a slot taken with them filling the room
    if (this.options.countUnavailable === true)
      for (const d of takenOutExcess(this.cluster, this.slots(), this.options))
        this.violate(name, 'other-operator-exceeded', d);
    t.lockedAtMs ??= this.elapsed();
    const node = this.cluster.nodeObject(name);
    if (node) this.startDrainClock(name, node, t);
  }

  /**
   * The fair queue: a slot goes to the waiting node that has needed a reboot longest (ties by name).
   * A node waiting since earlier that could have taken it (without group limits, any; with them, one
   * of the same zone) was passed over.
   */
  private checkNeedOrder(name: string, t: NodeTimeline): void {
    const mine = t.requiredSinceMs;
    if (mine === undefined) return;
    const before = (other: string, o: NodeTimeline): boolean =>
      o.requiredSinceMs !== undefined &&
      (o.requiredSinceMs < mine || (o.requiredSinceMs === mine && other < name));
    for (const [other, o] of this.timeline) {
      if (other === name || o.phase !== 'waiting-for-lock' || !this.couldTake(name, other)) continue;
      if (before(other, o)) {
        this.outOfOrder.push({ atMs: this.elapsed(), node: name, passedOver: other });
        return;
      }
    }
  }

  /** Control plane last (control-plane-checks.ts), and when the first control-plane node and the last worker took a slot. */
  private checkControlPlaneLast(name: string): void {
    const now = this.elapsed();
    if (!this.cluster.isControlPlane(name)) {
      if (this.cluster.spec.controlPlane !== undefined) this.controlPlane.lastWorkerLockMs = now;
      return;
    }
    this.controlPlane.firstLockMs ??= now;
    const ahead = workerAhead(this.cluster, this.timeline, (n) => n !== name && this.holding(n));
    if (ahead !== undefined && this.options.controlPlaneLast !== false)
      this.violate(name, 'control-plane-before-workers', ahead);
  }

  /** Could `other` have taken `name`'s slot? Same zone under group limits; control plane after workers. */
  private couldTake(name: string, other: string): boolean {
    const cpOther = this.cluster.isControlPlane(other) && this.options.controlPlaneLast !== false;
    if (cpOther && !this.cluster.isControlPlane(name)) return false;
    return (
      this.options.groupConcurrency === undefined ||
      this.cluster.outages.zoneOf(other) === this.cluster.outages.zoneOf(name)
    );
  }

  private released(name: string): void {
    const t = this.timeline.get(name);
    if (!t) return;
    t.releasedAtMs = this.elapsed();
    // a drain that led to no reboot (it failed: the node is quarantined, or the cycle was aborted)
    // still took the slot from its cordon on: work of the wave, as --drain-timeout makes it
    if (t.cordonedAtMs !== undefined && !t.rebootedInTenure) t.drainMs.push(t.releasedAtMs - t.cordonedAtMs);
    t.rebootedInTenure = false;
    t.cordonedAtMs = undefined;
  }

  private onNode(node: SimNode): void {
    const name = node.metadata.name;
    const state = this.cluster.nodes.get(name);
    if (!state) return;
    this.noteCycle(node);
    this.checkCordon(node);
    const t = this.timeline.get(name);
    if (t) this.startDrainClock(name, node, t);
    if (state.preCordoned && !node.spec.unschedulable)
      this.violate(name, 'pre-cordoned-uncordoned', 'a node cordoned by someone else was uncordoned');
    if (state.rebooting && !node.spec.unschedulable && !state.preCordoned)
      this.violate(name, 'uncordoned-before-boot', 'uncordoned while the reboot had not finished');
    this.onStatus(name, node.metadata.annotations?.[STATUS_ANNOTATION]);
  }

  /** Follows the cycle label: a node in a cycle holds a slot (see slots). */
  private noteCycle(node: SimNode): void {
    const name = node.metadata.name;
    const cycling = node.metadata.labels?.[CYCLE_LABEL] === 'true';
    if (cycling === this.inCycle.has(name)) return;
    if (cycling) this.inCycle.add(name);
    else this.inCycle.delete(name);
    this.checkHolders();
  }

  /** A drain starts when a lock holder's node is cordoned (by it, or before by someone else). */
  private startDrainClock(name: string, node: SimNode, t: NodeTimeline): void {
    if (!node.spec.unschedulable || t.cordonedAtMs !== undefined || t.rebootedInTenure) return;
    if (!this.holders.includes(name)) return;
    t.cordonedAtMs = this.elapsed();
    t.drainDoneMs = undefined;
    this.checkDrained(name, t);
  }

  private onPodGone(pod: SimPod): void {
    const node = pod.spec.nodeName;
    const t = node === undefined ? undefined : this.timeline.get(node);
    if (node !== undefined && t) this.checkDrained(node, t);
  }

  private checkDrained(node: string, t: NodeTimeline): void {
    if (t.cordonedAtMs === undefined || t.drainDoneMs !== undefined) return;
    if (this.cluster.evictableOn(node).length === 0) t.drainDoneMs = this.elapsed() - t.cordonedAtMs;
  }

  /** Nodes cordoned now that nobody else had cordoned before the start. */
  cordonedByUs(): number {
    let n = 0;
    for (const node of this.cluster.nodeList()) {
      const state = this.cluster.nodes.get(node.metadata.name);
      if (state && !state.preCordoned && node.spec.unschedulable) n++;
    }
    return n;
  }

  private checkCordon(node: SimNode): void {
    const name = node.metadata.name;
    const state = this.cluster.nodes.get(name);
    if (!state || state.preCordoned || !node.spec.unschedulable) return;
    if (!this.holding(name))
      this.violate(name, 'cordoned-without-lock', 'cordoned while not holding the lock');
  }

  private onStatus(node: string, value: string | undefined): void {
    const status = parseStatus(value);
    if (status === undefined || status.phase === undefined) return;
    const { phase, reason } = status;
    const t = this.timeline.get(node);
    if (!t) return;
    t.requiredSinceMs = status.requiredSince === undefined ? undefined : Date.parse(status.requiredSince);
    if (t.phase === phase && t.reason === reason) return;
    const now = this.elapsed();
    this.accountBlocked(t, now);
    t.phase = phase;
    t.reason = reason;
    t.sinceMs = now;
    const change = { atMs: now, node, phase, reason };
    this.phases.push(change);
    this.onPhase?.(change);
  }

  private accountBlocked(t: NodeTimeline, now: number): void {
    if (!HELD_BACK.includes(t.phase)) return;
    const group = blockedGroup(t.phase, t.reason);
    this.blockedMs.set(group, (this.blockedMs.get(group) ?? 0) + (now - t.sinceMs));
  }

  /** The simulated Rebooter asks: may this node reboot now? Records violations if not. */
  checkReboot(name: string): void {
    const node = this.cluster.nodeObject(name);
    const t = this.timeline.get(name);
    const now = this.elapsed();
    if (t) {
      t.rebootRequestedAtMs = now;
      if (t.cordonedAtMs !== undefined && !t.rebootedInTenure)
        t.drainMs.push(t.drainDoneMs ?? now - t.cordonedAtMs);
      t.rebootedInTenure = true;
    }
    if (!this.holding(name)) this.violate(name, 'reboot-without-lock', 'reboot requested without the lock');
    if (!node?.spec.unschedulable)
      this.violate(name, 'reboot-not-cordoned', 'reboot requested on a schedulable node');
    const left = this.cluster.evictableOn(name);
    if (left.length > 0)
      this.violate(
        name,
        'reboot-undrained',
        `pods still on the node: ${left.map((p) => p.metadata.name).join(', ')}`,
      );
    this.checkCapacity(name);
  }

  /** Quorum (control-plane-checks.ts); under --count-unavailable, the limits (unavailable-checks.ts). */
  private checkCapacity(name: string): void {
    for (const detail of quorumGaps(this.cluster, name))
      this.violate(name, 'control-plane-without-quorum', detail);
    if (this.options.countUnavailable !== true || !this.holding(name)) return;
    for (const detail of unavailableExcess(this.cluster, name, this.slots(), this.options))
      this.violate(name, 'unavailable-exceeded', detail);
  }

  private finalNodeChecks(node: SimNode): void {
    const name = node.metadata.name;
    const state = this.cluster.nodes.get(name);
    if (!state) return;
    if (node.spec.unschedulable && !state.preCordoned)
      this.violate(name, 'left-cordoned', 'still cordoned at the end');
    const tainted = (node.spec.taints ?? []).some((x) => x.key === this.options.taintKey);
    if (this.options.taintKey !== '' && tainted && !state.needsReboot)
      this.violate(name, 'taint-left', 'PreferNoSchedule taint left on a node that needs no reboot');
  }

  /**
   * End-of-run checks: never more than C nodes down; and unless the run was cut short by its
   * wall-clock limit, nothing left cordoned, tainted or locked. A run cut for the host's slowness
   * stops agents mid-cycle, where a cordon and the lock are held by design; one that reaches its
   * virtual time limit with a node still cordoned has found a stuck agent.
   */
  finalChecks(checkEndState: boolean): void {
    if (checkEndState) {
      for (const node of this.cluster.nodeList()) this.finalNodeChecks(node);
      for (const h of this.holders) this.violate(h, 'lock-left', 'still holds the lock at the end');
    }
    if (this.cluster.outages.max > this.options.concurrency)
      this.violate(
        '*',
        'too-many-down',
        `${this.cluster.outages.max} nodes down at once, concurrency ${this.options.concurrency}`,
      );
    const limit = this.options.groupConcurrency;
    for (const [zone, max] of this.cluster.outages.maxByZone)
      if (limit !== undefined && max > limit)
        this.violate(
          '*',
          'too-many-in-group',
          `${max} nodes of ${zone} down at once, group concurrency ${limit}`,
        );
  }
}
