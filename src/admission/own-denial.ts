// A request of the agent denied by its own admission policy (the chart's `<release>-agent-<kind>`).
// Never a block to wait out: the same request is denied every time. It is a configuration error: the
// policy is rendered from the chart's values while the agent runs with others (a flag given through
// env or extraArgs reaches the agent, never the policy), or the agent sends what its configuration
// does not say (issue 47: the PDB pre-flight's dry run without the configured grace period). Put in
// words here, once, for the status, the Event, the log line and `kured-ts check`.
import { budgetText } from '../config/budget.js';
import { valuesKey } from '../config/flags.js';
import type { PolicyDenial } from '../kube/errors.js';
import {
  agentPolicySpecs,
  POLICY_KINDS,
  type PolicyConfig,
  type PolicyKind,
  type PolicyValueKey,
} from './agent-policy.js';
import { placeholder } from './policy-parts.js';

/** How the agent runs with one flag, as its command line would say it. */
type Shown = (config: PolicyConfig) => string;

function labels(given: Readonly<Record<string, string>>): string {
  return Object.entries(given)
    .map(([key, value]) => `${key}=${value}`)
    .join(',');
}

/**
 * The agent's flags each value of the policies is rendered from (each the chart value
 * `configuration.<flag in camelCase>`); none for what only the chart says (its ServiceAccount,
 * admissionPolicy.requireNodeClaim).
 */
const VALUE_FLAGS: Record<PolicyValueKey, readonly (readonly [string, Shown])[]> = {
  serviceAccount: [],
  requireNodeClaim: [],
  lockDaemonSet: [
    ['ds-namespace', (c) => c.dsNamespace],
    ['ds-name', (c) => c.dsName],
  ],
  lockAnnotation: [['lock-annotation', (c) => c.lockAnnotation]],
  taint: [['prefer-no-schedule-taint', (c) => c.preferNoScheduleTaint]],
  nodeLabels: [
    ['pre-reboot-node-labels', (c) => labels(c.preRebootNodeLabels)],
    ['post-reboot-node-labels', (c) => labels(c.postRebootNodeLabels)],
  ],
  drainGracePeriod: [['drain-grace-period', (c) => String(c.drainGracePeriodSeconds)]],
  maxOwners: [['concurrency', (c) => budgetText(c.concurrency)]],
  podDelete: [['drain-fallback', (c) => c.drainFallback]],
  deploymentRestart: [['single-replica', (c) => c.singleReplica]],
};

/** What each policy judges, in the words of a denial. */
const REQUEST: Record<PolicyKind, string> = {
  nodes: 'write to its node',
  lock: 'write to the lock',
  eviction: 'eviction',
  pods: 'pod deletion',
  deployments: 'restart of a Deployment',
};

/** The kind of the agent's policy named `policy` (`<release>-agent-<kind>`); undefined for another's. */
export function agentPolicyKind(policy: string): PolicyKind | undefined {
  return POLICY_KINDS.find((kind) => policy.endsWith(`-agent-${kind}`));
}

/** The flags (and how the agent shows each) the policy of `kind` is rendered from. */
function flagsOf(kind: PolicyKind): (readonly [string, Shown])[] {
  const spec = JSON.stringify(agentPolicySpecs()[kind]);
  const keys = (Object.keys(VALUE_FLAGS) as PolicyValueKey[]).filter((k) => spec.includes(placeholder(k)));
  return keys.flatMap((k) => VALUE_FLAGS[k]);
}

/** The flags the agent's policy named `policy` is rendered from; none for another's. */
export function ownPolicyOptions(policy: string): string[] {
  const kind = agentPolicyKind(policy);
  return kind === undefined ? [] : flagsOf(kind).map(([flag]) => `--${flag}`);
}

/** A denial by the agent's own policy, as the configuration error it is. */
export interface OwnDenial {
  /** The policy, e.g. `kured-ts-agent-eviction`. */
  policy: string;
  /** The flags its values come from, e.g. `--drain-grace-period`. */
  options: string[];
  /** In words: what was denied, why, and what to make agree. */
  reason: string;
}

/**
 * `denial` when it is the agent's own policy's (undefined for another policy's, or none), with the
 * flags that policy is rendered from and the values this agent runs with.
 */
export function ownDenial(denial: PolicyDenial | undefined, config: PolicyConfig): OwnDenial | undefined {
  const kind = denial === undefined ? undefined : agentPolicyKind(denial.policy);
  if (denial === undefined || kind === undefined) return undefined;
  const flags = flagsOf(kind);
  const chart = flags.map(([flag]) => `configuration.${valuesKey(flag)}`).join(', ');
  const runs = flags.map(([flag, shown]) => `--${flag}=${shown(config) || '""'}`).join(' ');
  const given =
    flags.length === 0
      ? ''
      : `; the policy holds the chart's ${chart}; this agent runs with ${runs}: give both the same ` +
        "values (in the chart's configuration, not through env or extraArgs) and upgrade the release";
  return {
    policy: denial.policy,
    options: ownPolicyOptions(denial.policy),
    reason: `configuration error: admission policy ${denial.policy} denies this agent's own ${REQUEST[kind]}: ${denial.message}${given}`,
  };
}
