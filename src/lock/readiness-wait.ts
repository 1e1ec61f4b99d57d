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

/**
 * Resolves once one of `names` (the first READINESS_WATCHED; at least one) is back in service (after
 * a spread of up to HERD_SPREAD_MS), or when `signal` aborts; never on its own otherwise.
 */
async function untilBackInService(
  o: Pick<DaemonSetLockOptions, 'kube' | 'clock' | 'log' | 'random' | 'silenceMs'>,
  names: readonly string[],
  signal: AbortSignal,
): Promise<void> {
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
  if (signal.aborted) return;
  await o.clock.sleep(random() * HERD_SPREAD_MS, signal).catch(() => undefined);
}

/**
 * `wait`, ended early when one of `names` is back in service (none named: `wait` alone). Rejects
 * with the abort when `signal` aborts.
 */
export async function orBackInService(
  o: Pick<DaemonSetLockOptions, 'kube' | 'clock' | 'log' | 'random' | 'silenceMs'>,
  names: readonly string[],
  signal: AbortSignal | undefined,
  wait: (signal: AbortSignal | undefined) => Promise<void>,
): Promise<void> {
  if (names.length === 0) return wait(signal);
  const stop = new AbortController();
  const both = signal === undefined ? stop.signal : AbortSignal.any([signal, stop.signal]);
  try {
    await Promise.race([wait(both), untilBackInService(o, names, both)]);
  } finally {
    stop.abort();
  }
  signal?.throwIfAborted();
}
