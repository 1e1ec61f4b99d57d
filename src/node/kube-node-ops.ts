// NodeOps on the API server: every write touches only what kured-ts owns (DESIGN §2.3).
//
// - cordon/uncordon: merge patch of spec.unschedulable and nothing else;
// - taints: a JSON patch whose first op `test`s the taint list we just read, then adds or removes one
//   element; a 422 (test failed: someone changed the list) or 409 re-reads and retries, bounded and
//   jittered. The whole list is never written from a copy, so others' taints cannot be erased;
// - labels and annotations: merge patches of our keys only (null deletes).
import { overBound } from './annotation-bounds.js';
import type { Clock } from '../clock/clock.js';
import { isConflict, isConflictOrInvalid, isNotFound, statusMessage } from '../kube/errors.js';
import type { JsonPatchOp, Kube, V1Node, V1Pod } from '../kube/kube.js';
import { retry } from '../kube/retry.js';
import type { Logger } from '../log/logger.js';
import type { NodeCondition, NodeOps, NodeState, NodeWrite, Taint } from './node.js';
import { STATUS_ANNOTATION, formatStatus, type NodeStatus } from './status.js';

export interface KubeNodeOpsOptions {
  kube: Kube;
  /** This node (--node-id). */
  nodeId: string;
  clock: Clock;
  log: Logger;
  /** Jitter source for retries. Default Math.random. */
  random?: () => number;
  /** Attempts of a guarded taint write. Default 8. */
  attempts?: number;
}

const PREFER_NO_SCHEDULE = 'PreferNoSchedule';

type V1Taint = NonNullable<NonNullable<V1Node['spec']>['taints']>[number];

function toTaint(t: V1Taint): Taint {
  return { key: t.key, effect: t.effect, ...(t.value === undefined ? {} : { value: t.value }) };
}

type V1NodeCondition = NonNullable<NonNullable<V1Node['status']>['conditions']>[number];

function toCondition(c: V1NodeCondition): NodeCondition {
  const at = c.lastTransitionTime;
  return {
    type: c.type,
    status: c.status,
    ...(at === undefined ? {} : { lastTransitionTime: new Date(at) }),
  };
}

function nodeMeta(node: V1Node): Pick<NodeState, 'name' | 'resourceVersion' | 'labels' | 'annotations'> {
  return {
    name: node.metadata?.name ?? '',
    resourceVersion: node.metadata?.resourceVersion ?? '',
    labels: { ...node.metadata?.labels },
    annotations: { ...node.metadata?.annotations },
  };
}

/** The managers that own spec.unschedulable, from metadata.managedFields (FieldsV1). */
export function unschedulableOwners(node: V1Node): string[] {
  const owners = new Set<string>();
  for (const entry of node.metadata?.managedFields ?? []) {
    const fields = entry.fieldsV1 as Record<string, Record<string, unknown> | undefined> | undefined;
    if (fields?.['f:spec']?.['f:unschedulable'] !== undefined) owners.add(entry.manager ?? '');
  }
  return [...owners].sort();
}

/** status.nodeInfo's boot, kernel and OS image ('' when unknown). */
function nodeInfo(node: V1Node): Pick<NodeState, 'bootID' | 'kernelVersion' | 'osImage'> {
  const info = node.status?.nodeInfo;
  return {
    bootID: info?.bootID ?? '',
    kernelVersion: info?.kernelVersion ?? '',
    osImage: info?.osImage ?? '',
  };
}

/** The Node object reduced to what the agent decides on. */
export function toNodeState(node: V1Node): NodeState {
  return {
    ...nodeMeta(node),
    unschedulable: node.spec?.unschedulable === true,
    unschedulableOwners: unschedulableOwners(node),
    taints: (node.spec?.taints ?? []).map(toTaint),
    ...nodeInfo(node),
    conditions: (node.status?.conditions ?? []).map(toCondition),
    volumes: {
      attached: (node.status?.volumesAttached ?? []).map((v) => v.name),
      inUse: node.status?.volumesInUse ?? [],
    },
  };
}

/**
 * The guard of a taint write: a `test` of the taint list exactly as read (so unrelated changes to the
 * Node, such as status heartbeats, do not make us retry), or of metadata.resourceVersion when the
 * list is absent (a `test` of a missing path fails).
 */
function guard(node: V1Node): JsonPatchOp {
  const taints = node.spec?.taints;
  if (taints !== undefined) return { op: 'test', path: '/spec/taints', value: taints };
  return { op: 'test', path: '/metadata/resourceVersion', value: node.metadata?.resourceVersion ?? '' };
}

/** The ops that add our taint, or undefined when it is there. */
export function addTaintOps(node: V1Node, key: string): JsonPatchOp[] | undefined {
  const taints = node.spec?.taints;
  if (taints?.some((t) => t.key === key && t.effect === PREFER_NO_SCHEDULE)) return undefined;
  const taint: Taint = { key, effect: PREFER_NO_SCHEDULE };
  if (taints === undefined) return [guard(node), { op: 'add', path: '/spec/taints', value: [taint] }];
  return [guard(node), { op: 'add', path: '/spec/taints/-', value: taint }];
}

/** The ops that remove our taint, or undefined when it is not there. */
export function removeTaintOps(node: V1Node, key: string): JsonPatchOp[] | undefined {
  const index = (node.spec?.taints ?? []).findIndex((t) => t.key === key && t.effect === PREFER_NO_SCHEDULE);
  if (index < 0) return undefined;
  return [guard(node), { op: 'remove', path: `/spec/taints/${index}` }];
}

/**
 * The merge patch of a NodeWrite: only the keys it names; metadata.resourceVersion makes it
 * conditional (409 when the node changed since); uncordon sends null, which removes the field, as
 * `kubectl uncordon` leaves it.
 */
