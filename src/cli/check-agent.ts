// What `kured-ts check` says of a configuration error the agent reported: its own admission policy
// denies one of its requests, and its status names the policy (deniedBy). check runs as the operator,
// whom that policy does not judge, so it cannot ask the question itself: it shows what the agent
// found, and decides as the agent did (misconfigured) until the agent's next status says otherwise.
import { ownPolicyOptions } from '../admission/own-denial.js';
import type { Misconfigured } from '../agent/outcome.js';
import type { V1Node } from '../kube/kube.js';
import { STATUS_ANNOTATION, parseStatus } from '../node/status.js';
import type { CheckItem } from './check-report.js';

/** The configuration error the node's agent last reported; undefined when it reported none. */
export function reportedMisconfiguration(node: V1Node): Misconfigured | undefined {
  const status = parseStatus(node.metadata?.annotations?.[STATUS_ANNOTATION]);
  if (status?.deniedBy === undefined) return undefined;
  const policy = status.deniedBy;
  return { kind: 'misconfigured', reason: status.reason, policy, options: ownPolicyOptions(policy) };
}

/** One item for a configuration error the agent reported (none without one). */
export function evaluateAgent(node: V1Node): CheckItem[] {
  const error = reportedMisconfiguration(node);
  if (error === undefined) return [];
  const since = parseStatus(node.metadata?.annotations?.[STATUS_ANNOTATION])?.since ?? '';
  return [{ name: 'agent', verdict: 'blocks', detail: `reported since ${since}: ${error.reason}` }];
}
