// The reboot lock kept, as kured keeps it, in an annotation of the kured DaemonSet.
//
// Every write is a merge patch carrying metadata.resourceVersion (the API server answers 409 when the
// DaemonSet changed since we read it), retried with a fresh read, bounded and jittered. Each write
// also prunes expired slots. A slot whose Node no longer exists is reclaimed when all slots are full.
//
// An annotation we cannot parse is reported (log + AcquireResult.reason) and treated as held by an
// unknown holder. With --lock-ttl > 0 it expires like a slot created at the later of: the DaemonSet's
// last recorded change (latest metadata.managedFields time) and the moment this agent first saw that
// exact value. Both are at or after the real write, so the unparsable lock never expires early; an
// agent restart only makes it last longer. With --lock-ttl 0 it is held until an operator fixes it.
//
// Hundreds of agents may wait for a slot at once. Each follows the DaemonSet with a watch and wakes
// only when a slot could be its own, not at every write; a freed slot wakes them all, so each pauses
// a random moment and looks again before it sends anything (see waitForChange).
import type { Clock } from '../clock/clock.js';
import { isConflict, isInvalid, isNotFound, statusMessage } from '../kube/errors.js';
import type { Kube, V1DaemonSet } from '../kube/kube.js';
import { retry } from '../kube/retry.js';
import type { Logger } from '../log/logger.js';
import {
  LockFormatError,
  entriesOf,
  formatMulti,
  formatSingle,
  isExpired,
  metadataObject,
  newEntry,
  parseLockAnnotation,
  toHolder,
  type LockEntry,
} from './kured-lock-format.js';
import type { AcquireResult, Lock, LockHolder, LockMetadata } from './lock.js';

/** Where the lock lives and how it behaves. */
export interface DaemonSetLockOptions {
  kube: Kube;
  /** This node (--node-id). */
  nodeId: string;
  /** --ds-namespace. */
  namespace: string;
  /** --ds-name. */
  name: string;
  /** --lock-annotation. */
  annotation: string;
  /** --lock-ttl in ms; 0 = slots never expire. */
  ttlMs: number;
  /** --concurrency: slots. 1 writes kured's single form, more its multi form. */
  concurrency: number;
  clock: Clock;
  log: Logger;
  /** Jitter source for retries. Default Math.random. */
  random?: () => number;
  /** Write attempts per operation. Default 8. */
  attempts?: number;
  /**
   * How long a holder's Node, once seen to exist, is not looked up again for reclaim. Default 60 s:
   * hundreds of waiting agents woken by every lock change would otherwise each GET every holder.
   */
  holderCheckMs?: number;
}

/** The holder name reported for an annotation we cannot parse. */
export const UNPARSABLE_HOLDER = '<unparsable lock>';

/** What one read of the DaemonSet tells. */
interface LockState {
  resourceVersion: string;
  /** The annotation text; undefined when absent. */
  text: string | undefined;
  /** Slots, expired ones included; [] when absent or unparsable. */
  entries: LockEntry[];
  /** Why the annotation cannot be read, when it cannot. */
  malformed?: string;
  /** The unparsable annotation has outlived --lock-ttl. */
  malformedExpired?: boolean;
  /** When (ms) the unparsable annotation expires; undefined with --lock-ttl 0. */
  malformedExpiresAt?: number;
}

/** Why a waiting node should try for a slot again. */
type Wake = 'slot-open' | 'own-slot-changed';

/** Wakes the one pending next() at each change of the watched lock annotation. */
class ChangeFeed {
  private waiting: (() => void) | undefined;

  notify(): void {
    const wake = this.waiting;
    this.waiting = undefined;
    wake?.();
  }

  /** Resolves at the next notify() or when `signal` aborts. */
  next(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        signal.removeEventListener('abort', done);
        if (this.waiting === done) this.waiting = undefined;
        resolve();
      };
      this.waiting = done;
      signal.addEventListener('abort', done, { once: true });
    });
  }
}

