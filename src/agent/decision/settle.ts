// The autoscaler protection after a cycle (src/node/autoscaler.ts): the settle period started by the
// end of the cycle runs out, and the agent removes the annotations it added, on the first pass after
// it (the agent's next pass is due then: Decision.protectedUntil).
import { settleStep, PROTECTION_ANNOTATION, parseProtection } from '../../node/autoscaler.js';
import { CYCLE_ANNOTATION } from '../../node/cycle.js';
import type { NodeState } from '../../node/node.js';
import type { Pass } from './pass.js';

/** Outside a cycle: starts a settle left without an end, or ends one that ran out (guarded). */
export async function settle(pass: Pass): Promise<void> {
  if (pass.node.annotations[CYCLE_ANNOTATION] !== undefined) return;
  const now = pass.deps.clock.now();
  const settleMs = pass.config.settleTimeMs;
  const last = { step: 'none' };
  await pass.guardedWrite('the autoscaler protection settled', (node) => {
    if (node.annotations[CYCLE_ANNOTATION] !== undefined) return undefined;
    const step = settleStep(node.annotations, now, settleMs);
    last.step = step.step;
    if (step.step === 'none' || step.step === 'wait') return undefined;
    return { annotations: step.change };
  });
  if (last.step === 'end')
    pass.deps.logger.info('autoscaler protection removed', { node: pass.config.nodeId });
}

/**
 * When a pass is due for the protection of `node` as last seen: the end of its settle (ms since the
 * epoch), or undefined (no record, or in a cycle, whose passes come often anyway).
 */
export function settleDue(node: NodeState): number | undefined {
  if (node.annotations[CYCLE_ANNOTATION] !== undefined) return undefined;
  const until = parseProtection(node.annotations[PROTECTION_ANNOTATION])?.until;
  return until === undefined ? undefined : Date.parse(until);
}
