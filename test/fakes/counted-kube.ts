// The real client, counting on our side of the wire: the calls it made (so that "no request" needs
// no wait for a request that might still be on its way) and the changes its DaemonSet watches
// delivered, counted after the watcher's own handler ran (the sync point for "the waiter has seen
// this write": after it, a waiter that was going to wake has been told).
import type { Kube } from '../../src/kube/kube.js';
import type { FakeApiServer } from '../../src/sim/fake-api-server.js';
import { waitFor } from './wait-for.js';

export interface KubeCounts {
  /** Calls of any method of the client. */
  calls: number;
  /** Changes (not bookmarks) that the client's DaemonSet watches delivered. */
  changes: number;
}

export function countedKube<K extends Kube>(real: K): { kube: K; counts: KubeCounts } {
  const counts: KubeCounts = { calls: 0, changes: 0 };
  const kube = new Proxy(real, {
    get(target, prop, receiver): unknown {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      if (prop === 'watchDaemonSet') {
        return (...args: Parameters<Kube['watchDaemonSet']>): Promise<void> => {
          counts.calls++;
          const [namespace, name, onEvent, options] = args;
          const counted: typeof onEvent = (event) => {
            onEvent(event);
            if (event.type !== 'BOOKMARK') counts.changes++;
          };
          return target.watchDaemonSet(namespace, name, counted, options);
        };
      }
      return (...args: unknown[]): unknown => {
        counts.calls++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { kube, counts };
}

/**
 * Runs `write` (writes of the lock into the server, or an agent's acquisition or release) and
 * resolves once each of `watching` waiters' watches has delivered each DaemonSet write it made.
 */
export async function seenBy(
  server: FakeApiServer,
  counts: KubeCounts,
  watching: number,
  write: () => unknown,
): Promise<void> {
  const from = counts.changes;
  let writes = 0;
  const unsubscribe = server.onWrite((e) => {
    if (e.resource === 'daemonsets') writes++;
  });
  try {
    await write();
  } finally {
    unsubscribe();
  }
  await waitFor(
    () => counts.changes >= from + writes * watching,
    `${writes} lock writes seen by ${watching} waiters`,
  );
}
