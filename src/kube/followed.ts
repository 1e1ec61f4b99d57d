// What a reflector (reflector.ts) follows, kept: the objects of a ListWatch as the last list and the
// watch since left them, readable at no cost while they are followed, and a wait for their next
// change. The agent's own Node and its own pods are followed this way (own-views.ts), so that reading
// them, and waiting for them to change, costs no request while a watch is open.
//
// When a watch cannot be held, the objects are not followed and the reader asks the API server
// itself (the bounded fallback the callers already have: a GET, a list, a poll). A 403 (kured-ts's
// ClusterRole without `watch` on pods, or a user's own RBAC) is said once, with what to grant, and
// following is tried again only after FORBIDDEN_RETRY_MS, not with the reflector's back-off: that
// would list again every 30 s, for nothing, for as long as the agent runs.
import { monotonicMs, type Clock } from '../clock/clock.js';
import type { Logger } from '../log/logger.js';
import { isForbidden, statusMessage } from './errors.js';
import type { WatchEvent } from './kube.js';
import { Reflector, type ListWatch, type Listed, type ReflectorHandler } from './reflector.js';

/** How often kube-apiserver sends a bookmark to a watch that asks for them (its cacher's bookmarkFrequency). */
const BOOKMARK_EVERY_MS = 60_000;

/** After a 403 on a list or watch, following starts again this much later. */
const FORBIDDEN_RETRY_MS = 15 * 60_000;

/** A change as the followers of a view see it: the object now, or undefined once it is gone. */
export type Change<T> = { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: T } | { type: 'RELISTED' };

export interface FollowedOptions<T> {
  clock: Clock;
  log: Logger;
  /** [0, 1) for the reflector's back-off. */
  random: () => number;
  /** The key of an object (namespace/name). */
  key: (object: T) => string;
  /** What is kept of each object (e.g. without its managedFields); default all of it. */
  keep?: (object: T) => T;
  /**
   * The reflector's silence bound (see ReflectorOptions.silenceMs), also the oldest the view may be
   * to answer a read; default none.
   */
  silenceMs?: number;
  /** Default FORBIDDEN_RETRY_MS. */
  forbiddenRetryMs?: number;
  /** The permission to name when a 403 stops following, e.g. "watch on pods". */
  needs: string;
}

/** Read through a call so that the compiler does not narrow it across awaits. */
function aborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

/** The objects of `source`, followed while run() runs; see the file comment. */
export class Followed<T> {
  private readonly objects = new Map<string, T>();
  private reflector: Reflector<T> | undefined;
  private readonly waiters = new Set<() => void>();
  private readonly listeners = new Set<(change: Change<T>) => void>();
  /** A 403 was said (once per agent: it says what to grant). */
  private forbiddenSaid = false;
  /** Changes taken in (each event, each whole list): a reader can tell whether it missed one. */
  changes = 0;

  constructor(
    private readonly source: ListWatch<T>,
    private readonly o: FollowedOptions<T>,
  ) {}

  /**
   * Follows until `signal` aborts; after a 403, again FORBIDDEN_RETRY_MS later. Never rejects. With
   * `start`, the first round watches from that list (no list of its own first).
   */
  async run(signal: AbortSignal, start?: Listed<T>): Promise<void> {
    for (let from = start; !aborted(signal); from = undefined) {
      const forbidden = new AbortController();
      const both = AbortSignal.any([signal, forbidden.signal]);
      const reflector = new Reflector(this.guarded(forbidden), {
        clock: this.o.clock,
        log: this.o.log,
        random: this.o.random,
        ...(this.o.silenceMs === undefined
          ? {}
          : {
              silenceMs: this.o.silenceMs,
              relistAfterMs: Math.max(0, this.o.silenceMs - BOOKMARK_EVERY_MS),
            }),
      });
      this.reflector = reflector;
      await reflector.run(this.handler(), both, from === undefined ? {} : { from });
      // a run that was stopped may end after the next one started (released, then held again): it
      // must not take the new reflector with it
      if (this.reflector !== reflector) return;
      this.reflector = undefined;
      this.notify({ type: 'RELISTED' });
      if (aborted(signal)) return;
      await this.o.clock.sleep(this.o.forbiddenRetryMs ?? FORBIDDEN_RETRY_MS, signal).catch(() => undefined);
    }
  }

