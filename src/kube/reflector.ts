// The one way kured-ts follows objects of the API server, as client-go's reflector does: list (or
// get), then watch from that resourceVersion, a new watch from the last version seen after each ends,
// a fresh list after 410 Gone, bounded and jittered back-off while lists or watches fail, and a word
// on how long it has been blind (the coordinator steps down when it cannot see the fleet; a waiter
// falls back to polling). The hazards are handled once, here, and tested once, against the fake API
// server's failure injection (test/integration/kube/reflector.test.ts): a watch closed at once (no
// spinning), 410 in the stream or as the answer, a watch that hangs silent, 5xx on the list.
//
// What is followed comes from a ListWatch (list-watch.ts): a collection (the Nodes, page by page; a
// node's pods) or one object (the lock's DaemonSet, an agent's own Node: a GET, and a watch with
// `metadata.name=`). What is kept of it is the caller's: the reflector hands every whole list and
// every change to a ReflectorHandler, so that the coordinator keeps a few hundred bytes per Node, not
// the object.
import { monotonicMs, type Clock } from '../clock/clock.js';
import type { Logger } from '../log/logger.js';
import { isGone, isTooManyRequests, statusMessage } from './errors.js';
import type { WatchEvent } from './kube.js';
import { backoffMs } from './retry.js';

/** First pause after a failed list or watch; doubles per failure in a row, up to WATCH_MAX_BACKOFF_MS. */
export const WATCH_BASE_BACKOFF_MS = 1_000;
export const WATCH_MAX_BACKOFF_MS = 30_000;

/**
 * The staleness bound of every view kured-ts decides from (issue 53): kube-apiserver's watch cache
 * sends a bookmark to every watch that allows them once a minute (k8s.io/apiserver's cacher,
 * bookmarkFrequency; the fake API server's BOOKMARK_MS), so a watch that has brought neither an event
 * nor a bookmark for half as long again is hung (a proxy, a load balancer, a server that stopped
 * sending). It is given up, a view that old answers no read (the reader asks the server), and it is
 * said as a warning when it happens twice in a row (SILENT_WATCHES_WARNED). A healthy watch on an idle
 * server never reaches it; on a busy one the server may drop a bookmark, and the bound then costs one
 * read and a new watch.
 */
export const WATCH_SILENCE_MS = 90_000;

/** Watches failed in a row that are said as a warning (once per spell, with the last failure). */
const FAILING_WATCHES = 5;

/**
 * Watches given up at the silence bound in a row before it is said as a warning. kube-apiserver's
 * watch cache hands a bookmark to a watcher only if its buffer has room at that moment (cacher.go,
 * dispatchEvent: nonblockingAdd; the next try is a minute later): a watch of one Node is handed every
 * Node's events to filter, and on a busy server its buffer is often full. One silent watch is that
 * (bench:real warned 239 times at 1,000 nodes when each was said; said from the second in a row, 0);
 * a second in a row, across a fresh read and a new connection, is a path that holds connections and
 * passes nothing (a proxy, a load balancer).
 */
const SILENT_WATCHES_WARNED = 2;

/** A whole list and the resourceVersion of the snapshot it was cut from. */
export interface Listed<T> {
  items: T[];
  resourceVersion: string;
}

/** Where a reflector's objects come from. */
export interface ListWatch<T> {
  /** What is followed, for logs and reasons: "Node n1", "DaemonSet kube-system/kured". */
  readonly what: string;
  /** The whole list now (one object, or none when it does not exist, for a single object). */
  list(signal: AbortSignal): Promise<Listed<T>>;
  /**
   * Streams the changes after `resourceVersion` until the stream ends or `signal` aborts. Rejects
   * with the API server's error (a 410 Gone asks for a new list).
   */
  watch(resourceVersion: string, onEvent: (event: WatchEvent<T>) => void, signal: AbortSignal): Promise<void>;
}

/** What the caller keeps of the objects followed. */
export interface ReflectorHandler<T> {
  /** A whole list: everything known before is replaced by `items`. */
  replace(items: readonly T[]): void;
  /** One change, in the order the server sent them. */
  apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: T): void;
}

