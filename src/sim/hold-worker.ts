// A simulated external worker for the hold after the drain (simulate --hold-worker, issue 30): a
// firmware job that has work on every node once that node is drained. It marks each node at the start
// with the agents' hold annotation (work pending), and `holdMs` after it first sees the node drained
// in its reboot cycle (cordoned, the cycle label on, no evictable pod left) it is done and removes the
// annotation. What it watches, as invariants: no node is rebooted while its annotation stands, and a
// node it works on keeps its cordon, its cycle and its lock slot until the work is done (within the
// agents' --hold-timeout, after which the agent may end the cycle).
import { HOLD_POLL_MAX_MS } from '../agent/decision/hold.js';
import { CYCLE_LABEL } from '../node/cycle.js';
import type { SimCluster } from './cluster.js';
import type { SimServer } from './objects.js';
import type { Violation } from './violation.js';
import type { VirtualTime } from './virtual-time.js';

/** How often the worker looks at the nodes (virtual ms). */
const HOLD_WORKER_SCAN_MS = 5_000;

/** The worker's settings: the annotation it sets, how long its work takes, the agents' bound. */
export interface HoldWorkerSettings {
  key: string;
  holdMs: number;
  /** The agents' --hold-timeout: past it, a node may leave its cycle with the annotation standing. */
  timeoutMs: number;
}

/** What it did, for the report. */
export interface HoldWorkerStats {
  key: string;
  holdMs: number;
  /** Nodes it found drained in their cycle and worked on. */
  worked: number;
  /** Nodes whose work it finished (annotation removed). */
  finished: number;
  /** Reboots requested while the node's annotation stood: an invariant, 0. */
  rebootedWhileHeld: number;
}

/** What the worker reads and writes. */
export interface HoldWorkerContext {
  time: VirtualTime;
  cluster: SimCluster;
  server: SimServer;
  startMs: number;
  violations: Violation[];
  /** The lock's holders as the observer last saw them. */
  holders: () => readonly string[];
  /** The run is over: the worker stops looking. */
  finished: () => boolean;
}

export class SimHoldWorker {
  /** Since when (virtual ms) it works on each drained node; removed once done. */
  private readonly working = new Map<string, number>();
  private readonly done = new Set<string>();
  /** Nodes already reported for losing their cordon, cycle or slot while held (once each). */
  private readonly lost = new Set<string>();
  /**
   * Since when (virtual ms) each held node has been seen without its lock slot. A third party that
   * wipes the lock (--wipe-lock-every) takes it; the held agent takes it back at its next look at the
   * node, at most HOLD_POLL_MAX_MS later: only a slot gone for longer than that is lost.
   */
  private readonly slotless = new Map<string, number>();
  private rebootedWhileHeld = 0;

  constructor(
    private readonly ctx: HoldWorkerContext,
    private readonly settings: HoldWorkerSettings,
  ) {}

  /** Marks every node, then looks every HOLD_WORKER_SCAN_MS until the run ends. */
  start(): void {
    for (const name of this.ctx.cluster.names) this.annotate(name, 'firmware-pending');
    const tick = (): void => {
      if (this.ctx.finished()) return;
      this.scan();
      this.ctx.time.schedule(this.ctx.time.nowMs() + HOLD_WORKER_SCAN_MS, tick);
    };
    this.ctx.time.schedule(this.ctx.startMs + HOLD_WORKER_SCAN_MS, tick);
  }

  /** Called as a node's reboot is requested: with the annotation standing, a violation. */
  checkReboot(name: string): void {
    const value = this.annotationOf(name);
    if (value === undefined) return;
    this.rebootedWhileHeld++;
    this.violate(name, 'rebooted-while-held', `reboot requested while ${this.settings.key}=${value} stood`);
  }

  stats(): HoldWorkerStats {
    return {
      key: this.settings.key,
      holdMs: this.settings.holdMs,
      worked: this.working.size + this.done.size,
      finished: this.done.size,
      rebootedWhileHeld: this.rebootedWhileHeld,
    };
  }

  private scan(): void {
    const now = this.ctx.time.nowMs();
    for (const name of this.ctx.cluster.names) {
      if (this.done.has(name)) continue;
      const since = this.working.get(name);
      if (since === undefined) {
        if (this.drainedInCycle(name)) {
          this.working.set(name, now);
          this.annotate(name, 'firmware-updating');
        }
      } else if (now - since >= this.settings.holdMs) {
        this.working.delete(name);
        this.done.add(name);
        this.annotate(name, undefined);
      } else if (now - since < this.settings.timeoutMs - HOLD_WORKER_SCAN_MS) this.checkHeld(name);
    }
  }

  /** Cordoned, in its cycle, nothing left to evict. */
  private drainedInCycle(name: string): boolean {
    const node = this.ctx.cluster.nodeObject(name);
    return (
      node?.spec.unschedulable === true &&
      node.metadata.labels?.[CYCLE_LABEL] !== undefined &&
      this.ctx.cluster.evictableOn(name).length === 0
    );
  }

  /** A node held by the worker keeps its cordon, its cycle and its slot. */
  private checkHeld(name: string): void {
    const node = this.ctx.cluster.nodeObject(name);
    const lost = [
      node?.spec.unschedulable === true ? undefined : 'its cordon',
      node?.metadata.labels?.[CYCLE_LABEL] === undefined ? 'its cycle' : undefined,
      this.slotLost(name) ? 'its lock slot' : undefined,
    ].filter((x): x is string => x !== undefined);
    if (lost.length > 0 && !this.lost.has(name)) {
      this.lost.add(name);
      this.violate(name, 'hold-lost', `lost ${lost.join(', ')} while ${this.settings.key} stood`);
    }
  }

  /** Has the node been without its slot for longer than its agent takes to look (HOLD_POLL_MAX_MS)? */
  private slotLost(name: string): boolean {
    if (this.ctx.holders().includes(name)) {
      this.slotless.delete(name);
      return false;
    }
    const now = this.ctx.time.nowMs();
    const since = this.slotless.get(name) ?? now;
    this.slotless.set(name, since);
    return now - since > HOLD_POLL_MAX_MS + HOLD_WORKER_SCAN_MS;
  }

  private annotationOf(name: string): string | undefined {
    return this.ctx.cluster.nodeObject(name)?.metadata.annotations?.[this.settings.key];
  }

  /** Sets the worker's annotation to `value`, or removes it (undefined). */
  private annotate(name: string, value: string | undefined): void {
    const node = this.ctx.cluster.nodeObject(name);
    if (!node) return;
    const others = Object.entries(node.metadata.annotations ?? {}).filter(([k]) => k !== this.settings.key);
    const annotations = Object.fromEntries(
      value === undefined ? others : [...others, [this.settings.key, value]],
    );
    this.ctx.server.update('nodes', { ...node, metadata: { ...node.metadata, annotations } });
  }

  private violate(node: string, rule: Violation['rule'], detail: string): void {
    this.ctx.violations.push({ atMs: this.ctx.time.nowMs() - this.ctx.startMs, node, rule, detail });
  }
}

/** The worker for `settings`; undefined without it. */
export function holdWorkerOf(
  settings: HoldWorkerSettings | undefined,
  ctx: HoldWorkerContext,
): SimHoldWorker | undefined {
  return settings === undefined ? undefined : new SimHoldWorker(ctx, settings);
}
