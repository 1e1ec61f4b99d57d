// The fake API server's memory: objects by resource, one global resourceVersion counter, and a
// bounded history of changes from which watches replay.
import type { ResourceName, StoredObject } from './resources.js';

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

/** An object's key as etcd orders it: namespace/name. */
export function objectKey(o: StoredObject): string {
  return `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

/** A pod's spec.nodeName ('' while unscheduled). */
function nodeOf(pod: StoredObject): string {
  const spec = (pod as { spec?: { nodeName?: unknown } }).spec;
  return typeof spec?.nodeName === 'string' ? spec.nodeName : '';
}

function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Objects, resourceVersions and history. Stored objects are never mutated in place. */
export class Store {
  private rv = 0;
  /** resource → namespace ('' when cluster-scoped) → name → object */
  private readonly objects = new Map<ResourceName, Map<string, Map<string, StoredObject>>>();
  /** Sorted names per resource and namespace; dropped when an object is added or removed there. */
  private readonly sortedNames = new Map<string, string[]>();
  /** Pods by spec.nodeName (kube's watch cache indexes them so too): node → namespace/name → pod. */
  private readonly podsByNode = new Map<string, Map<string, StoredObject>>();
  /** Changes in resourceVersion order; entries before `head` have been dropped. */
  private history: Change[] = [];
  private head = 0;
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
    return this.objects
      .get(resource)
      ?.get(namespace ?? '')
      ?.get(name);
  }

  /** Objects of a resource, in one namespace or all; sorted by namespace and name like etcd keys. */
  list(resource: ResourceName, namespace?: string): StoredObject[] {
    const byNamespace = this.objects.get(resource);
    if (!byNamespace) return [];
    const namespaces = namespace === undefined ? [...byNamespace.keys()].sort(byCodeUnits) : [namespace];
    const out: StoredObject[] = [];
    for (const ns of namespaces) {
      const byName = byNamespace.get(ns);
      if (!byName) continue;
      for (const name of this.sorted(resource, ns, byName)) {
        const obj = byName.get(name);
        if (obj) out.push(obj);
      }
    }
    return out;
  }

  /** The pods bound to `node` (in one namespace or all), sorted like list: no scan of every pod. */
  podsOn(node: string, namespace: string | undefined): StoredObject[] {
    const pods = [...(this.podsByNode.get(node)?.entries() ?? [])];
    return pods
      .filter(([, p]) => namespace === undefined || (p.metadata.namespace ?? '') === namespace)
      .sort(([a], [b]) => byCodeUnits(a, b))
      .map(([, p]) => p);
  }

  private indexPod(previous: StoredObject | undefined, committed: StoredObject, deleted: boolean): void {
    const key = objectKey(committed);
    if (previous !== undefined) this.podsByNode.get(nodeOf(previous))?.delete(key);
    if (deleted) return;
    const node = nodeOf(committed);
    let pods = this.podsByNode.get(node);
    if (pods === undefined) {
      pods = new Map();
      this.podsByNode.set(node, pods);
    }
    pods.set(key, committed);
  }

  /** Objects of one namespace in no particular order (cheaper than list). */
  values(resource: ResourceName, namespace: string | undefined): Iterable<StoredObject> {
    return (
      this.objects
        .get(resource)
        ?.get(namespace ?? '')
        ?.values() ?? []
    );
  }

  private sorted(resource: ResourceName, namespace: string, byName: Map<string, StoredObject>): string[] {
    const cacheKey = `${resource}/${namespace}`;
    let names = this.sortedNames.get(cacheKey);
    if (!names) {
      names = [...byName.keys()].sort(byCodeUnits);
      this.sortedNames.set(cacheKey, names);
    }
    return names;
  }

  private bucket(resource: ResourceName, namespace: string): Map<string, StoredObject> {
    let byNamespace = this.objects.get(resource);
    if (!byNamespace) {
      byNamespace = new Map();
      this.objects.set(resource, byNamespace);
    }
    let byName = byNamespace.get(namespace);
    if (!byName) {
      byName = new Map();
      byNamespace.set(namespace, byName);
    }
    return byName;
  }

  /**
   * Commits one change: gives the object the next resourceVersion, stores or removes it, records it
   * in the history and tells every listener synchronously. Returns the committed object.
   */
  commit(resource: ResourceName, type: ChangeType, object: StoredObject): StoredObject {
    const namespace = object.metadata.namespace ?? '';
    const byName = this.bucket(resource, namespace);
    const previous = byName.get(object.metadata.name);
    this.rv++;
    const committed: StoredObject = {
      ...object,
      metadata: { ...object.metadata, resourceVersion: String(this.rv) },
    };
    if (type === 'DELETED') byName.delete(committed.metadata.name);
    else byName.set(committed.metadata.name, committed);
    if (type !== 'MODIFIED') this.sortedNames.delete(`${resource}/${namespace}`);
    if (resource === 'pods') this.indexPod(previous, committed, type === 'DELETED');
    const change: Change = { type, resource, object: committed, previous, rv: this.rv };
    this.record(change);
    for (const listener of [...this.listeners]) listener(change);
    for (const hook of this.hooks) hook(change);
    return committed;
  }

  private record(change: Change): void {
    this.history.push(change);
    while (this.history.length - this.head > this.historyLimit) {
      const dropped = this.history[this.head];
      if (dropped) this.compacted = dropped.rv;
      this.head++;
    }
    // drop the dead prefix now and then, not on every write
    if (this.head > this.historyLimit) {
      this.history = this.history.slice(this.head);
      this.head = 0;
    }
  }

  /** Changes after `rv`, or undefined when some of them have fallen out of the history (410 Gone). */
  since(rv: number): Change[] | undefined {
    if (rv < this.compacted) return undefined;
    // every resourceVersion is exactly one change, so the history is indexable by version
    const first = this.history[this.head];
    if (!first) return [];
    return this.history.slice(this.head + Math.max(0, rv - first.rv + 1));
  }

  /**
   * Objects of a resource as they were at resourceVersion `rv` (sorted like list), rebuilt from the
   * current objects and the history; undefined when changes after `rv` have fallen out of it.
   */
  listAt(resource: ResourceName, namespace: string | undefined, rv: number): StoredObject[] | undefined {
    const later = this.since(rv);
    if (later === undefined) return undefined;
    const byKey = new Map(this.list(resource, namespace).map((o) => [objectKey(o), o]));
    for (let i = later.length - 1; i >= 0; i--) {
      const change = later[i];
      if (change === undefined || change.resource !== resource) continue;
      const ns = change.object.metadata.namespace ?? '';
      if (namespace !== undefined && ns !== namespace) continue;
      if (change.previous === undefined) byKey.delete(objectKey(change.object));
      else byKey.set(objectKey(change.previous), change.previous);
    }
    return [...byKey.entries()].sort(([a], [b]) => byCodeUnits(a, b)).map(([, o]) => o);
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