export interface ReflectorOptions {
  clock: Clock;
  log: Logger;
  /** [0, 1) for the back-off jitter. */
  random: () => number;
  /**
   * List again after every watch, not only after 410: for one object, one small GET that catches a
   * deletion or a change missed between two watches (the lock's DaemonSet). Default false: a new
   * watch from the last version seen, as client-go's reflector.
   */
  relistEachRound?: boolean;
  /**
   * A watch that brings no event and no bookmark for this long is given up and counted as failed
   * (a hung connection, a server that stopped sending): the API server sends a bookmark about once a
   * minute to a watch that asks for them. Default: none (the transport's bound on the watch holds).
   */
  silenceMs?: number;
  /**
   * A new watch is preceded by a list when the reflector last heard from the API server longer ago
   * than this: a new watch brings its first bookmark only a minute after it opens, so a view whose
   * age must stay within silenceMs is read afresh (one GET for one object) instead of answering
   * "stale" until then. Default: never (a new watch from the last version seen).
   */
  relistAfterMs?: number;
}

/** Where a reflector starts: a list the caller already holds (no list first), or nothing. */
export interface ReflectorStart<T> {
  from?: Listed<T>;
}

/** Read through a call so that the compiler does not narrow it across awaits. */
function aborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

/** How one watch went. */
interface WatchRun {
  failed: boolean;
  /** 410 Gone (answered, or as an ERROR event): the next round lists afresh. */
  gone: boolean;
  events: number;
  resourceVersion: string;
  /** Why it failed, in words, when it did. */
  error?: string;
  /** It failed with 429: the API server turned it away (API Priority and Fairness). */
  throttled?: boolean;
}

/** Follows what `source` lists; see the file comment. */
export class Reflector<T> {
  /** Since when it has been blind (see blindSince), until a list succeeds or a watch has run long enough. */
  private blindFrom: number | undefined;
  /** When the watch now open started (monotonic ms); undefined between watches. */
  private watchingFrom: number | undefined;
  /** A whole list has been taken (or was given): what the handler holds is complete. */
  synced = false;
  /** When it last heard from the API server (a list, an event or a bookmark), monotonic ms. */
  lastHeardMs: number | undefined;
  /** Failed lists and watches in a row (sets the back-off). */
  private failures = 0;
  /** The last failure, in words (for the warning of a stale view). */
  private lastError = '';
  /** The last failure was the API server turning the request away (429), not a fault of the path to it. */
  private lastThrottled = false;
  /** The warning of a view blind past the silence bound was given (said once per spell). */
  private staleSaid = false;
  /** Watches given up at the silence bound in a row (none heard from since). */
  private silentInRow = 0;
  /** The warning of watches failing in a row was given (said once per spell, until one holds). */
  private failingSaid = false;

  /** When it was made (monotonic ms): the age of a view that never listed counts from it. */
  private readonly madeMs: number;

  constructor(
    private readonly source: ListWatch<T>,
    private readonly o: ReflectorOptions,
  ) {
    this.madeMs = this.now();
    this.blindFrom = this.madeMs;
  }

  /**
   * The last failed list or watch, in words ('' when none failed yet), and whether the API server turned it away (429 of API
   * Priority and Fairness): any client of the same identity meets the same, so a blind view is the
   * server's load, not this client's path (the coordinator leads on instead of handing over).
   */
  get failure(): { lastFailure: string; throttled: boolean } {
    return { lastFailure: this.lastError, throttled: this.lastThrottled };
  }

  /**
   * Since when (monotonic ms) it has not been following: from the start until the first list, and
   * from a failed list or watch until a list succeeds or a watch has run WATCH_BASE_BACKOFF_MS.
   * undefined while it follows.
   */
  get blindSince(): number | undefined {
    const watching = this.watchingFrom;
    if (watching !== undefined && this.now() - watching >= WATCH_BASE_BACKOFF_MS) return undefined;
    return this.blindFrom;
  }

  /**
   * Lists (unless `start.from` is given) and watches until `signal` aborts, handing what it learns
   * to `handler`. Never rejects.
   */
  async run(handler: ReflectorHandler<T>, signal: AbortSignal, start: ReflectorStart<T> = {}): Promise<void> {
    let resourceVersion = start.from?.resourceVersion;
    if (start.from !== undefined) this.listed(start.from, handler, false);
    while (!aborted(signal)) {
      resourceVersion ??= await this.list(handler, signal);
      if (resourceVersion !== undefined) resourceVersion = await this.round(resourceVersion, handler, signal);
      await this.pause(signal);
    }
  }

