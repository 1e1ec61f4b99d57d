// Watch streams: newline-delimited JSON events after a resourceVersion, filtered by selectors, with
// kube's semantics for objects that enter or leave a filter, and 410 for versions no longer kept.
import { SystemClock, type Clock } from '../../clock/clock.js';
import type { ResourceDef, StoredObject } from './resources.js';
import { passes, requiredValue, type ObjectFilter } from './selectors.js';
import { apiError, badRequest } from './status.js';
import type { Change, Store } from './store.js';
import type { ResponseSink } from './response-sink.js';

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
  /** allowWatchBookmarks: a BOOKMARK with the current resourceVersion every BOOKMARK_MS, as kube's watch cache. */
  bookmarks?: boolean;
}

/** How often kube-apiserver's watch cache sends a bookmark to a watch that allows them (bookmarkFrequency). */
export const BOOKMARK_MS = 60_000;

interface Stream {
  request: WatchRequest;
  /** Sends nothing more, neither events nor bookmarks, but stays open (silenceOpen). */
  silent?: boolean;
  res: ResponseSink;
  /** Aborted when the stream ends: stops its timeout. */
  stop: AbortController;
  /** Where the hub files it: the resource, and the one name its filter allows ('*': any). */
  key: string;
}

/** The hub's key for a stream of `resource` following `name` (undefined: any name). */
function streamKey(resource: string, name: string | undefined): string {
  return `${resource}/${name ?? '*'}`;
}

/** The event a watcher sees for a change, or undefined when the change is outside its filter. */
function eventFor(filter: ObjectFilter, change: Change): { type: string; object: StoredObject } | undefined {
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
  /**
   * Open streams by resource and followed name: a change is offered only to the streams of its
   * resource that follow any name or its own (a thousand agents each watching its own Node are not
   * each asked about every Node write).
   */
  private readonly streams = new Map<string, Set<Stream>>();
  private count = 0;

  /**
   * `clock` times each stream's timeoutSeconds; `serverClock` (the server's own time, as its
   * timestamps) its bookmarks, so that a simulated fleet hears one every simulated minute.
   */
  constructor(
    private readonly store: Store,
    private readonly clock: Clock = new SystemClock(),
    private readonly serverClock: Clock = clock,
  ) {
    store.subscribe((change) => {
      const name = change.object.metadata.name;
      for (const key of [streamKey(change.resource, undefined), streamKey(change.resource, name)])
        for (const stream of this.streams.get(key) ?? []) this.deliver(stream, change);
    });
  }

  /** Parses the starting resourceVersion; throws 400 for a malformed one. */
  static startVersion(text: string | undefined): number | undefined {
    if (text === undefined || text === '' || text === '0') return undefined;
    if (!/^\d+$/.test(text)) throw badRequest(`invalid resource version "${text}"`);
    return Number(text);
  }

  /** Starts streaming to `res`; the stream ends on timeout, client close or close(). */
  open(request: WatchRequest, res: ResponseSink, initial: StoredObject[]): void {
    const start = WatchHub.startVersion(request.resourceVersion);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' });
    res.flushHeaders();
    const backlog = start === undefined ? undefined : this.store.since(start);
    if (start !== undefined && backlog === undefined) {
      this.expired(res, start);
      return;
    }
    if (backlog === undefined) for (const object of initial) write(res, { type: 'ADDED', object });
    const key = streamKey(request.def.name, requiredValue(request.filter, 'metadata.name'));
    const stream: Stream = { request, res, stop: new AbortController(), key };
    this.clock.sleep(request.timeoutSeconds * 1000, stream.stop.signal).then(
      () => {
        this.end(stream);
      },
      () => undefined,
    );
    for (const change of backlog ?? []) this.deliver(stream, change);
    if (request.bookmarks === true) this.bookmark(stream);
    let filed = this.streams.get(key);
    if (filed === undefined) {
      filed = new Set();
      this.streams.set(key, filed);
    }
    filed.add(stream);
    this.count++;
    res.on('close', () => {
      this.end(stream);
    });
  }

  /** Sends the stream a BOOKMARK (the store's resourceVersion now) every BOOKMARK_MS while it is open. */
  private bookmark(stream: Stream): void {
    const { def } = stream.request;
    void (async (): Promise<void> => {
      for (;;) {
        await this.serverClock.sleep(BOOKMARK_MS, stream.stop.signal);
        if (stream.silent === true) continue;
        const metadata = { resourceVersion: String(this.store.version()) };
        write(stream.res, {
          type: 'BOOKMARK',
          object: { kind: def.kind, apiVersion: def.apiVersion, metadata },
        });
      }
    })().catch(() => undefined);
  }

  private expired(res: ResponseSink, start: number): void {
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
    if (stream.silent === true) return;
    const { def, namespace, filter } = stream.request;
    if (change.resource !== def.name) return;
    if (namespace !== undefined && change.object.metadata.namespace !== namespace) return;
    const event = eventFor(filter, change);
    if (event) write(stream.res, event);
  }

  private end(stream: Stream): void {
    const filed = this.streams.get(stream.key);
    const open = filed?.delete(stream) === true;
    if (open) this.count--;
    if (filed?.size === 0) this.streams.delete(stream.key);
    if (!open && stream.res.writableEnded) return;
    stream.stop.abort();
    if (!stream.res.writableEnded) stream.res.end();
  }

  /**
   * Every watch stream open now of `resource` goes silent: open, but no event and no bookmark from now
   * on (a connection hung after its first events). Streams opened later are served as usual.
   */
  silenceOpen(resource: string): void {
    for (const streams of this.streams.values())
      for (const stream of streams) if (stream.request.def.name === resource) stream.silent = true;
  }

  /** Number of open watch streams. */
  get size(): number {
    return this.count;
  }

  /** Ends every stream (server shutdown). */
  closeAll(): void {
    for (const stream of [...this.streams.values()].flatMap((s) => [...s])) this.end(stream);
  }
}

function write(res: ResponseSink, event: { type: string; object: unknown }): void {
  if (!res.writableEnded) res.write(`${JSON.stringify(event)}\n`);
}
