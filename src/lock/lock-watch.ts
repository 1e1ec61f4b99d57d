// Following the lock's DaemonSet with a watch, as client-go's reflector does with ListWatch: the
// latest object at all times, a fresh read and a new watch after each ends, and back-off when they
// fail, so that hundreds of waiting agents do not hammer an API server that is already in trouble.
import type { Clock } from '../clock/clock.js';
import { isNotFound, statusMessage } from '../kube/errors.js';
import type { Kube, V1DaemonSet } from '../kube/kube.js';
import { backoffMs } from '../kube/retry.js';
import type { Logger } from '../log/logger.js';

/** First pause after a failed watch or read; doubles per failure in a row, up to WATCH_MAX_BACKOFF_MS. */
export const WATCH_BASE_BACKOFF_MS = 1_000;
export const WATCH_MAX_BACKOFF_MS = 30_000;
/** A watch that lasted this long (or delivered a change) was healthy: the back-off starts over. */
export const WATCH_HEALTHY_MS = 60_000;

export interface LockWatchOptions {
  kube: Kube;
  namespace: string;
  name: string;
  clock: Clock;
  log: Logger;
  /** [0, 1) for the back-off jitter. */
  random: () => number;
}

/** Why follow() returned. */
export type FollowEnd = 'deleted' | 'stopped';

/** Follows one DaemonSet; see the file comment. */
export class LockWatch {
  /** Failed watches or reads in a row (sets the back-off). */
  private failures = 0;

  constructor(private readonly o: LockWatchOptions) {}

  /**
   * Calls `observe` with every state of the DaemonSet from `from` on: each watch event and, after
   * each watch ends, a fresh read. Resolves when the DaemonSet is deleted or `signal` aborts; never
   * rejects. Watch restarts back off exponentially with jitter (1 s to 30 s) while they keep failing.
   */
  async follow(
    from: V1DaemonSet,
    observe: (ds: V1DaemonSet) => void,
    signal: AbortSignal,
  ): Promise<FollowEnd> {
    let resourceVersion = from.metadata?.resourceVersion ?? '';
    while (!signal.aborted) {
      const next = await this.round(resourceVersion, observe, signal);
      if (next === 'deleted') return 'deleted';
      resourceVersion = next;
      await this.pause(signal);
    }
    return 'stopped';
  }

  /**
   * One watch, then a fresh read: 'deleted', or the resourceVersion to watch from next. The round
   * counts as failed (for the back-off) unless the watch delivered changes or lasted, and the read
   * worked.
   */
  private async round(
    resourceVersion: string,
    observe: (ds: V1DaemonSet) => void,
    signal: AbortSignal,
  ): Promise<string> {
    const started = this.o.clock.now().getTime();
    const run = await this.watchOnce(resourceVersion, observe, signal);
    if (run.deleted) return 'deleted';
    if (signal.aborted) return run.resourceVersion;
    const healthy = this.healthy(run, started);
    const fresh = await this.read(signal);
    if (fresh === 'gone') return 'deleted';
    this.failures = healthy && fresh !== undefined ? 0 : this.failures + 1;
    if (fresh === undefined) return run.resourceVersion;
    observe(fresh);
    return fresh.metadata?.resourceVersion ?? run.resourceVersion;
  }

  /** A watch that did not fail and delivered changes or lasted WATCH_HEALTHY_MS was healthy. */
  private healthy(run: { failed: boolean; changes: number }, started: number): boolean {
    const lasted = this.o.clock.now().getTime() - started >= WATCH_HEALTHY_MS;
    return !run.failed && (run.changes > 0 || lasted);
  }

  /** The pause before the next watch: 0 after a healthy one, else the back-off for the failures so far. */
  nextPauseMs(): number {
    if (this.failures === 0) return 0;
    return backoffMs(this.failures, WATCH_BASE_BACKOFF_MS, WATCH_MAX_BACKOFF_MS, this.o.random);
  }

  private async pause(signal: AbortSignal): Promise<void> {
    const ms = this.nextPauseMs();
    if (ms > 0) await this.o.clock.sleep(ms, signal).catch(() => undefined);
  }

  /** GETs the DaemonSet; 'gone' when it no longer exists, undefined when the read failed. */
  private async read(signal: AbortSignal): Promise<V1DaemonSet | 'gone' | undefined> {
    try {
      return await this.o.kube.getDaemonSet(this.o.namespace, this.o.name, signal);
    } catch (err) {
      if (isNotFound(err)) return 'gone';
      if (!signal.aborted) this.o.log.debug('lock read failed', { error: statusMessage(err) });
      return undefined;
    }
  }

  /** One watch: until the DaemonSet is deleted, the stream ends, or it fails. */
  private async watchOnce(
    resourceVersion: string,
    observe: (ds: V1DaemonSet) => void,
    signal: AbortSignal,
  ): Promise<{ deleted: boolean; failed: boolean; changes: number; resourceVersion: string }> {
    const stop = new AbortController();
    const both = AbortSignal.any([signal, stop.signal]);
    const run = { deleted: false, failed: false, changes: 0, resourceVersion };
    try {
      await this.o.kube.watchDaemonSet(
        this.o.namespace,
        this.o.name,
        (event) => {
          run.resourceVersion = event.object.metadata?.resourceVersion ?? run.resourceVersion;
          if (event.type === 'DELETED') {
            run.deleted = true;
            stop.abort();
          } else if (event.type === 'ERROR') {
            run.failed = true; // e.g. 410 Expired: read again and watch from there
            stop.abort();
          } else if (event.type !== 'BOOKMARK') {
            run.changes++;
            observe(event.object);
          }
        },
        { resourceVersion, signal: both },
      );
    } catch (err) {
      run.failed = true;
      if (!signal.aborted) this.o.log.debug('lock watch failed', { error: statusMessage(err) });
    }
    return run;
  }
}