  /** One watch, judged: the resourceVersion to watch from next, or undefined to list first. */
  private async round(
    resourceVersion: string,
    handler: ReflectorHandler<T>,
    signal: AbortSignal,
  ): Promise<string | undefined> {
    const run = await this.watchOnce(resourceVersion, handler, signal);
    if (aborted(signal)) return run.resourceVersion;
    this.failures = run.failed ? this.failures + 1 : 0;
    if (run.failed) this.blind(run.error ?? 'watch ended at once', run.throttled === true);
    this.sayFailing(run.failed);
    const old = this.o.relistAfterMs !== undefined && this.ageMs() > this.o.relistAfterMs;
    return run.gone || old || this.o.relistEachRound === true ? undefined : run.resourceVersion;
  }

  /** The pause before the next list or watch: 0 after a healthy round, else the back-off so far. */
  nextPauseMs(): number {
    if (this.failures === 0) return 0;
    return backoffMs(this.failures, WATCH_BASE_BACKOFF_MS, WATCH_MAX_BACKOFF_MS, this.o.random);
  }

  private async pause(signal: AbortSignal): Promise<void> {
    const ms = this.nextPauseMs();
    if (ms > 0) await this.o.clock.sleep(ms, signal).catch(() => undefined);
  }

  private now(): number {
    return monotonicMs(this.o.clock);
  }

  /**
   * Not following since now (kept from the first moment), after a failure said in `error`; blind past
   * the silence bound, said once as a warning.
   */
  private blind(error: string, throttled = false): void {
    this.lastError = error;
    this.lastThrottled = throttled;
    const from = (this.blindFrom ??= this.now());
    const bound = this.o.silenceMs;
    if (bound === undefined || this.staleSaid || this.now() - from < bound) return;
    this.staleSaid = true;
    this.o.log.warn('view stale: its watch keeps failing', {
      what: this.source.what,
      blindSeconds: Math.round((this.now() - from) / 1000),
      error,
    });
  }

  /** Following again: a stale view said so is said to be current again. */
  private following(): void {
    this.blindFrom = undefined;
    this.heardAgain();
  }

  /**
   * Watches failing in a row are said once as a warning (also while lists keep the view fresh,
   * relistAfterMs), and a watch that holds again once.
   */
  private sayFailing(failed: boolean): void {
    if (failed && this.failures >= FAILING_WATCHES && !this.failingSaid) {
      this.failingSaid = true;
      this.o.log.warn('watch keeps failing', {
        what: this.source.what,
        failures: this.failures,
        error: this.lastError,
      });
    } else if (!failed && this.failingSaid) {
      this.failingSaid = false;
      this.o.log.info('watch holds again', { what: this.source.what });
    }
  }

  /** It hears from the API server again (a list, an event, a bookmark): a stale spell said is over. */
  private heardAgain(): void {
    if (!this.staleSaid) return;
    this.staleSaid = false;
    this.o.log.info('view current again', { what: this.source.what });
  }

  /** A whole list taken in: handed over, and the reflector follows again. */
  private listed(list: Listed<T>, handler: ReflectorHandler<T>, heard: boolean): void {
    handler.replace(list.items);
    this.synced = true;
    this.following();
    // a list handed in (a read the caller made just now) counts as heard for the staleness bound
    this.lastHeardMs = heard || this.lastHeardMs === undefined ? this.now() : this.lastHeardMs;
  }

  /** Milliseconds since it last heard from the API server (since it was made, when it never has). */
  ageMs(): number {
    return this.now() - (this.lastHeardMs ?? this.madeMs);
  }

  /** Has it heard from the API server within the silence bound (always, without a bound)? */
  heardWithinBound(): boolean {
    const bound = this.o.silenceMs;
    return bound === undefined || this.ageMs() <= bound;
  }

  /** One list; its resourceVersion, or undefined when it failed (counted, and blind). */
  private async list(handler: ReflectorHandler<T>, signal: AbortSignal): Promise<string | undefined> {
    try {
      const list = await this.source.list(signal);
      this.listed(list, handler, true);
      return list.resourceVersion;
    } catch (err) {
      if (aborted(signal)) return undefined;
      this.failures++;
      this.o.log.debug('list failed', { what: this.source.what, error: statusMessage(err) });
      this.blind(`list: ${statusMessage(err)}`, isTooManyRequests(err));
      return undefined;
    }
  }