/** Pause before watching again after a watch ended or failed. */
const WATCH_RESTART_MS = 1000;

/**
 * Longest random pause of a waiter woken by a freed slot before it looks at the watched lock again.
 * Spread over it, the first waiters take the slot and the rest see it retaken without a request.
 */
export const HERD_SPREAD_MS = 1000;

/** Thrown inside a retried write when the DaemonSet changed under us. */
const retryable = (err: unknown): boolean => isConflict(err) || isInvalid(err);

export class DaemonSetLock implements Lock {
  /** When each holder's Node was last seen to exist (ms), for reclaim checks. */
  private readonly holderSeen = new Map<string, number>();
  /** First time this agent saw each unparsable value (ms). */
  private readonly firstSeenMalformed = new Map<string, number>();
  /** The DaemonSet as last read, written or watched: where waitForChange starts from. */
  private watched: V1DaemonSet | undefined;

  constructor(private readonly o: DaemonSetLockOptions) {}

  async acquire(metadata: LockMetadata, signal?: AbortSignal): Promise<AcquireResult> {
    let outcome: AcquireResult | undefined;
    try {
      await this.write(signal, async (state) => {
        const decision = await this.decideAcquire(state, metadata, signal);
        outcome = decision.result;
        return decision.entries;
      });
    } catch (err) {
      if (!retryable(err)) throw err;
      const reason = `lock still contended after ${this.o.attempts ?? 8} attempts: ${statusMessage(err)}`;
      this.o.log.warn('lock contended', { node: this.o.nodeId, reason });
      return { acquired: false, holders: [], reason };
    }
    if (outcome === undefined) throw new Error('lock acquire decided nothing');
    if (outcome.acquired)
      this.o.log.info('lock acquired', { node: this.o.nodeId, holder: outcome.holder.nodeID });
    return outcome;
  }

  async holding(signal?: AbortSignal): Promise<LockHolder | undefined> {
    const state = await this.read(signal);
    const ours = this.live(state.entries).find((e) => e.nodeID === this.o.nodeId);
    return ours === undefined ? undefined : toHolder(ours);
  }

  async update(metadata: LockMetadata, signal?: AbortSignal): Promise<void> {
    await this.write(signal, (state) => {
      const live = this.live(state.entries);
      const index = live.findIndex((e) => e.nodeID === this.o.nodeId);
      const ours = live[index];
      if (ours === undefined)
        throw new Error(`cannot update the lock: node ${this.o.nodeId} does not hold it`);
      live[index] = { ...ours, metadata: metadataObject(metadata) };
      return Promise.resolve(live);
    });
  }

  async release(signal?: AbortSignal): Promise<void> {
    const wrote = await this.write(signal, (state) => {
      const live = this.live(state.entries);
      if (state.malformed !== undefined || !live.some((e) => e.nodeID === this.o.nodeId)) {
        return Promise.resolve(undefined);
      }
      return Promise.resolve(live.filter((e) => e.nodeID !== this.o.nodeId));
    });
    if (wrote) this.o.log.info('lock released', { node: this.o.nodeId });
  }

