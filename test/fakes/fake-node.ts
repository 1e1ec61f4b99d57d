// A node as the agent sees it, in memory, with the cluster-side facts tests assert on.
import type { NodeOps, NodeState, NodeStatus } from '../../src/node/node.js';

/** The node object plus what the drain and the host did to it. */
export interface NodeRecord extends NodeState {
  /** Every workload pod evicted since the node was last schedulable. */
  drained: boolean;
  /** Status annotations written, in order. */
  statuses: NodeStatus[];
  /** DaemonSet pods not Ready (for --wait-for-daemonset-pods). */
  dsPodsNotReady: string[];
}

export function newNodeRecord(name: string, bootID = 'boot-1'): NodeRecord {
  return {
    name,
    unschedulable: false,
    taints: [],
    bootID,
    conditions: [{ type: 'Ready', status: 'True' }],
    labels: {},
    annotations: {},
    drained: false,
    statuses: [],
    dsPodsNotReady: [],
  };
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

/** NodeOps over a NodeRecord; `before` runs before every call (crash injection and call log). */
export class FakeNode implements NodeOps {
  constructor(
    readonly record: NodeRecord,
    private readonly before: (op: string) => void = () => undefined,
  ) {}

  get(): Promise<NodeState> {
    this.before('node.get');
    const r = this.record;
    return Promise.resolve(
      clone({
        name: r.name,
        unschedulable: r.unschedulable,
        taints: r.taints,
        bootID: r.bootID,
        conditions: r.conditions,
        labels: r.labels,
        annotations: r.annotations,
      }),
    );
  }

  cordon(): Promise<void> {
    this.before('node.cordon');
    this.record.unschedulable = true;
    return Promise.resolve();
  }

  uncordon(): Promise<void> {
    this.before('node.uncordon');
    this.record.unschedulable = false;
    this.record.drained = false;
    return Promise.resolve();
  }

  addTaint(key: string): Promise<void> {
    this.before('node.addTaint');
    if (!this.record.taints.some((t) => t.key === key && t.effect === 'PreferNoSchedule')) {
      this.record.taints.push({ key, effect: 'PreferNoSchedule' });
    }
    return Promise.resolve();
  }

  removeTaint(key: string): Promise<void> {
    this.before('node.removeTaint');
    this.record.taints = this.record.taints.filter(
      (t) => !(t.key === key && t.effect === 'PreferNoSchedule'),
    );
    return Promise.resolve();
  }

  setLabels(labels: Record<string, string>): Promise<void> {
    this.before('node.setLabels');
    Object.assign(this.record.labels, labels);
    return Promise.resolve();
  }

  setAnnotations(annotations: Record<string, string | null>): Promise<void> {
    this.before('node.setAnnotations');
    const next = Object.entries({ ...this.record.annotations, ...annotations }).filter(
      (e): e is [string, string] => e[1] !== null,
    );
    this.record.annotations = Object.fromEntries(next);
    return Promise.resolve();
  }

  setStatus(status: NodeStatus): Promise<void> {
    this.before('node.setStatus');
    this.record.statuses.push(clone(status));
    this.record.annotations['kured-ts.dev/status'] = JSON.stringify(status);
    return Promise.resolve();
  }

  daemonSetPodsReady(): Promise<{ ready: boolean; notReady: string[] }> {
    this.before('node.daemonSetPodsReady');
    const notReady = [...this.record.dsPodsNotReady];
    return Promise.resolve({ ready: notReady.length === 0, notReady });
  }
}