  /**
   * Are the objects followed now: listed, and the watch open (or being opened again after a normal
   * end)? While not, a reader asks the API server itself.
   */
  get following(): boolean {
    const r = this.reflector;
    return r !== undefined && r.synced && r.blindSince === undefined && r.heardWithinBound();
  }

  /**
   * Milliseconds since the view last heard from the API server (a list, an event, a bookmark; since
   * it started when it never has); undefined while it is not run (kured_ts_view_age_seconds).
   */
  ageMs(): number | undefined {
    return this.reflector?.ageMs();
  }

  /**
   * The view has heard nothing for longer than its staleness bound: what it is, how long, and the
   * last failure, in words; undefined while it is current, not run, or has no bound.
   */
  stale(): string | undefined {
    const r = this.reflector;
    const bound = this.o.silenceMs;
    if (r === undefined || bound === undefined || r.ageMs() <= bound) return undefined;
    // the words stay the same while it is stale: the status that carries them is not rewritten
    return `${this.source.what}: nothing heard for more than ${Math.round(bound / 1000)} s (the log says why)`;
  }

  /** The objects as followed; undefined while not following. */
  items(): T[] | undefined {
    return this.following ? [...this.objects.values()] : undefined;
  }

  /** One object by key as followed; undefined while not following or when there is none. */
  get(key: string): T | undefined {
    return this.following ? this.objects.get(key) : undefined;
  }

  /**
   * One object by key as last taken in, followed now or not (a watch in its first second, a broken
   * one): for comparing versions only, never to answer a read.
   */
  peek(key: string): T | undefined {
    return this.objects.get(key);
  }

  /**
   * Resolves at the next change (an event, a whole list), when a watch ends (something may have been
   * missed meanwhile: look again), after `ms`, or when `signal` aborts; at once when `changes` has
   * moved from `since` (a change came between the caller's read and its wait).
   */
  async changed(ms: number, signal?: AbortSignal, since?: number): Promise<void> {
    // a change after `since` (a count of changes the caller read with) has come already
    if (signal?.aborted === true || ms <= 0 || (since !== undefined && this.changes !== since)) return;
    const stop = new AbortController();
    const both = signal === undefined ? stop.signal : AbortSignal.any([signal, stop.signal]);
    const wake = (): void => {
      stop.abort();
    };
    this.waiters.add(wake);
    try {
      await this.o.clock.sleep(ms, both).catch(() => undefined);
    } finally {
      this.waiters.delete(wake);
    }
  }

  /**
   * Is it followed now, waiting up to `ms` for its first list when that is still being taken (a
   * reader that comes with the start need not ask the server itself)? Once listed, or once a list or
   * watch has failed, it answers at once: a reader then asks the server, not the view.
   */
  async synced(ms: number, signal?: AbortSignal): Promise<boolean> {
    const until = monotonicMs(this.o.clock) + ms;
    for (let left = ms; this.firstListDue(); left = until - monotonicMs(this.o.clock)) {
      if (left <= 0 || signal?.aborted === true) return false;
      await this.changed(Math.min(left, 1_000), signal);
    }
    return this.following;
  }

  /** Is the first list of this run still being taken (running, nothing listed yet, nothing failed yet)? */
  private firstListDue(): boolean {
    const r = this.reflector;
    return r !== undefined && !r.synced && r.nextPauseMs() === 0;
  }

