// The per-pass read cache of an agent's client (issue 57 item 2, split from viewed-kube.ts): a read
// repeated within one pass of the decision (the lock's DaemonSet, the nodes in a cycle, the fleet's
// rows) shares the first answer, and a write of this agent that could change the answer ends the
// sharing. Everything else passes on unchanged.
import { monotonicMs, type Clock } from '../clock/clock.js';
import { ForwardingKube, type KubeMethod } from './forwarding-kube.js';
import type { Kube, ListOptions, NodeRow, V1DaemonSet, V1Node, WatchEvent } from './kube.js';

/**
 * Reads repeated within one pass of the decision and this close together, with no write of this agent
 * in between that could change the answer (see write), share one answer: a pass reads the lock's
 * DaemonSet for the slot it holds, the pause, whether it would take a slot, the acquisition and the
 * release, and the nodes in a cycle for the question and the acquisition. A pass never shares the
 * answers of the one before (forgetShared): a waiter woken by another node's change reads afresh.
 */
const SHARED_READ_MS = 1_000;

/** The resources whose shared reads each write ends (see PassReads.write). */
type Written = 'nodes' | 'events' | 'daemonsets' | 'pods' | 'leases';
const WRITES: Partial<Record<KubeMethod, Written>> = {
  jsonPatchNode: 'nodes',
  mergePatchNode: 'nodes',
  evictPod: 'pods',
  deletePod: 'pods',
  mergePatchDaemonSet: 'daemonsets',
  createLease: 'leases',
  replaceLease: 'leases',
  createEvent: 'events',
  mergePatchEvent: 'events',
};

/** A client whose repeated reads within a pass share one answer. */
export class PassReads extends ForwardingKube {
  /** Answers shared by repeated reads (SHARED_READ_MS), by request. */
  private readonly shared = new Map<string, { at: number; value: unknown }>();
  /** Writes sent, by the resource whose sharing they end ('*': every resource's). */
  private readonly writes = new Map<string, number>();

  constructor(
    inner: Kube,
    private readonly clock: Clock,
    /** May repeated reads share an answer now (OwnViews.shares)? */
    private readonly shares: () => boolean,
  ) {
    super(inner, true);
  }

  /** A new pass of the decision begins: no answer of the last is shared with it (others moved since). */
  forgetShared(): void {
    this.shared.clear();
    this.writes.set('*', (this.writes.get('*') ?? 0) + 1);
  }

  /** A write ends the sharing of the reads it may change (see write); every other call passes on. */
  protected override forward<T>(method: KubeMethod, work: (k: Kube) => Promise<T>): Promise<T> {
    const resource = WRITES[method];
    return resource === undefined ? work(this.inner) : this.write(resource, () => work(this.inner));
  }

  /**
   * A write of `resource`: reads of it after it are their own. A write of the lock, an eviction or a
   * Lease ends every sharing: after them the lock is read afresh (a drain's look at its slot, a
   * retry). Only the Node's writes and Events leave the lock's answer shared (the end of a cycle
   * writes the Node, then gives the slot back on the answer read for it).
   */
  private write<T>(resource: Written, work: () => Promise<T>): Promise<T> {
    const only = resource === 'nodes' || resource === 'events';
    const counted = only ? resource : '*';
    this.writes.set(counted, (this.writes.get(counted) ?? 0) + 1);
    for (const key of [...this.shared.keys()])
      if (!only || key.startsWith(`${resource} `)) this.shared.delete(key);
    return work();
  }

  /** Writes so far that end the sharing of reads of `resource` (see write). */
  private writesOf(resource: string): number {
    return (this.writes.get('*') ?? 0) + (this.writes.get(resource) ?? 0);
  }

  /**
   * A read (key: its resource, a space, what it asks) that repeats within SHARED_READ_MS of the last
   * identical one, no write of the resource between, shares its answer, while sharing is allowed. An
   * answer to a read that a write overtook (sent before it, answered after it) is not shared: it may
   * predate the write.
   */
  private async sharedRead<T>(key: string, read: () => Promise<T>): Promise<T> {
    if (!this.shares()) return read();
    const shared = this.shared.get(key);
    if (shared !== undefined && monotonicMs(this.clock) - shared.at < SHARED_READ_MS)
      return structuredClone(shared.value) as T;
    const resource = key.slice(0, key.indexOf(' '));
    const before = this.writesOf(resource);
    const value = await read();
    if (this.writesOf(resource) === before) this.shared.set(key, { at: monotonicMs(this.clock), value });
    return value;
  }

  override listNodes(options?: ListOptions, signal?: AbortSignal): Promise<V1Node[]> {
    return this.sharedRead(`nodes ${JSON.stringify(options ?? {})}`, () => super.listNodes(options, signal));
  }

  /**
   * Rows of Nodes (the nodes in a cycle, the fleet census): a read repeated within one pass shares the
   * answer as listNodes does (the question whether a slot would be given, then the acquisition); a
   * write of a Node between them ends the sharing, and a lock changed between them fails the
   * acquisition's guarded write, which reads afresh.
   */
  override listNodeRows(options?: ListOptions, signal?: AbortSignal): Promise<NodeRow[]> {
    return this.sharedRead(`nodes rows ${JSON.stringify(options ?? {})}`, () =>
      super.listNodeRows(options, signal),
    );
  }

  override getDaemonSet(namespace: string, name: string, signal?: AbortSignal): Promise<V1DaemonSet> {
    return this.sharedRead(`daemonsets ${namespace}/${name}`, () =>
      super.getDaemonSet(namespace, name, signal),
    );
  }

  /** A change of the DaemonSet ends the sharing of reads of it (a waiter woken by it reads afresh). */
  override watchDaemonSet(
    namespace: string,
    name: string,
    onEvent: (event: WatchEvent<V1DaemonSet>) => void,
    options: { resourceVersion?: string; signal: AbortSignal; timeoutSeconds?: number },
  ): Promise<void> {
    const key = `daemonsets ${namespace}/${name}`;
    return super.watchDaemonSet(
      namespace,
      name,
      (event) => {
        if (event.type !== 'BOOKMARK' && event.type !== 'ERROR') this.shared.delete(key);
        onEvent(event);
      },
      options,
    );
  }
}
