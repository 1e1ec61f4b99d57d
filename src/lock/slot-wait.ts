// The wait for a slot: a waiting node follows the lock's DaemonSet (a reflector) and wakes only
// when a slot could be its own, not at every write. A freed slot wakes every waiter at once, so each
// first pauses a random moment (up to HERD_SPREAD_MS) and looks at the watched state again: whoever
// sees the slot already retaken goes back to waiting without a request. (The coordinated queue does
// not wait here: its waiters follow their own Node for their turn, turn-gate.ts.)
import type { V1DaemonSet } from '../kube/kube.js';
import { daemonSetListWatch } from '../kube/list-watch.js';
import { Reflector, latest } from '../kube/reflector.js';
import { ChangeFeed } from './change-feed.js';
import { HERD_SPREAD_MS, type DaemonSetLockOptions, type LockState } from './lock-state.js';
import type { LockView } from './lock-view.js';

/** Why a waiting node should try for a slot again. */
type Wake = 'slot-open' | 'own-slot-changed';

/** What the wait needs of the lock it waits on (DaemonSetLock). */
export interface WaitedLock {
  /** The DaemonSet as last read, written or watched; read when never seen. */
  lastSeen(signal?: AbortSignal): Promise<V1DaemonSet>;
  /** Takes in a watched DaemonSet; true when its lock annotation differs from the last seen. */
  see(ds: V1DaemonSet): boolean;
  /** The lock as last seen, judged now. */
  current(): LockState;
  /** A DaemonSet's lock, judged now. */
  stateOf(ds: V1DaemonSet): LockState;
  /** Our group as the last acquisition gave it: a waiter wakes only for a slot its group may take. */
  group(): string | undefined;
}

export class SlotWait {
  constructor(
    private readonly o: DaemonSetLockOptions,
    private readonly lock: WaitedLock,
    private readonly view: LockView,
  ) {}

  /**
   * Waits until the watched lock shows a slot this node could take: a slot freed or expired, an
   * unparsable lock outliving --lock-ttl, our own slot changed, or the DaemonSet deleted; or until
   * `timeoutMs`. Writes that leave every slot taken wake nobody.
   */
  async forChange(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const seen = await this.lock.lastSeen(signal);
    const stop = new AbortController();
    const both = signal === undefined ? stop.signal : AbortSignal.any([signal, stop.signal]);
    const changes = new ChangeFeed();
    // a fresh read after each watch, as the DaemonSet is one small object; deleted: try again now
    const reflector = new Reflector(daemonSetListWatch(this.o.kube, this.o.namespace, this.o.name), {
      clock: this.o.clock,
      log: this.o.log,
      random: this.o.random ?? Math.random,
      relistEachRound: true,
      ...(this.o.silenceMs === undefined ? {} : { silenceMs: this.o.silenceMs }),
    });
    const observe = latest<V1DaemonSet>((ds) => {
      if (ds === undefined) stop.abort();
      else if (this.lock.see(ds)) changes.notify();
    });
    const from = { items: [seen], resourceVersion: seen.metadata?.resourceVersion ?? '' };
    try {
      await Promise.race([
        this.o.clock.sleep(timeoutMs, both).catch(() => undefined),
        reflector.run(observe, both, { from }),
        this.untilTakeable(this.lock.stateOf(seen), changes, both),
      ]);
    } finally {
      stop.abort();
    }
    signal?.throwIfAborted();
  }

  /** Resolves once a change (or an expiry) lets this node try for a slot; see forChange. */
  private async untilTakeable(seen: LockState, changes: ChangeFeed, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.nextTrigger(changes, signal);
      const wake = this.wakeReason(seen);
      if (wake === undefined) continue;
      if (wake !== 'slot-open') return;
      await this.o.clock
        .sleep((this.o.random ?? Math.random)() * HERD_SPREAD_MS, signal)
        .catch(() => undefined);
      const still = this.wakeReason(seen);
      if (still === undefined) {
        this.o.log.debug('lock slot retaken before we looked', { node: this.o.nodeId });
        continue;
      }
      return;
    }
  }

  /** The next change of the watched annotation, or the moment a slot of the current state expires. */
  private async nextTrigger(changes: ChangeFeed, signal: AbortSignal): Promise<void> {
    const expiresAt = this.view.nextExpiry(this.lock.current());
    const untilExpiry = expiresAt === undefined ? undefined : expiresAt - this.view.nowMs();
    await changes.nextWithin(untilExpiry, this.o.clock, signal);
  }

  /** Why a node that saw `seen` (and holds no slot) should try again now; undefined: not yet. */
  private wakeReason(seen: LockState): Wake | undefined {
    const now = this.lock.current();
    if (this.view.ownSlot(seen) !== this.view.ownSlot(now)) return 'own-slot-changed';
    return this.view.hasRoom(now, this.lock.group()) ? 'slot-open' : undefined;
  }
}