function mergePatchOf(change: NodeWrite, ifVersion?: string, taints?: V1Taint[] | null): object {
  const metadata: Record<string, unknown> = {};
  if (ifVersion !== undefined) metadata.resourceVersion = ifVersion;
  if (change.labels !== undefined) metadata.labels = change.labels;
  if (change.annotations !== undefined) metadata.annotations = change.annotations;
  const spec: Record<string, unknown> = {};
  if (change.unschedulable !== undefined) spec.unschedulable = change.unschedulable ? true : null;
  if (taints !== undefined) spec.taints = taints;
  return Object.keys(spec).length === 0 ? { metadata } : { metadata, spec };
}

/**
 * The Node's taint list at `ifVersion` without our PreferNoSchedule taint `key` (null: none left),
 * undefined when ours is not in it; 'changed' when the Node is no longer at that version (its
 * read comes from the agent's view of its Node: no request while that is followed).
 */
async function taintsWithout(
  o: Pick<KubeNodeOpsOptions, 'kube' | 'nodeId'>,
  key: string,
  ifVersion: string,
  signal?: AbortSignal,
): Promise<V1Taint[] | null | undefined | 'changed'> {
  const node = await o.kube.getNode(o.nodeId, signal);
  if (node.metadata?.resourceVersion !== ifVersion) return 'changed';
  const taints = node.spec?.taints ?? [];
  const kept = taints.filter((t) => !(t.key === key && t.effect === PREFER_NO_SCHEDULE));
  if (kept.length === taints.length) return undefined;
  return kept.length === 0 ? null : kept;
}

export class KubeNodeOps implements NodeOps {
  constructor(private readonly o: KubeNodeOpsOptions) {}

  async get(signal?: AbortSignal): Promise<NodeState> {
    return toNodeState(await this.o.kube.getNode(this.o.nodeId, signal));
  }

  async write(change: NodeWrite, ifVersion?: string, signal?: AbortSignal): Promise<NodeState | undefined> {
    this.refuseOverBound(change);
    try {
      let taints: V1Taint[] | null | undefined;
      if (change.withoutTaint !== undefined && ifVersion !== undefined) {
        const found = await taintsWithout(this.o, change.withoutTaint, ifVersion, signal);
        if (found === 'changed') return undefined;
        taints = found;
      }
      return toNodeState(
        await this.o.kube.mergePatchNode(this.o.nodeId, mergePatchOf(change, ifVersion, taints), signal),
      );
    } catch (err) {
      if (ifVersion !== undefined && isConflict(err)) return undefined;
      if (signal?.aborted === true) throw err;
      throw new Error(`cannot write node ${this.o.nodeId}: ${statusMessage(err)}`, { cause: err });
    }
  }

  /** A value over its bound is refused here, before it costs every watcher of Nodes (issue 55). */
  private refuseOverBound(change: NodeWrite): void {
    const over = change.annotations === undefined ? undefined : overBound(change.annotations);
    if (over !== undefined) throw new Error(`cannot write node ${this.o.nodeId}: ${over}: not written`);
  }

  addTaint(key: string, signal?: AbortSignal): Promise<void> {
    return this.guardedTaintWrite((node) => addTaintOps(node, key), `add taint ${key}`, signal);
  }

  removeTaint(key: string, signal?: AbortSignal): Promise<void> {
    return this.guardedTaintWrite((node) => removeTaintOps(node, key), `remove taint ${key}`, signal);
  }

  async setStatus(status: NodeStatus, signal?: AbortSignal): Promise<void> {
    await this.write({ annotations: { [STATUS_ANNOTATION]: formatStatus(status) } }, undefined, signal);
  }

  async daemonSetPodsReady(signal?: AbortSignal): Promise<{ ready: boolean; notReady: string[] }> {
    const pods = await this.o.kube.listPods(
      undefined,
      { fieldSelector: `spec.nodeName=${this.o.nodeId}` },
      signal,
    );
    const notReady = pods
      .filter((p) => isDaemonSetPod(p) && p.metadata?.deletionTimestamp === undefined && !isPodReady(p))
      .map(podName);
    return { ready: notReady.length === 0, notReady };
  }

  /** Fresh read, guarded JSON patch, retry on 409/422 with another fresh read. */
  private async guardedTaintWrite(
    opsFor: (node: V1Node) => JsonPatchOp[] | undefined,
    what: string,
    signal?: AbortSignal,
  ): Promise<void> {
    try {
      await retry(
        async () => {
          const node = await this.o.kube.getNode(this.o.nodeId, signal);
          const ops = opsFor(node);
          if (ops !== undefined) await this.o.kube.jsonPatchNode(this.o.nodeId, ops, signal);
        },
        {
          attempts: this.o.attempts ?? 8,
          baseMs: 50,
          maxMs: 2000,
          retryOn: isConflictOrInvalid,
          clock: this.o.clock,
          random: this.o.random,
          signal,
          onRetry: (err, attempt, delayMs) => {
            this.o.log.debug('node write conflict, retrying', {
              node: this.o.nodeId,
              what,
              attempt,
              delayMs,
              error: statusMessage(err),
            });
          },
        },
      );
    } catch (err) {
      if (signal?.aborted === true || isNotFound(err)) throw err;
      throw new Error(`cannot ${what} on node ${this.o.nodeId}: ${statusMessage(err)}`, { cause: err });
    }
  }
}

export function podName(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
}

export function isDaemonSetPod(pod: V1Pod): boolean {
  return (pod.metadata?.ownerReferences ?? []).some((r) => r.kind === 'DaemonSet' && r.controller !== false);
}

function isPodReady(pod: V1Pod): boolean {
  return (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}
