// Short-lived blocking pods that keep arriving (`simulate --blocking-churn RATE,DURATION`): batch
// jobs matching the agents' --blocking-pod-selector, created unbound at a Poisson rate and placed by
// the simulated scheduler (scheduler.ts: it avoids cordoned nodes and prefers nodes without a
// PreferNoSchedule taint, as kube-scheduler's TaintToleration scoring does). Each runs DURATION
// after it is placed, then finishes and is removed. It is the workload the early taint exists for: a
// node that needs a reboot but is blocked by such pods keeps receiving new ones unless it is tainted.
import { BATCH_NAMESPACE, BLOCKING_LABEL } from './cluster-spec.js';
import type { SimPod, SimServer } from './objects.js';
import type { Random } from './random.js';
import type { VirtualTime } from './virtual-time.js';

import type { ChurnSpec } from './cluster-spec.js';

export type { ChurnSpec } from './cluster-spec.js';

const HOUR = 3_600_000;

/** The name prefix of churn jobs. */
const CHURN_PREFIX = 'churn-';

/** Milliseconds until the next arrival of a Poisson process of `perHour` arrivals per hour. */
export function nextArrivalMs(perHour: number, random: Random): number {
  return (-Math.log(1 - random()) / perHour) * HOUR;
}

export function churnJob(n: number): SimPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${CHURN_PREFIX}${n}`,
      namespace: BATCH_NAMESPACE,
      labels: { [BLOCKING_LABEL]: 'true' },
      ownerReferences: [
        { apiVersion: 'batch/v1', kind: 'Job', name: `${CHURN_PREFIX}${n}`, controller: true },
      ],
    },
    spec: { containers: [{ name: 'job', image: 'registry.example/job:1' }] },
  };
}

export class BlockingChurn {
  /** Jobs created so far. */
  created = 0;
  private running = true;

  constructor(
    private readonly server: SimServer,
    private readonly time: VirtualTime,
    private readonly spec: ChurnSpec,
    private readonly random: Random,
  ) {}

  start(): void {
    if (this.spec.perHour <= 0 || this.spec.durationMs <= 0) return;
    const arrive = (): void => {
      if (!this.running) return;
      this.server.create<SimPod>('pods', churnJob(++this.created));
      this.time.after(nextArrivalMs(this.spec.perHour, this.random), arrive);
    };
    this.time.after(nextArrivalMs(this.spec.perHour, this.random), arrive);
  }

  stop(): void {
    this.running = false;
  }

  /** A churn job was placed: it finishes `durationMs` later (after its start) and is removed. */
  placed(pod: SimPod, startMs: number): void {
    if (!pod.metadata.name.startsWith(CHURN_PREFIX)) return;
    const { namespace, name, uid } = pod.metadata;
    this.time.after(startMs + this.spec.durationMs, () => {
      const current = this.server.get<SimPod>('pods', namespace, name);
      if (current && current.metadata.uid === uid && !current.metadata.deletionTimestamp)
        this.server.delete('pods', namespace, name);
    });
  }
}
