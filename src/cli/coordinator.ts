// `kured-ts coordinator`: the lock queue's one decider (src/coordinator), run by the chart as a
// Deployment of two replicas beside the agents' DaemonSet. It takes the agents' own lock flags from
// the flag table (so KURED_* values shared with the DaemonSet mean the same), elects a leader among
// its replicas through a Lease, and runs until SIGTERM, when it releases the Lease for the standby.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Command } from 'commander';
import { SystemClock } from '../clock/clock.js';
import type { Config } from '../config/config.js';
import type { Kube } from '../kube/kube.js';
import { optionValues, parseFlags } from '../config/parse.js';
import type { Coordinator } from '../coordinator/coordinator.js';
import { createCoordinator } from '../coordinator/create-coordinator.js';
import { createLogger } from '../log/logger.js';
import { EXIT_OK, addFlags, agentFlags, commandIo, usage, type CommandDeps } from './shared.js';

/** The agent flags the coordinator reads: where the lock is, and the budget it hands out. */
export const COORDINATOR_FLAGS = [
  'kubeconfig',
  'ds-name',
  'ds-namespace',
  'lock-annotation',
  'lock-ttl',
  'concurrency',
  'group-label',
  'group-concurrency',
  'count-unavailable',
  'control-plane-last',
  'max-unhealthy-nodes',
  'max-quarantined',
  'fleetlock-url',
  'log-format',
  'wave-start',
  'wave-growth',
  'soak',
  'max-failures',
  'group-order',
] as const;

/** This replica's name in the Lease: the pod's name (the chart passes POD_NAME) and a random suffix. */
export function coordinatorIdentity(env: Readonly<Record<string, string | undefined>>): string {
  const pod = env.POD_NAME !== undefined && env.POD_NAME !== '' ? env.POD_NAME : hostname();
  return `${pod}_${randomBytes(4).toString('hex')}`;
}

/** Adds `coordinator` to the program. */
export function registerCoordinator(program: Command, deps: CommandDeps): Command {
  const flags = agentFlags(...COORDINATOR_FLAGS);
  const cmd = program
    .command('coordinator')
    .description(
      "keep the lock's queue for the agents (the chart runs it as a Deployment): names the next node for each freed slot",
    );
  addFlags(cmd, flags).action(async (opts: Record<string, unknown>) => {
    const config = usage(deps, () => parseFlags([...COORDINATOR_FLAGS], optionValues(opts, flags), deps.env));
    const io = config && commandIo(deps, { kubeconfig: config.kubeconfig, context: '' });
    if (!config || !io) return;
    const signal = deps.interrupted?.() ?? new AbortController().signal;
    await coordinatorFor(config, deps, io.kube).run(signal);
    deps.exit(EXIT_OK);
  });
  return cmd;
}

function coordinatorFor(config: Config, deps: CommandDeps, kube: Kube): Coordinator {
  const log = createLogger(config.logFormat);
  const identity = coordinatorIdentity(deps.env);
  log.info('coordinator starting', { identity, lock: `${config.dsNamespace}/${config.dsName}` });
  return createCoordinator(config, {
    kube,
    identity,
    clock: deps.clock ?? new SystemClock(),
    log,
    random: Math.random,
  });
}