  /** Calls `listener` with every change from now on; returns the function that stops it. */
  subscribe(listener: (change: Change<T>) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify(change: Change<T>): void {
    for (const wake of [...this.waiters]) wake();
    for (const listener of [...this.listeners]) listener(change);
  }

  private handler(): ReflectorHandler<T> {
    const keep = this.o.keep ?? ((object: T): T => object);
    return {
      replace: (items) => {
        this.objects.clear();
        for (const item of items) this.objects.set(this.o.key(item), keep(item));
        this.changes++;
        this.notify({ type: 'RELISTED' });
      },
      apply: (type, object) => {
        const key = this.o.key(object);
        if (type === 'DELETED') this.objects.delete(key);
        else this.objects.set(key, keep(object));
        this.changes++;
        this.notify({ type, object });
      },
    };
  }

  /**
   * The source, with a 403 stopping the reflector (`forbidden`) and said once, and the end of each
   * watch told to the waiters.
   */
  private guarded(forbidden: AbortController): ListWatch<T> {
    const stopOn = (err: unknown, verb: string): never => {
      if (isForbidden(err)) {
        forbidden.abort();
        if (!this.forbiddenSaid) {
          this.forbiddenSaid = true;
          this.o.log.warn('cannot follow: polling instead', {
            what: this.source.what,
            error: `${verb}: ${statusMessage(err)}`,
            grant: this.o.needs,
          });
        }
      }
      throw err;
    };
    return {
      what: this.source.what,
      list: (signal): Promise<Listed<T>> =>
        this.source.list(signal).catch((err: unknown) => stopOn(err, 'list')),
      watch: async (resourceVersion, onEvent: (event: WatchEvent<T>) => void, signal): Promise<void> => {
        try {
          await this.source.watch(resourceVersion, onEvent, signal);
        } catch (err) {
          stopOn(err, 'watch');
        } finally {
          // a watch that ended may have missed something until the next one: waiters look again
          for (const wake of [...this.waiters]) wake();
        }
      },
    };
  }
}

/** Is version `a` at least `b`? Numbers as kube-apiserver's are compared; other tokens only for equality. */
function atLeast(a: string, b: string): boolean {
  if (a === b) return true;
  if (!/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return BigInt(a) >= BigInt(b);
}

/** The version of an object ('' when it has none). */
function versionOf(object: { metadata?: { resourceVersion?: string } } | undefined): string {
  return object?.metadata?.resourceVersion ?? '';
}

/**
 * One object (a single-object ListWatch: the own Node, the lock's DaemonSet) followed, with what this
 * agent wrote of it: a write answers with the object as written, and until the watch has brought
 * that version, reads answer with it (never an older object than one this agent wrote or read). A
 * write that failed sends the next read to the API server (a guarded write's retry must not plan from
 * the view that made it fail). Followed for as long as it is held.
 */
export class FollowedObject<T extends { metadata?: { resourceVersion?: string } }> {
  /** The object as this agent last wrote or read it past the view, until the view has its version. */
  private noted: T | undefined;
  /** The last write failed: the next read asks the server. */
  private dirty = false;
  /** While held: stops the following. */
  private holding: AbortController | undefined;

  constructor(
    readonly followed: Followed<T>,
    private readonly key: string,
  ) {
    // what the view has taken in, followed or not yet (the first second of a new watch): a noted
    // object the view has caught up with is dropped
    followed.subscribe((change) => {
      const noted = this.noted;
      if (noted === undefined) return;
      const taken = this.followed.peek(this.key);
      if (change.type === 'RELISTED' || (taken !== undefined && atLeast(versionOf(taken), versionOf(noted))))
        this.noted = undefined;
    });
  }

  /** Is it held (followed, or being followed)? */
  get held(): boolean {
    return this.holding !== undefined;
  }

  /** Follows it within `signal` until released, from `seed` (an answer already at hand) when given. */
  hold(signal: AbortSignal, seed?: T): void {
    if (this.holding !== undefined) return;
    const stop = new AbortController();
    this.holding = stop;
    const start = seed === undefined ? undefined : { items: [seed], resourceVersion: versionOf(seed) };
    void this.followed.run(AbortSignal.any([signal, stop.signal]), start).finally(() => {
      if (this.holding === stop) this.holding = undefined;
    });
  }

  /** Stops following it. */
  release(): void {
    this.holding?.abort();
    this.holding = undefined;
    this.noted = undefined;
  }

  /**
   * The object as best known without a request: the newer of the view's and the one noted; undefined
   * when a read must ask the server.
   */
  current(): T | undefined {
    if (this.dirty) return undefined;
    const watched = this.followed.get(this.key);
    if (watched === undefined) return undefined;
    const noted = this.noted;
    return noted !== undefined && !atLeast(versionOf(watched), versionOf(noted)) ? noted : watched;
  }

  /** An answer about it from the server (a write's, a read's): newer than the view until the view has it. */
  note(object: T): void {
    this.dirty = false;
    const taken = this.followed.peek(this.key);
    this.noted = taken !== undefined && atLeast(versionOf(taken), versionOf(object)) ? undefined : object;
  }

  /** A write of it failed: the next read asks the server. */
  spoil(): void {
    this.dirty = true;
    this.noted = undefined;
  }
}
