// The blocking-churn workload (src/sim/blocking-churn.ts): Poisson arrivals, jobs that match the
// blocking selector, and where the simulated scheduler puts them.
import { describe, expect, it } from '@jest/globals';
import { churnJob, nextArrivalMs } from '../../src/sim/blocking-churn.js';
import { BLOCKING_LABEL } from '../../src/sim/cluster-spec.js';
import { forkRandom } from '../../src/sim/random.js';

describe('blocking churn', () => {
  it('arrives at the asked rate on average (a Poisson process: exponential gaps)', () => {
    const random = forkRandom(7, 'churn');
    const gaps = Array.from({ length: 20_000 }, () => nextArrivalMs(30, random));
    const mean = gaps.reduce((a, b) => a + b, 0) / gaps.length;
    expect(mean / 120_000).toBeGreaterThan(0.97); // 30 per hour = one every 2 minutes
    expect(mean / 120_000).toBeLessThan(1.03);
    const short = gaps.filter((g) => g < 120_000).length / gaps.length;
    expect(short).toBeGreaterThan(0.6); // 1 - 1/e of the gaps are shorter than the mean
    expect(short).toBeLessThan(0.66);
  });

  it('creates unbound Job pods that match the blocking selector', () => {
    const job = churnJob(3);
    expect(job.metadata.labels?.[BLOCKING_LABEL]).toBe('true');
    expect(job.spec.nodeName).toBeUndefined();
    expect(job.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'Job', controller: true });
  });
});
