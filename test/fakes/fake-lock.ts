// An in-memory lock table shared by several FakeLocks: the cluster's lock annotation, in miniature.
import type { Clock } from '../../src/clock/clock.js';
import type { AcquireResult, Lock, LockHolder, LockMetadata, SlotProof } from '../../src/lock/lock.js';

export class FakeLockTable {
  readonly slots = new Map<string, LockHolder>();
  /** Most slots ever held at once. */
  maxHeld = 0;
  /** Lease renewals written. */
  renewals = 0;
  private waiters: (() => void)[] = [];

  constructor(
    public concurrency: number,
    readonly clock: Clock,
  ) {}

  /** Another node takes a slot now (no TTL, its node was schedulable). */
  takeFor(nodeID: string): void {
    this.set(nodeID, { nodeID, created: this.clock.now(), ttlMs: 0, metadata: { unschedulable: false } });
  }

  /**
   * Another node tries for a slot as DaemonSetLock would: counting the slots and the nodes in a
   * reboot cycle (`inCycle`) that hold none. True when it got one.
   */
  tryTake(nodeID: string, inCycle: readonly string[]): boolean {
    const phantoms = inCycle.filter((n) => n !== nodeID && !this.slots.has(n));
    if (this.slots.has(nodeID) || this.slots.size + phantoms.length >= this.concurrency) return false;
    this.takeFor(nodeID);
    return true;
  }

  holders(): string[] {
    return [...this.slots.keys()];
  }

  set(nodeID: string, holder: LockHolder | undefined): void {
    if (holder) this.slots.set(nodeID, holder);
    else this.slots.delete(nodeID);
    this.maxHeld = Math.max(this.maxHeld, this.slots.size);
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  onChange(cb: () => void): () => void {
    this.waiters.push(cb);
    return () => {
      this.waiters = this.waiters.filter((w) => w !== cb);
    };
  }
}

/** One node's view of the table. `before` runs before every call (crash injection). */
export class FakeLock implements Lock {
  constructor(
    private readonly table: FakeLockTable,
    private readonly nodeID: string,
    private readonly before: (op: string) => void = () => undefined,
  ) {}

  /** As DaemonSetLock: our entry counts unchanged only with proof; else it is asked for anew. */
  acquire(metadata: LockMetadata, _signal?: AbortSignal, proof?: SlotProof): Promise<AcquireResult> {
    this.before('lock.acquire');
    const mine = this.table.slots.get(this.nodeID);
    if (mine && proof?.inCycle === true) return Promise.resolve({ acquired: true, holder: mine });
    const others = this.table.holders().filter((n) => n !== this.nodeID);
    if (others.length >= this.table.concurrency) {
      if (mine) this.table.set(this.nodeID, undefined);
      return Promise.resolve({
        acquired: false,
        holders: others,
        reason: `lock held by ${others.join(', ')}`,
      });
    }
    const holder: LockHolder = {
      nodeID: this.nodeID,
      created: this.table.clock.now(),
      ttlMs: 0,
      metadata: { ...metadata },
    };
    this.table.set(this.nodeID, holder);
    return Promise.resolve({ acquired: true, holder });
  }

  holding(): Promise<LockHolder | undefined> {
    this.before('lock.holding');
    const mine = this.table.slots.get(this.nodeID);
    return Promise.resolve(mine ? { ...mine, metadata: { ...mine.metadata } } : undefined);
  }

  wouldAcquire(): Promise<AcquireResult> {
    this.before('lock.wouldAcquire');
    const mine = this.table.slots.get(this.nodeID);
    if (mine) return Promise.resolve({ acquired: true, holder: mine });
    if (this.table.slots.size >= this.table.concurrency) {
      const holders = this.table.holders();
      return Promise.resolve({ acquired: false, holders, reason: `lock held by ${holders.join(', ')}` });
    }
    return Promise.resolve({
      acquired: true,
      holder: {
        nodeID: this.nodeID,
        created: this.table.clock.now(),
        ttlMs: 0,
        metadata: { unschedulable: false },
      },
    });
  }

  renew(): Promise<boolean> {
    this.before('lock.renew');
    const mine = this.table.slots.get(this.nodeID);
    if (!mine) return Promise.resolve(false);
    this.table.set(this.nodeID, { ...mine, created: this.table.clock.now() });
    this.table.renewals++;
    return Promise.resolve(true);
  }

  release(): Promise<void> {
    this.before('lock.release');
    this.table.set(this.nodeID, undefined);
    return Promise.resolve();
  }

  waitForChange(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    const inner = new AbortController();
    const onAbort = (): void => {
      inner.abort(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const cancel = this.table.onChange(() => {
      inner.abort('changed');
    });
    return this.table.clock.sleep(timeoutMs, inner.signal).then(
      () => {
        cancel();
        signal?.removeEventListener('abort', onAbort);
      },
      (err: unknown) => {
        cancel();
        signal?.removeEventListener('abort', onAbort);
        if (signal?.aborted) throw err;
      },
    );
  }
}
