// The fair queue at the lock (wait-queue.ts says who is first): for a free slot, which older waiter
// this node lets take it, and for how long. The verdict is kept per lock state (the annotation's
// text) so a waiter asks the queue once per hand-off; past HANDOFF_GRACE_MS an older waiter that has
// not come (its agent gone) is passed over, and the queue is not asked again for that hand-off.
import type { Clock } from '../clock/clock.js';
import { monotonicMs } from '../clock/clock.js';
import type { Logger } from '../log/logger.js';
import { errorText } from '../text/error-text.js';
import { HANDOFF_GRACE_MS } from './lock-state.js';
import type { WaitQueue } from './wait-queue.js';

export interface HandOffOptions {
  queue: WaitQueue | undefined;
  nodeId: string;
  clock: Clock;
  log: Logger;
  /** Default HANDOFF_GRACE_MS. */
  graceMs?: number;
}

export class HandOff {
  /**
   * The queue's verdict for the lock while it reads `text`: the older waiter this node lets go first
   * (undefined: this node goes), and since when (monotonic ms). Kept for the grace, so that the
   * head, woken for the slot and then trying for it, lists the nodes once.
   */
  private verdict: { head: string | undefined; since: number; text: string | undefined } | undefined;

  constructor(private readonly o: HandOffOptions) {}

  get graceMs(): number {
    return this.o.graceMs ?? HANDOFF_GRACE_MS;
  }

  /** A new lock state is a new hand-off: the queue is asked again. */
  reset(): void {
    this.verdict = undefined;
  }

  /** When this node began letting an older waiter go first (monotonic ms), if it does. */
  get deferredSince(): number | undefined {
    return this.verdict?.head === undefined ? undefined : this.verdict.since;
  }

  /**
   * The node that goes first for a free slot while the lock reads `text`, within the grace;
   * undefined = this node goes (also when the queue cannot be read: a reboot must not wait on it).
   */
  async head(
    text: string | undefined,
    canTake: (group: string | undefined) => boolean,
    signal?: AbortSignal,
  ): Promise<string | undefined> {
    const queue = this.o.queue;
    if (queue === undefined) return undefined;
    const now = monotonicMs(this.o.clock);
    const known = this.verdict?.text === text ? this.verdict : undefined;
    if (known !== undefined && now - known.since < this.graceMs) return known.head;
    const asked = await this.ask(queue, canTake, signal);
    // the same head after its grace: it does not come (gone, or stuck): we go
    const head = asked !== undefined && asked === known?.head ? undefined : asked;
    this.verdict = { head, since: now, text };
    return head;
  }

  private async ask(
    queue: WaitQueue,
    canTake: (group: string | undefined) => boolean,
    signal?: AbortSignal,
  ): Promise<string | undefined> {
    try {
      return (await queue.ahead(canTake, signal))?.node;
    } catch (err) {
      if (signal?.aborted === true) throw err;
      this.o.log.debug('cannot read the wait queue', { node: this.o.nodeId, error: errorText(err) });
      return undefined;
    }
  }
}
