// Another operator taking nodes out during the wave (simulate --other-operator KIND:N, issue 56):
// Karpenter disrupting a node or the cluster autoscaler removing one, as they do it: a NoSchedule
// taint, no cordon, the node Ready until it goes. Here it comes back: its taint is removed
// OTHER_OUT_MS later, as if the node were replaced under its name. One node at a time, the first
// OTHER_FIRST_MS into the run, the next OTHER_GAP_MS after the last came back; a node in a kured-ts
// cycle, holding a slot or cordoned is never picked. The observer checks that no node takes a slot
// while the slots and their nodes fill --concurrency (observer.ts, 'other-operator-exceeded').
import { CYCLE_LABEL } from '../node/cycle.js';
import type { SimNode } from './objects.js';
import type { OperatorContext } from './sim-operators.js';

/** When the first node is taken out, how long each is out, and the gap before the next. */
const OTHER_FIRST_MS = 10 * 60_000;
const OTHER_OUT_MS = 20 * 60_000;
const OTHER_GAP_MS = 5 * 60_000;

/** The operators simulated, and their taint. */
const TAINTS = {
  karpenter: { key: 'karpenter.sh/disrupted', effect: 'NoSchedule' },
  autoscaler: { key: 'ToBeDeletedByClusterAutoscaler', value: '1767607200', effect: 'NoSchedule' },
} as const;

type OtherOperatorKind = keyof typeof TAINTS;

export interface OtherOperatorSettings {
  kind: OtherOperatorKind;
  /** How many nodes it takes out, one after the other. */
  nodes: number;
}

/** What it did, for the report. */
export interface OtherOperatorStats extends OtherOperatorSettings {
  /** The nodes it took out, in order. */
  taken: string[];
}

export class SimOtherOperator {
  private readonly taken: string[] = [];

  constructor(
    private readonly ctx: OperatorContext,
    private readonly settings: OtherOperatorSettings,
  ) {}

  start(): void {
    this.ctx.time.schedule(this.ctx.startMs + OTHER_FIRST_MS, () => {
      this.takeNext();
    });
  }

  stats(): OtherOperatorStats {
    return { ...this.settings, taken: [...this.taken] };
  }

  /** Takes the next node out (when one is free of us), and schedules its return. */
  private takeNext(): void {
    const { cluster, time } = this.ctx;
    if (this.ctx.finished() || this.taken.length >= this.settings.nodes) return;
    const node = [...cluster.nodeList()].reverse().find((n) => this.free(n));
    if (node === undefined) {
      time.schedule(time.nowMs() + OTHER_GAP_MS, () => {
        this.takeNext();
      });
      return;
    }
    const name = node.metadata.name;
    this.taken.push(name);
    this.taint(name, true);
    time.schedule(time.nowMs() + OTHER_OUT_MS, () => {
      this.taint(name, false);
      time.schedule(time.nowMs() + OTHER_GAP_MS, () => {
        this.takeNext();
      });
    });
  }

  /** Not ours to take: in a kured-ts cycle, cordoned, not Ready, or taken before. */
  private free(n: SimNode): boolean {
    const ready = n.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True');
    return (
      ready &&
      n.spec.unschedulable !== true &&
      n.metadata.labels?.[CYCLE_LABEL] !== 'true' &&
      !this.taken.includes(n.metadata.name)
    );
  }

  private taint(name: string, on: boolean): void {
    const node = this.ctx.cluster.nodeObject(name);
    if (node === undefined) return;
    const theirs = TAINTS[this.settings.kind];
    const others = (node.spec.taints ?? []).filter((t) => t.key !== theirs.key);
    const taints = on ? [...others, { ...theirs }] : others;
    this.ctx.server.update('nodes', { ...node, spec: { ...node.spec, taints } });
  }
}