  /**
   * Waits until the watched lock shows a slot this node could take: a slot freed or expired, an
   * unparsable lock outliving --lock-ttl, our own slot changed, or the DaemonSet deleted; or until
   * `timeoutMs`. Writes that leave every slot taken wake nobody. A freed slot wakes every waiter at
   * once, so each first pauses a random moment (up to HERD_SPREAD_MS) and looks at the watched state
   * again: whoever sees the slot already retaken goes back to waiting without a request.
   */
  async waitForChange(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const seen = this.watched ?? (await this.fetch(signal));
    const stop = new AbortController();
    const onAbort = (): void => {
      stop.abort(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const changes = new ChangeFeed();
    try {
      await Promise.race([
        this.o.clock.sleep(timeoutMs, stop.signal).catch(() => undefined),
        this.follow(seen, changes, stop.signal),
        this.untilTakeable(this.stateOf(seen), changes, stop.signal),
      ]);
    } finally {
      stop.abort();
      signal?.removeEventListener('abort', onAbort);
    }
    signal?.throwIfAborted();
  }

  /** Resolves once a change (or an expiry) lets this node try for a slot; see waitForChange. */
  private async untilTakeable(seen: LockState, changes: ChangeFeed, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.nextTrigger(changes, signal);
      const wake = this.wakeReason(seen, this.current());
      if (wake === undefined) continue;
      if (wake !== 'slot-open') return;
      await this.o.clock
        .sleep((this.o.random ?? Math.random)() * HERD_SPREAD_MS, signal)
        .catch(() => undefined);
      if (this.wakeReason(seen, this.current()) !== undefined) return;
      this.o.log.debug('lock slot retaken before we looked', { node: this.o.nodeId });
    }
  }

  /** The next change of the watched annotation, or the moment a slot of the current state expires. */
  private async nextTrigger(changes: ChangeFeed, signal: AbortSignal): Promise<void> {
    const inner = new AbortController();
    const stop = (): void => {
      inner.abort();
    };
    signal.addEventListener('abort', stop, { once: true });
    const expiresAt = this.nextExpiry(this.current());
    const waits = [changes.next(inner.signal)];
    if (expiresAt !== undefined) {
      const ms = expiresAt - this.o.clock.now().getTime();
      waits.push(this.o.clock.sleep(ms, inner.signal).catch(() => undefined));
    }
    try {
      await Promise.race(waits);
    } finally {
      inner.abort();
      signal.removeEventListener('abort', stop);
    }
  }

  /** Why a node that saw `seen` (and holds no slot) should try again now; undefined: not yet. */
  private wakeReason(seen: LockState, now: LockState): Wake | undefined {
    if (this.ownSlot(seen) !== this.ownSlot(now)) return 'own-slot-changed';
    if (now.malformed !== undefined) return now.malformedExpired === true ? 'slot-open' : undefined;
    return this.live(now.entries).length < this.o.concurrency ? 'slot-open' : undefined;
  }

  /** Our slot as stored, for comparison; undefined when we have none. */
  private ownSlot(state: LockState): string | undefined {
    const ours = state.entries.find((e) => e.nodeID === this.o.nodeId);
    return ours === undefined ? undefined : JSON.stringify(ours);
  }

  /** When (ms) the next live slot, or the unparsable annotation, expires; undefined: never. */
  private nextExpiry(state: LockState): number | undefined {
    if (state.malformedExpiresAt !== undefined) return state.malformedExpiresAt;
    const now = this.o.clock.now().getTime();
    const times = this.live(state.entries).flatMap((e) => {
      const ttlMs = e.ttlNs > 0 ? e.ttlNs / 1_000_000 : this.o.ttlMs;
      return e.createdMs === undefined || ttlMs <= 0 ? [] : [e.createdMs + ttlMs];
    });
    return times.length === 0 ? undefined : Math.max(now, Math.min(...times));
  }

  /** The lock as last seen (read, written or watched), judged now. */
  private current(): LockState {
    return this.stateOf(this.watched);
  }

  /**
   * Follows the DaemonSet from `seen` on, remembering every change and telling `changes` when the
   * annotation text changed. A watch that ends or fails (410 Gone, network) is followed by a fresh
   * read and, after a pause, a new watch. Resolves when the DaemonSet is deleted or `signal` aborts.
   */
  private async follow(seen: V1DaemonSet, changes: ChangeFeed, signal: AbortSignal): Promise<void> {
    let resourceVersion = seen.metadata?.resourceVersion ?? '';
    const observe = (ds: V1DaemonSet): void => {
      const before = this.watched?.metadata?.annotations?.[this.o.annotation];
      this.remember(ds);
      if (ds.metadata?.annotations?.[this.o.annotation] !== before) changes.notify();
    };
    while (!signal.aborted) {
      const outcome = await this.watchOnce(resourceVersion, observe, signal);
      if (outcome.deleted) return;
      const fresh = await this.fetch(signal).catch(() => undefined);
      if (fresh !== undefined) observe(fresh);
      resourceVersion = fresh?.metadata?.resourceVersion ?? outcome.resourceVersion;
      await this.o.clock.sleep(WATCH_RESTART_MS, signal).catch(() => undefined);
    }
  }

  /** One watch: until the DaemonSet is deleted, the stream ends, or it fails. */
  private async watchOnce(
    resourceVersion: string,
    observe: (ds: V1DaemonSet) => void,
    signal: AbortSignal,
  ): Promise<{ deleted: boolean; resourceVersion: string }> {
    const inner = new AbortController();
    const stop = (): void => {
      inner.abort();
    };
    signal.addEventListener('abort', stop, { once: true });
    const state = { deleted: false, resourceVersion };
    try {
      await this.o.kube.watchDaemonSet(
        this.o.namespace,
        this.o.name,
        (event) => {
          state.resourceVersion = event.object.metadata?.resourceVersion ?? state.resourceVersion;
          if (event.type === 'DELETED') {
            state.deleted = true;
            inner.abort();
          } else if (event.type !== 'BOOKMARK') observe(event.object);
        },
        { resourceVersion, signal: inner.signal },
      );
    } catch (err) {
      this.o.log.debug('lock watch failed', { error: statusMessage(err) });
    } finally {
      signal.removeEventListener('abort', stop);
    }
    return state;
  }

  /** The slots that count: not expired. */
  private live(entries: readonly LockEntry[]): LockEntry[] {
    const now = this.o.clock.now().getTime();
    return entries.filter((e) => !isExpired(e, this.o.ttlMs, now));
  }

  private async decideAcquire(
    state: LockState,
    metadata: LockMetadata,
    signal?: AbortSignal,
  ): Promise<{ result: AcquireResult; entries: LockEntry[] | undefined }> {
    if (state.malformed !== undefined && state.malformedExpired !== true) {
      const reason = `lock annotation ${this.o.annotation} cannot be parsed (treated as held): ${state.malformed}`;
      this.o.log.warn('lock annotation unparsable', { node: this.o.nodeId, reason });
      return { result: { acquired: false, holders: [UNPARSABLE_HOLDER], reason }, entries: undefined };
    }
    let live = this.live(state.entries);
    const ours = live.find((e) => e.nodeID === this.o.nodeId);
    if (ours !== undefined) return { result: { acquired: true, holder: toHolder(ours) }, entries: undefined };
    if (live.length >= this.o.concurrency) live = await this.withoutDeletedHolders(live, signal);
    if (live.length >= this.o.concurrency) {
      const holders = live.map((e) => e.nodeID);
      const reason = `all ${this.o.concurrency} lock slot(s) held by ${holders.join(', ')}`;
      return { result: { acquired: false, holders, reason }, entries: undefined };
    }
    const entry = newEntry(this.o.nodeId, metadata, this.o.clock.now(), this.o.ttlMs);
    return { result: { acquired: true, holder: toHolder(entry) }, entries: [...live, entry] };
  }

  /** Drops slots whose Node is gone (never kured's manual lock, which records no creation time). */
  private async withoutDeletedHolders(live: LockEntry[], signal?: AbortSignal): Promise<LockEntry[]> {
    const kept: LockEntry[] = [];
    for (const entry of live) {
      if (entry.createdMs !== undefined && (await this.nodeGone(entry.nodeID, signal))) {
        this.o.log.info('lock reclaimed from deleted node', { node: this.o.nodeId, holder: entry.nodeID });
        continue;
      }
      kept.push(entry);
    }
    return kept;
  }

  private async nodeGone(name: string, signal?: AbortSignal): Promise<boolean> {
    if (name === '') return false;
    const now = this.o.clock.now().getTime();
    const seenAt = this.holderSeen.get(name);
    if (seenAt !== undefined && now - seenAt < (this.o.holderCheckMs ?? 60_000)) return false;
    try {
      await this.o.kube.getNode(name, signal);
      this.holderSeen.set(name, now);
      return false;
    } catch (err) {
      if (isNotFound(err)) return true;
      throw err;
    }
  }

  /**
   * Read, decide, write guarded by resourceVersion; on 409/422 read again (bounded, jittered).
   * `decide` returns the live slots to store, or undefined for "no write". Expired slots are never
   * passed to it, so every write prunes them.
   */
  private async write(
    signal: AbortSignal | undefined,
    decide: (state: LockState) => Promise<LockEntry[] | undefined>,
  ): Promise<boolean> {
    return retry(
      async () => {
        const state = await this.read(signal);
        const entries = await decide(state);
        if (entries === undefined) return false;
        const text = this.format(entries);
        if (text === state.text) return false;
        const ds = await this.o.kube.mergePatchDaemonSet(
          this.o.namespace,
          this.o.name,
          {
            metadata: {
              resourceVersion: state.resourceVersion,
              annotations: { [this.o.annotation]: text ?? null },
            },
          },
          signal,
        );
        this.remember(ds);
        return true;
      },
      {
        attempts: this.o.attempts ?? 8,
        baseMs: 50,
        maxMs: 2000,
        retryOn: retryable,
        clock: this.o.clock,
        random: this.o.random,
        signal,
        onRetry: (err, attempt, delayMs) => {
          this.o.log.debug('lock write conflict, retrying', { attempt, delayMs, error: statusMessage(err) });
        },
      },
    );
  }

  /** kured's form for our concurrency; undefined (delete the annotation) for an empty single lock. */
  private format(entries: readonly LockEntry[]): string | undefined {
    if (this.o.concurrency > 1) return formatMulti(this.o.concurrency, entries);
    const [only, ...rest] = entries;
    if (only === undefined) return undefined;
    return rest.length === 0 ? formatSingle(only) : formatMulti(entries.length, entries);
  }

  private remember(ds: V1DaemonSet): void {
    this.watched = ds;
  }

  private async read(signal?: AbortSignal): Promise<LockState> {
    return this.stateOf(await this.fetch(signal));
  }

  /** GETs the DaemonSet (and remembers it). */
  private async fetch(signal?: AbortSignal): Promise<V1DaemonSet> {
    const ds = await this.o.kube.getDaemonSet(this.o.namespace, this.o.name, signal);
    this.remember(ds);
    return ds;
  }

  /** What the DaemonSet tells about the lock, judged now. */
  private stateOf(ds: V1DaemonSet | undefined): LockState {
    if (ds === undefined) return { resourceVersion: '', text: undefined, entries: [] };
    const resourceVersion = ds.metadata?.resourceVersion ?? '';
    const text = ds.metadata?.annotations?.[this.o.annotation];
    if (text === undefined) return { resourceVersion, text, entries: [] };
    try {
      return { resourceVersion, text, entries: entriesOf(parseLockAnnotation(text)) };
    } catch (err) {
      if (!(err instanceof LockFormatError)) throw err;
      const expiresAt = this.malformedExpiresAt(ds, text);
      return {
        resourceVersion,
        text,
        entries: [],
        malformed: err.message,
        malformedExpired: expiresAt !== undefined && this.o.clock.now().getTime() >= expiresAt,
        malformedExpiresAt: expiresAt,
      };
    }
  }

  private malformedExpiresAt(ds: V1DaemonSet, text: string): number | undefined {
    const now = this.o.clock.now().getTime();
    const firstSeen = this.firstSeenMalformed.get(text) ?? now;
    this.firstSeenMalformed.set(text, firstSeen);
    if (this.o.ttlMs <= 0) return undefined;
    const changes = (ds.metadata?.managedFields ?? []).map((f) =>
      f.time === undefined ? NaN : new Date(f.time).getTime(),
    );
    const lastChange = Math.max(firstSeen, ...changes.filter((t) => !Number.isNaN(t)));
    return lastChange + this.o.ttlMs;
  }
}
