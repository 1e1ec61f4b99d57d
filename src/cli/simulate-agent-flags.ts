// The agent flags `simulate` takes: declared, defaulted, parsed and checked by the agent's own flag
// table (src/config/flags.ts), so that a value the agent refuses the simulator refuses with the same
// message; and the one mapping from the Config they give to what the simulation runs with. The
// simulator reads no KURED_* variable: a run is told everything on its command line.
import { budgetCount, budgetShare } from '../config/budget.js';
import { budgetsOf } from '../capacity/budget.js';
import type { Config } from '../config/config.js';
import { defaultConfig } from '../config/parse.js';
import type { SimulateOptions } from './simulate.js';

/** The agent flags `simulate` accepts, as the agents in the simulation run with them. */
export const SIM_AGENT_FLAGS = [
  'concurrency',
  'period',
  'reboot-delay',
  'drain-delay',
  'drain-timeout',
  'reboot-retries',
  'lock-ttl',
  'group-concurrency',
  'count-unavailable',
  'control-plane-last',
  'max-unhealthy-nodes',
  'taint-timing',
  'on-drain-failure',
  'quarantine-cordon',
  'quarantine-retry',
  'max-quarantined',
  'max-reboots-per-need',
  'autoscaler-protection',
  'settle-time',
  'hold-after-drain-annotation',
  'hold-timeout',
  'volume-detach-timeout',
  'volume-detach-timeout-action',
  'single-replica',
  'single-replica-timeout',
  'exclude-from-lb',
  'lb-drain-wait',
  'wave-start',
  'wave-growth',
  'soak',
  'max-failures',
  'group-order',
  'post-reboot-timeout',
  'on-post-reboot-timeout',
] as const;

/** What simulate's help shows as a default where the simulation's differs from the agent's. */
export const SIM_SHOWN_DEFAULTS: Readonly<Record<string, string>> = {
  'drain-timeout': '0s; 5m with --undrainable',
  'group-concurrency': '0 (needs --zones: the groups are the zones)',
  'group-order': 'parallel (sequential needs --zones: the groups are the zones)',
};

/** The simulation's options from the agents' Config: the simulator's own view, and the agents' flags. */
export type SimAgentOptions = Pick<
  SimulateOptions,
  | 'concurrency'
  | 'concurrencyPercent'
  | 'periodMs'
  | 'rebootDelayMs'
  | 'lockTtlMs'
  | 'groupConcurrency'
  | 'maxUnhealthyNodes'
  | 'drainTimeoutMs'
  | 'agent'
>;

/**
 * The one mapping: what the simulator itself watches (the slots the observer holds the wave to, the
 * period, the zones' limit; the drain timeout unless given, which --undrainable sets), and every
 * agent setting the flags changed from the agent's defaults, which the agents run with as they are.
 */
export function simAgentOptions(config: Config, given: ReadonlySet<string>, nodes: number): SimAgentOptions {
  const { concurrency } = config;
  const share = budgetShare(concurrency);
  const groups = config.groupConcurrency === undefined ? undefined : budgetCount(config.groupConcurrency);
  return {
    // the slots the observer holds the run to: as the lock resolves the budget for the whole cluster
    concurrency: budgetsOf({ concurrency }, nodes).slots,
    ...(share === undefined ? {} : { concurrencyPercent: share }),
    periodMs: config.periodMs,
    rebootDelayMs: config.rebootDelayMs,
    lockTtlMs: config.lockTtlMs,
    // a share of each zone stays with the agents (their changed settings)
    ...(groups === undefined ? {} : { groupConcurrency: groups }),
    maxUnhealthyNodes: config.maxUnhealthyNodes,
    ...(given.has('drain-timeout') ? { drainTimeoutMs: config.drainTimeoutMs } : {}),
    agent: changedFromDefaults(config),
  };
}

/** The settings of `config` that differ from the agent's defaults (compared as JSON). */
function changedFromDefaults(config: Config): Partial<Config> {
  const defaults = defaultConfig() as unknown as Record<string, unknown>;
  const changed: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    if (JSON.stringify(value) !== JSON.stringify(defaults[key])) changed[key] = value;
  }
  return changed;
}
