// The drainer as the integration tests drive it: the production KubeDrainer on their client, with
// real timers, polls every 20 ms, no deadline, each pod's own grace period and a short retry of
// refused evictions; a test states only what it changes.
import { SystemClock } from '../../src/clock/clock.js';
import { KubeDrainer, type KubeDrainerOptions } from '../../src/drain/kube-drainer.js';
import type { Kube } from '../../src/kube/kube.js';
import { MemoryLogger } from '../../src/log/logger.js';

/** A KubeDrainer of `nodeId` on `kube`; `o` overrides the test defaults. */
export function testDrainer(kube: Kube, nodeId: string, o: Partial<KubeDrainerOptions> = {}): KubeDrainer {
  return new KubeDrainer({
    kube,
    nodeId,
    clock: new SystemClock(),
    log: new MemoryLogger(),
    timeoutMs: 0,
    gracePeriodSeconds: -1,
    podSelector: [],
    skipWaitForDeleteTimeoutSeconds: 0,
    evictionRetryDelayMs: 50,
    pollMs: 20,
    ...o,
  });
}
