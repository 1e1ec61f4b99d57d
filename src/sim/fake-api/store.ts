// The fake API server's memory: objects by resource, one global resourceVersion counter, and a
// bounded history of changes from which watches replay.
import { keyOf, type ResourceName, type StoredObject } from './resources.js';

export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One accepted write, as watchers and listeners see it. */
export interface Change {
  type: ChangeType;
  resource: ResourceName;
  /** The object after the change (for DELETED: its last state, with the deletion's resourceVersion). */
  object: StoredObject;
  /** The object before the change (undefined for ADDED). */
  previous: StoredObject | undefined;
  /** resourceVersion of this change as a number. */
  rv: number;
}

export type ChangeListener = (change: Change) => void;

/** Objects, resourceVersions and history. Stored objects are never mutated in place. */
export class Store {
  private rv = 0;
  private readonly objects = new Map<ResourceName, Map<string, StoredObject>>();
  private readonly history: Change[] = [];
  /** Highest resourceVersion that has fallen out of the history. */
  private compacted = 0;
  private readonly listeners = new Set<ChangeListener>();
  /** Run after all listeners; they may commit derived changes (PDB status) that then follow in order. */
  private readonly hooks: ChangeListener[] = [];

  constructor(private readonly historyLimit: number) {}

  /** The current resourceVersion. */
  version(): number {
    return this.rv;
  }

  get(resource: ResourceName, namespace: string | undefined, name: string): StoredObject | undefined {
    return this.objects.get(resource)?.get(keyOf(namespace, name));
  }

  /** Objects of a resource, in one namespace or all; sorted by namespace and name like etcd keys. */
  list(resource: ResourceName, namespace?: string): StoredObject[] {
    const all = [...(this.objects.get(resource)?.values() ?? [])];
    return all
      .filter((o) => namespace === undefined || o.metadata.namespace === namespace)
      .sort((a, b) =>
        keyOf(a.metadata.namespace, a.metadata.name).localeCompare(
          keyOf(b.metadata.namespace, b.metadata.name),
        ),
      );
  }

  /**
   * Commits one change: gives the object the next resourceVersion, stores or removes it, records it
   * in the history and tells every listener synchronously. Returns the committed object.
   */
  commit(resource: ResourceName, type: ChangeType, object: StoredObject): StoredObject {
    const key = keyOf(object.metadata.namespace, object.metadata.name);
    let byKey = this.objects.get(resource);
    if (!byKey) {
      byKey = new Map();
      this.objects.set(resource, byKey);
    }
    const previous = byKey.get(key);
    this.rv++;
    const committed: StoredObject = {
      ...object,
      metadata: { ...object.metadata, resourceVersion: String(this.rv) },
    };
    if (type === 'DELETED') byKey.delete(key);
    else byKey.set(key, committed);
    const change: Change = { type, resource, object: committed, previous, rv: this.rv };
    this.record(change);
    for (const listener of [...this.listeners]) listener(change);
    for (const hook of this.hooks) hook(change);
    return committed;
  }

  private record(change: Change): void {
    this.history.push(change);
    while (this.history.length > this.historyLimit) {
      const dropped = this.history.shift();
      if (dropped) this.compacted = dropped.rv;
    }
  }

  /** Changes after `rv`, or undefined when some of them have fallen out of the history (410 Gone). */
  since(rv: number): Change[] | undefined {
    if (rv < this.compacted) return undefined;
    return this.history.filter((c) => c.rv > rv);
  }

  /** The oldest resourceVersion a watch can still start from. */
  oldestWatchable(): number {
    return this.compacted;
  }

  /** Registers a hook that runs after the listeners of every change. */
  afterCommit(hook: ChangeListener): void {
    this.hooks.push(hook);
  }

  subscribe(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
