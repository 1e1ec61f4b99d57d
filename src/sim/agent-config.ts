// The configuration every simulated agent runs with: kured's defaults plus the simulation's choices.
import type { Config } from '../config/config.js';
import { defaultConfig } from '../config/parse.js';
import { parseLabelSelector } from '../selector/label-selector.js';
import { BLOCKING_LABEL, DS_NAME, DS_NAMESPACE } from './cluster-spec.js';
import { agentPolicyParams, NODE_NAME_EXTRA } from '../admission/agent-policy.js';
import type { Identity } from '../kube/client.js';
import { boundAgentPolicies, type BoundPolicy } from './fake-api/cel-admission.js';

/** The knobs of simulate that reach the agents. Durations in ms. */
export interface SimAgentSettings {
  /** Slots: the number, or what `concurrencyPercent` resolves to for the cluster (the observer's limit). */
  concurrency: number;
  /** --concurrency N%: the agents run with the percentage. Default none. */
  concurrencyPercent?: number;
  periodMs: number;
  rebootDelayMs: number;
  /** PreferNoSchedule taint key; '' = off (kured's default). */
  taint: string;
  blockOnPdb: boolean;
  drainTimeoutMs: number;
  evictionRetryDelayMs: number;
  /** URL of the simulated Prometheus; '' = no alert blocker. */
  prometheusUrl: string;
  /** --lock-ttl; 0 = slots never expire. Default 0. */
  lockTtlMs?: number;
  /** --group-label with --group-concurrency (0 = no per-group limit). Default none. */
  groups?: { label: string; concurrency: number };
  /** --max-unhealthy-nodes. Default none (no health gate). */
  maxUnhealthyNodes?: Config['maxUnhealthyNodes'];
  /** --require-approval. Default false. */
  requireApproval?: boolean;
  /**
   * The agents' settings where the simulation's flags changed them from the agent's defaults
   * (simulate's agent flags, parsed by the agent's flag table); applied over everything above.
   */
  overrides?: Partial<Config>;
  /** --fleetlock-url and --fleetlock-group (simulate --fleetlock-slots). Default none. */
  fleetlock?: { url: string; group: string };
}

export const LOCK_ANNOTATION = 'weave.works/kured-node-lock';
export const SIM_TAINT = 'weave.works/kured-node-reboot';

/** --concurrency: the number, or the percentage (its count then at the floor, 1). */
function concurrencyOf(s: SimAgentSettings): Pick<Config, 'concurrency' | 'concurrencyPercent'> {
  const percent = s.concurrencyPercent ?? 0;
  return { concurrency: percent > 0 ? 1 : s.concurrency, concurrencyPercent: percent };
}

/**
 * A complete Config for the agent on `nodeId`: the agent's own defaults (defaultConfig, as an empty
 * command line gives them), the agent flags the simulation was given, and its settings on top. Sentinel and rebooter are replaced
 * by simulated ones; the metrics listener is never started in the simulator.
 */
export function simAgentConfig(nodeId: string, s: SimAgentSettings): Config {
  return {
    ...defaultConfig(),
    // the agents' flags first: the simulation's own settings below are what it watches
    ...s.overrides,
    nodeId,
    periodMs: s.periodMs,
    rebootDelayMs: s.rebootDelayMs,
    drainTimeoutMs: s.drainTimeoutMs,
    dsName: DS_NAME,
    dsNamespace: DS_NAMESPACE,
    lockAnnotation: LOCK_ANNOTATION,
    ...concurrencyOf(s),
    lockTtlMs: s.lockTtlMs ?? 0,
    groupLabel: s.groups?.label ?? s.overrides?.groupLabel ?? '',
    groupConcurrency: s.groups?.concurrency ?? 0,
    maxUnhealthyNodes: s.maxUnhealthyNodes,
    requireApproval: s.requireApproval ?? false,
    preferNoScheduleTaint: s.taint,
    blockingPodSelectors: [parseLabelSelector(`${BLOCKING_LABEL}=true`)],
    prometheusUrl: s.prometheusUrl,
    ...(s.fleetlock ? { fleetlockUrl: s.fleetlock.url, fleetlockGroup: s.fleetlock.group } : {}),
    blockOnPdb: s.blockOnPdb,
    evictionRetryDelayMs: s.evictionRetryDelayMs,
    metricsHost: '127.0.0.1',
    metricsPort: 0,
    hostExec: 'direct',
    kubeconfig: '',
  };
}

/** The ServiceAccount the simulated agents run as (the chart's, in the lock's namespace). */
const SIM_SERVICE_ACCOUNT = { namespace: DS_NAMESPACE, name: 'kured-ts' };

/** Who the agent on `node` is to the API server: its ServiceAccount, with the bound token's node claim. */
export function simAgentIdentity(node: string): Identity {
  const { namespace, name } = SIM_SERVICE_ACCOUNT;
  return { user: `system:serviceaccount:${namespace}:${name}`, extra: { [NODE_NAME_EXTRA]: node } };
}

/** kured-ts's admission policies as the chart installs them, with the values of these agents. */
export function simAgentPolicies(s: SimAgentSettings): BoundPolicy[] {
  return boundAgentPolicies(
    agentPolicyParams(simAgentConfig('', s), { serviceAccount: SIM_SERVICE_ACCOUNT }),
  );
}
