// A request of the agent denied by its own admission policy ends the pass as a configuration error
// (outcome `misconfigured`, reported once), never as a block waited out or a tick that merely failed:
// the same request is denied every time until the chart and the agent agree (issue 47).
import { ownDenial } from '../../admission/own-denial.js';
import type { PolicyConfig } from '../../admission/agent-policy.js';
import type { NamedVerdict } from '../../blockers/blocker.js';
import { policyDenial, type PolicyDenial } from '../../kube/errors.js';
import type { DrainResult } from '../../drain/drainer.js';
import type { CycleRecord } from '../../node/cycle.js';
import type { Misconfigured, Outcome } from '../outcome.js';
import { endUndrainedCycle } from './cycle-end.js';
import type { Pass } from './pass.js';

/** The configuration error a denial of the agent's own policy is; undefined for anything else. */
export function misconfigured(
  denial: PolicyDenial | undefined,
  config: PolicyConfig,
): Misconfigured | undefined {
  const own = ownDenial(denial, config);
  if (own === undefined) return undefined;
  return { kind: 'misconfigured', reason: own.reason, policy: own.policy, options: own.options };
}

/** misconfigured() for an error a step threw (an API answer); undefined for any other error. */
export function misconfiguredBy(err: unknown, config: PolicyConfig): Misconfigured | undefined {
  return misconfigured(policyDenial(err), config);
}

/** A blocker's verdict as the decision takes it: the blocker, or the configuration error behind it. */
export type Block =
  { blocked: false } | { blocked: true; blocker: string; reason: string; misconfigured?: Misconfigured };

/** The first block, with a blocker that failed on the agent's own policy turned into that error. */
export function blockOf(verdict: NamedVerdict, config: PolicyConfig): Block {
  if (!verdict.blocked) return verdict;
  const error = misconfigured(verdict.denied, config);
  const { blocker, reason } = verdict;
  return error === undefined
    ? { blocked: true, blocker, reason }
    : { blocked: true, blocker, reason, misconfigured: error };
}

/**
 * The drain met the agent's own admission policy: the cycle ends (our cordon goes) and the slot is
 * released, without a quarantine (the node is not at fault: every node's drain would be denied alike).
 */
export async function endDeniedCycle(
  pass: Pass,
  record: CycleRecord,
  result: DrainResult,
  error: Misconfigured,
): Promise<Outcome> {
  await endUndrainedCycle(pass, record, result);
  return { ...error, reason: `${error.reason}; drain stopped, cycle ended, lock released` };
}
