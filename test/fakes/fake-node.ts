// A node as the agent sees it, in memory, with the cluster-side facts tests assert on.
import type { NodeOps, NodeState, NodeWrite } from '../../src/node/node.js';
import { STATUS_ANNOTATION, type NodeStatus } from '../../src/node/status.js';

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
    resourceVersion: '1',
    unschedulable: false,
    unschedulableOwners: [],
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

/** A merge of keys (null deletes). */
function merged(
  current: Record<string, string>,
  change: Record<string, string | null> | undefined,
): Record<string, string> {
  const next = Object.entries({ ...current, ...change }).filter((e): e is [string, string] => e[1] !== null);
  return Object.fromEntries(next);
}

/** Every write moves the resourceVersion, as on the API server. */
export function bump(record: NodeRecord): void {
  record.resourceVersion = String(Number(record.resourceVersion) + 1);
}

/** NodeOps over a NodeRecord; `before` runs before every call (crash injection and call log). */
export class FakeNode implements NodeOps {
  constructor(
    readonly record: NodeRecord,
    private readonly before: (op: string) => void = () => undefined,
  ) {}

  get(): Promise<NodeState> {
    this.before('node.get');
    return Promise.resolve(this.snapshot());
  }

  private snapshot(): NodeState {
    const r = this.record;
    return clone({
      name: r.name,
      resourceVersion: r.resourceVersion,
      unschedulable: r.unschedulable,
      unschedulableOwners: r.unschedulableOwners,
      taints: r.taints,
      bootID: r.bootID,
      ...(r.kernelVersion === undefined ? {} : { kernelVersion: r.kernelVersion }),
      ...(r.osImage === undefined ? {} : { osImage: r.osImage }),
      conditions: r.conditions,
      labels: r.labels,
      annotations: r.annotations,
    });
  }

  /** A merge patch of our fields, by field manager kured-ts; refused (undefined) when `ifVersion` is stale. */
  write(change: NodeWrite, ifVersion?: string): Promise<NodeState | undefined> {
    const op =
      change.unschedulable === true ? 'cordon' : change.unschedulable === false ? 'uncordon' : 'write';
    this.before(`node.${op}`);
    const r = this.record;
    if (ifVersion !== undefined && ifVersion !== r.resourceVersion) return Promise.resolve(undefined);
    if (change.unschedulable !== undefined && change.unschedulable !== r.unschedulable) {
      r.unschedulable = change.unschedulable;
      r.unschedulableOwners = change.unschedulable ? ['kured-ts'] : [];
      if (!change.unschedulable) r.drained = false;
    }
    r.labels = merged(r.labels, change.labels);
    r.annotations = merged(r.annotations, change.annotations);
    if (change.withoutTaint !== undefined) {
      const key = change.withoutTaint;
      r.taints = r.taints.filter((t) => !(t.key === key && t.effect === 'PreferNoSchedule'));
    }
    // a status that rides in a write of its step (issue 42) is a status written, as setStatus's
    const status = change.annotations?.[STATUS_ANNOTATION];
    if (typeof status === 'string') r.statuses.push(JSON.parse(status) as NodeStatus);
    bump(r);
    // a crash point after the write was accepted, before the agent learns of it
    this.before(`node.${op} answered`);
    return Promise.resolve(this.snapshot());
  }

  addTaint(key: string): Promise<void> {
    this.before('node.addTaint');
    if (!this.record.taints.some((t) => t.key === key && t.effect === 'PreferNoSchedule')) {
      this.record.taints.push({ key, effect: 'PreferNoSchedule' });
      bump(this.record);
    }
    return Promise.resolve();
  }

  removeTaint(key: string): Promise<void> {
    this.before('node.removeTaint');
    this.record.taints = this.record.taints.filter(
      (t) => !(t.key === key && t.effect === 'PreferNoSchedule'),
    );
    bump(this.record);
    return Promise.resolve();
  }

  setStatus(status: NodeStatus): Promise<void> {
    this.before('node.setStatus');
    this.record.statuses.push(clone(status));
    this.record.annotations['kured-ts.dev/status'] = JSON.stringify(status);
    bump(this.record);
    return Promise.resolve();
  }

  daemonSetPodsReady(): Promise<{ ready: boolean; notReady: string[] }> {
    this.before('node.daemonSetPodsReady');
    const notReady = [...this.record.dsPodsNotReady];
    return Promise.resolve({ ready: notReady.length === 0, notReady });
  }
}
