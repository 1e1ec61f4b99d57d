// What every simulated agent runs with whatever the flags (its seams), who it is to the API server,
// and the admission policies it meets.
import type { Config } from '../config/config.js';
import { parseLabelSelector } from '../selector/label-selector.js';
import { BLOCKING_LABEL, DS_NAME, DS_NAMESPACE } from './cluster-spec.js';
import { agentPolicyParams, NODE_NAME_EXTRA } from '../admission/agent-policy.js';
import type { Identity } from '../kube/client.js';
import { boundAgentPolicies, type BoundPolicy } from './fake-api/cel-admission.js';

export const LOCK_ANNOTATION = 'weave.works/kured-node-lock';
export const SIM_TAINT = 'weave.works/kured-node-reboot';

/**
 * What every simulated agent runs with, whatever simulate's flags say: the simulation's DaemonSet and
 * lock, its blocking pods' label, and its seams (sentinel and rebooter are replaced by simulated
 * ones; no metrics listener is started, no host command run, no kubeconfig read).
 */
export const SIM_AGENT_SEAMS: Pick<
  Config,
  | 'dsName'
  | 'dsNamespace'
  | 'lockAnnotation'
  | 'blockingPodSelectors'
  | 'metricsHost'
  | 'metricsPort'
  | 'hostExec'
  | 'kubeconfig'
> = {
  dsName: DS_NAME,
  dsNamespace: DS_NAMESPACE,
  lockAnnotation: LOCK_ANNOTATION,
  blockingPodSelectors: [parseLabelSelector(`${BLOCKING_LABEL}=true`)],
  metricsHost: '127.0.0.1',
  metricsPort: 0,
  hostExec: 'direct',
  kubeconfig: '',
};

/** The ServiceAccount the simulated agents run as (the chart's, in the lock's namespace). */
const SIM_SERVICE_ACCOUNT = { namespace: DS_NAMESPACE, name: 'kured-ts' };

/** Who the agent on `node` is to the API server: its ServiceAccount, with the bound token's node claim. */
export function simAgentIdentity(node: string): Identity {
  const { namespace, name } = SIM_SERVICE_ACCOUNT;
  return { user: `system:serviceaccount:${namespace}:${name}`, extra: { [NODE_NAME_EXTRA]: node } };
}

/** kured-ts's admission policies as the chart installs them, with the values of these agents. */
export function simAgentPolicies(config: Config): BoundPolicy[] {
  return boundAgentPolicies(agentPolicyParams(config, { serviceAccount: SIM_SERVICE_ACCOUNT }));
}
