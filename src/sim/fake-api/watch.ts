// Watch streams: newline-delimited JSON events after a resourceVersion, filtered by selectors, with
// kube's semantics for objects that enter or leave a filter, and 410 for versions no longer kept.
import type { ServerResponse } from 'node:http';
import type { ResourceDef, StoredObject } from './resources.js';
import { passes, type ObjectFilter } from './selectors.js';
import { apiError, badRequest } from './status.js';
import type { Change, Store } from './store.js';

/** What a watch asks for. */
export interface WatchRequest {
  def: ResourceDef;
  /** undefined = all namespaces (or a cluster-scoped resource). */
  namespace: string | undefined;
  filter: ObjectFilter;
  /** undefined, '' or '0': start with synthetic ADDED events for what exists now. */
  resourceVersion: string | undefined;
  /** Seconds until the server ends the stream. */
  timeoutSeconds: number;
}

interface Stream {
  request: WatchRequest;
  res: ServerResponse;
  timer: NodeJS.Timeout;
}

/** The event a watcher sees for a change, or undefined when the change is outside its filter. */
export function eventFor(
  filter: ObjectFilter,
  change: Change,
): { type: string; object: StoredObject } | undefined {
  const after = passes(filter, change.object);
  if (change.type === 'DELETED') return after ? { type: 'DELETED', object: change.object } : undefined;
  const before =
    change.type === 'MODIFIED' && change.previous !== undefined && passes(filter, change.previous);
  if (before && after) return { type: 'MODIFIED', object: change.object };
  if (after) return { type: 'ADDED', object: change.object };
  // an object that leaves the filter disappears from the watcher's view, as with kube's watch cache
  return before ? { type: 'DELETED', object: change.object } : undefined;
}

export class WatchHub {
  private readonly streams = new Set<Stream>();

  constructor(private readonly store: Store) {
    store.subscribe((change) => {
      for (const stream of this.streams) this.deliver(stream, change);
    });
  }

  /** Parses the starting resourceVersion; throws 400 for a malformed one. */
  static startVersion(text: string | undefined): number | undefined {
    if (text === undefined || text === '' || text === '0') return undefined;
    if (!/^\d+$/.test(text)) throw badRequest(`invalid resource version "${text}"`);
    return Number(text);
  }

  /** Starts streaming to `res`; the stream ends on timeout, client close or close(). */
  open(request: WatchRequest, res: ServerResponse, initial: StoredObject[]): void {
    const start = WatchHub.startVersion(request.resourceVersion);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' });
    res.flushHeaders();
    const backlog = start === undefined ? undefined : this.store.since(start);
    if (start !== undefined && backlog === undefined) {
      this.expired(res, start);
      return;
    }
    if (backlog === undefined) for (const object of initial) write(res, { type: 'ADDED', object });
    const timer = setTimeout(() => {
      this.end(stream);
    }, request.timeoutSeconds * 1000);
    const stream: Stream = { request, res, timer };
    for (const change of backlog ?? []) this.deliver(stream, change);
    this.streams.add(stream);
    res.on('close', () => {
      this.end(stream);
    });
  }

  private expired(res: ServerResponse, start: number): void {
    const status = apiError(
      410,
      `too old resource version: ${start} (${this.store.oldestWatchable()})`,
      undefined,
      'Expired',
    ).status;
    write(res, { type: 'ERROR', object: status });
    res.end();
  }

  private deliver(stream: Stream, change: Change): void {
    const { def, namespace, filter } = stream.request;
    if (change.resource !== def.name) return;
    if (namespace !== undefined && change.object.metadata.namespace !== namespace) return;
    const event = eventFor(filter, change);
    if (event) write(stream.res, event);
  }

  private end(stream: Stream): void {
    if (!this.streams.delete(stream) && stream.res.writableEnded) return;
    clearTimeout(stream.timer);
    if (!stream.res.writableEnded) stream.res.end();
  }

  /** Number of open watch streams. */
  get size(): number {
    return this.streams.size;
  }

  /** Ends every stream (server shutdown). */
  closeAll(): void {
    for (const stream of [...this.streams]) this.end(stream);
  }
}

function write(res: ServerResponse, event: { type: string; object: unknown }): void {
  if (!res.writableEnded) res.write(`${JSON.stringify(event)}\n`);
}
