// The wait of a node refused a slot by unavailable nodes (--count-unavailable: NotReady, cordoned by
// someone else) for what would change that: one of them coming back. The lock does not change when
// it does, and the fleet recheck (FLEET_RECHECK_MS) lists every Node only every few minutes; so the
// waiter follows those few Nodes alone (a watch of one object each, at most READINESS_WATCHED) and
// tries again when one of them is Ready and schedulable again or gone (issue 55: woken by what
// changed the room, not by a turn someone rewrote). The wakers are spread over HERD_SPREAD_MS.
import type { V1Node } from '../kube/kube.js';
import { nodeListWatch } from '../kube/list-watch.js';
import { rowOfNode } from '../kube/node-table.js';
import { Reflector, latest } from '../kube/reflector.js';
import { HERD_SPREAD_MS, type DaemonSetLockOptions } from './lock-state.js';

/** The most unavailable nodes one waiter follows (the first the refusal names). */
const READINESS_WATCHED = 3;

/** Does `node` no longer take a slot as unavailable: Ready and schedulable, or gone? */
function backInService(node: V1Node | undefined): boolean {
  return node === undefined || (rowOfNode(node).ready && node.spec?.unschedulable !== true);
}

type ReadinessOptions = Pick<DaemonSetLockOptions, 'kube' | 'clock' | 'log' | 'random' | 'silenceMs'>;

/**
 * After a wake by a node back in service that did not let this node go (it went down again: a
 * kubelet flapping, or its token lying), the next wait starts following only this long later,
 * doubling up to the fleet recheck: one flapping Node must not make every waiter read the fleet at
 * its pace.
 */
const BACKOFF_FIRST_MS = 10_000;

/** Read through a call so that the compiler does not narrow it across awaits. */
function aborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

/**
 * Resolves to true once one of `names` (the first READINESS_WATCHED; at least one) is back in service
 * (after a spread of up to HERD_SPREAD_MS), following them from `afterMs` on; to false when `signal`
 * aborts first; never on its own otherwise.
 */
async function untilBackInService(
  o: ReadinessOptions,
  names: readonly string[],
  afterMs: number,
  signal: AbortSignal,
): Promise<boolean> {
  if (afterMs > 0) await o.clock.sleep(afterMs, signal).catch(() => undefined);
  if (aborted(signal)) return false;
  const followed = names.slice(0, READINESS_WATCHED);
  const back = new AbortController();
  const both = AbortSignal.any([signal, back.signal]);
  const random = o.random ?? Math.random;
  await Promise.race(
    followed.map((name) => {
      const reflector = new Reflector(nodeListWatch(o.kube, name), {
        clock: o.clock,
        log: o.log,
        random,
        ...(o.silenceMs === undefined ? {} : { silenceMs: o.silenceMs }),
      });
      const seen = latest<V1Node>((node) => {
        if (backInService(node)) back.abort();
      });
      return reflector.run(seen, both).catch(() => undefined);
    }),
  );
  if (aborted(signal)) return false;
  await o.clock.sleep(random() * HERD_SPREAD_MS, signal).catch(() => undefined);
  return true;
}

/**
 * One waiter's follow of the unavailable nodes that fill the slots, wait after wait: it remembers how
 * many of its wakes in a row came from them (the acquisition after each still refused), and backs
 * off accordingly.
 */
export class ReadinessWait {
  private streak = 0;

  constructor(
    private readonly o: ReadinessOptions,
    private readonly maxBackoffMs: number,
  ) {}

  /**
   * `wait`, ended early when one of `names` is back in service (none named: `wait` alone, and the
   * streak ends). Rejects with the abort when `signal` aborts.
   */
  async around(
    names: readonly string[],
    signal: AbortSignal | undefined,
    wait: (signal: AbortSignal | undefined) => Promise<void>,
  ): Promise<void> {
    if (names.length === 0) {
      this.streak = 0;
      return wait(signal);
    }
    const afterMs =
      this.streak === 0 ? 0 : Math.min(this.maxBackoffMs, BACKOFF_FIRST_MS * 2 ** (this.streak - 1));
    const stop = new AbortController();
    const both = signal === undefined ? stop.signal : AbortSignal.any([signal, stop.signal]);
    try {
      const back = await Promise.race([
        wait(both).then(() => false),
        untilBackInService(this.o, names, afterMs, both),
      ]);
      this.streak = back ? this.streak + 1 : 0;
    } finally {
      stop.abort();
    }
    signal?.throwIfAborted();
  }

  /** This node took a slot: the next refusal starts afresh. */
  reset(): void {
    this.streak = 0;
  }
}