  /**
   * One watch from `resourceVersion`: until the stream ends, fails, is silent for silenceMs, or
   * `signal` aborts. A watch that ends within WATCH_BASE_BACKOFF_MS without an event counts as
   * failed (no spinning on a server that closes at once); one that runs that long follows again.
   */
  private async watchOnce(
    resourceVersion: string,
    handler: ReflectorHandler<T>,
    signal: AbortSignal,
  ): Promise<WatchRun> {
    const started = this.now();
    const stop = new AbortController();
    const both = AbortSignal.any([signal, stop.signal]);
    const run: WatchRun = { failed: false, gone: false, events: 0, resourceVersion };
    const silence = this.silence(stop, both);
    this.watchingFrom = started;
    try {
      await this.source.watch(
        resourceVersion,
        (event) => {
          silence.heard();
          this.silentInRow = 0;
          if (event.type !== 'ERROR') {
            this.heardAgain();
            this.sayFailing(false);
          }
          this.take(event, run, handler, stop);
        },
        both,
      );
    } catch (err) {
      // an abort of ours (an ERROR event, the silence bound) is judged where it was decided
      if (!aborted(signal) && !stop.signal.aborted) {
        run.failed = true;
        run.gone = isGone(err);
        run.throttled = isTooManyRequests(err);
        run.error = `watch: ${statusMessage(err)}`;
        this.o.log.debug('watch failed', { what: this.source.what, error: statusMessage(err) });
      }
    }
    // a watch that ran WATCH_BASE_BACKOFF_MS followed the objects while it ran
    if (this.now() - started >= WATCH_BASE_BACKOFF_MS) {
      this.blindFrom = undefined;
      if (!silence.broke()) this.heardAgain();
    }
    this.watchingFrom = undefined;
    stop.abort();
    if (silence.broke()) this.fellSilent(run);
    const brief = this.now() - started < WATCH_BASE_BACKOFF_MS && run.events === 0;
    if (brief && !aborted(signal)) run.failed = true;
    return run;
  }

  /**
   * A watch given up at the silence bound: failed (the view answers no read until it hears again),
   * said as a warning from the SILENT_WATCHES_WARNED-th in a row, before that at info.
   */
  private fellSilent(run: WatchRun): void {
    const seconds = Math.round((this.o.silenceMs ?? 0) / 1000);
    run.failed = true;
    run.error = `watch silent for ${seconds} s: no event, no bookmark`;
    this.silentInRow++;
    const fields = { what: this.source.what, silentSeconds: seconds, inARow: this.silentInRow };
    if (this.silentInRow < SILENT_WATCHES_WARNED) {
      this.o.log.info('watch silent: no event, no bookmark; watching again', fields);
      return;
    }
    this.staleSaid = true;
    this.o.log.warn('view stale: its watch fell silent; watching again', fields);
  }

  /**
   * The silence bound of one watch (when configured): `heard` at each event or bookmark; after
   * silenceMs without one, `stop` is aborted and `broke` says so. One timer per watch, not per event
   * (the coordinator's watch of a fleet brings thousands).
   */
  private silence(stop: AbortController, signal: AbortSignal): { heard: () => void; broke: () => boolean } {
    const silenceMs = this.o.silenceMs;
    let last = this.now();
    let broke = false;
    const watchdog = async (): Promise<void> => {
      if (silenceMs === undefined) return;
      for (let wait = silenceMs; !aborted(signal); wait = last + silenceMs - this.now()) {
        if (wait <= 0) {
          broke = true;
          stop.abort();
          return;
        }
        await this.o.clock.sleep(wait, signal);
      }
    };
    watchdog().catch(() => undefined);
    return {
      heard: () => {
        last = this.now();
        this.lastHeardMs = last;
      },
      broke: () => broke,
    };
  }

  /** One event of a watch taken in. */
  private take(
    event: WatchEvent<T>,
    run: WatchRun,
    handler: ReflectorHandler<T>,
    stop: AbortController,
  ): void {
    const meta = (event.object as { metadata?: { resourceVersion?: string } } | undefined)?.metadata;
    if (event.type === 'ERROR') {
      // 410 Expired in the stream (the only error kube-apiserver streams): list afresh
      run.gone = true;
      run.failed = true;
      stop.abort();
      return;
    }
    if (meta?.resourceVersion !== undefined) run.resourceVersion = meta.resourceVersion;
    if (event.type === 'BOOKMARK') return;
    run.events++;
    handler.apply(event.type, event.object);
  }
}

/** A handler for one object (a single-object ListWatch): `seen` with each state, undefined once it is gone. */
export function latest<T>(seen: (object: T | undefined) => void): ReflectorHandler<T> {
  return {
    replace: (items) => {
      seen(items[0]);
    },
    apply: (type, object) => {
      seen(type === 'DELETED' ? undefined : object);
    },
  };
}
