// Out of the load balancers before the drain (--exclude-from-lb): the label came with the cycle
// record (cycle-marks.ts); here the agent waits --lb-drain-wait from it, when the cluster has a
// Service of type LoadBalancer or cannot say. The wait runs from the time in the record, so an agent
// restarted mid-wait waits only what remains, and a drain again after it does not wait again.
import { lbWaitBeforeAsking, lbWaitGiven } from '../../drain/load-balancers.js';
import type { CycleRecord } from '../../node/cycle.js';
import type { Pass } from './pass.js';

/** The wait decided (0 = none), with its reason: tests assert it, the log and status say it. */
export interface LbWaitDecision {
  waitMs: number;
  reason: string;
}

/** Decides the wait before the drain and waits it (status draining, with the reason). */
export async function leaveLoadBalancers(pass: Pass, record: CycleRecord): Promise<LbWaitDecision> {
  const { clock, logger, loadBalancers } = pass.deps;
  const labelledAtMs = record.lbExcludedAt === undefined ? undefined : Date.parse(record.lbExcludedAt);
  const before = lbWaitBeforeAsking({
    excludeFromLb: pass.config.excludeFromLb,
    waitMs: pass.config.lbDrainWaitMs,
    labelledAtMs: Number.isNaN(labelledAtMs) ? clock.now().getTime() : labelledAtMs,
    nowMs: clock.now().getTime(),
  });
  const decision =
    'ask' in before ? lbWaitGiven(await loadBalancers.presence(pass.signal), before.remainingMs) : before;
  logger.info('load balancer wait', {
    node: pass.config.nodeId,
    waitMs: decision.waitMs,
    reason: decision.reason,
  });
  if (decision.waitMs > 0) {
    await pass.env.progress.report(
      { kind: 'draining', reason: `out of the load balancers: ${decision.reason}` },
      pass.signal,
    );
    await clock.sleep(decision.waitMs, pass.signal);
    await pass.env.progress.report(
      { kind: 'draining', reason: 'out of the load balancers; draining' },
      pass.signal,
    );
  }
  return decision;
}
