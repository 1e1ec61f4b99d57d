// Builds a Coordinator from the agents' own Config: the CLI's `kured-ts coordinator`, the simulator's
// replicas and the real-API bench build it here, as the agents build their lock with createLock, so
// that the agents and the coordinator read one --concurrency, one lock and one set of gates.
import type { Config } from '../config/config.js';
import { coordinatorLeaseName } from '../queue/coordinator-lease.js';
import { Coordinator } from './coordinator.js';
import { waveTracked } from '../lock/wave-gate.js';
import type { CoordinatorOptions } from './coordinator-options.js';

/** The agents' flags the coordinator reads (the same Config, so that the two cannot disagree). */
export type CoordinatorConfig = Pick<
  Config,
  | 'dsNamespace'
  | 'dsName'
  | 'lockAnnotation'
  | 'lockTtlMs'
  | 'concurrency'
  | 'concurrencyPercent'
  | 'groupLabel'
  | 'groupConcurrency'
  | 'groupConcurrencyPercent'
  | 'countUnavailable'
  | 'controlPlaneLast'
  | 'maxUnhealthyNodes'
  | 'maxQuarantined'
  | 'fleetlockUrl'
  | 'waveStart'
  | 'waveGrowth'
  | 'soakMs'
  | 'maxFailures'
  | 'groupOrder'
  | 'healthChecks'
>;

/**
 * The coordinator for the agents' own configuration: the CLI's `kured-ts coordinator`, the
 * simulator's replicas and the real-API bench's build it here, as the agents build their lock with
 * createLock.
 */
export function createCoordinator(
  config: CoordinatorConfig,
  io: Pick<CoordinatorOptions, 'kube' | 'identity' | 'clock' | 'log' | 'random' | 'silenceMs'>,
): Coordinator {
  return new Coordinator({
    ...io,
    namespace: config.dsNamespace,
    dsName: config.dsName,
    leaseName: coordinatorLeaseName(config.dsName),
    annotation: config.lockAnnotation,
    ttlMs: config.lockTtlMs,
    concurrency: config.concurrency,
    concurrencyPercent: config.concurrencyPercent,
    countUnavailable: config.countUnavailable,
    controlPlaneLast: config.controlPlaneLast,
    ...(config.groupConcurrency > 0
      ? {
          groups: {
            label: config.groupLabel,
            concurrency: config.groupConcurrency,
            percent: config.groupConcurrencyPercent,
          },
        }
      : {}),
    ...(config.maxUnhealthyNodes === undefined ? {} : { maxUnhealthyNodes: config.maxUnhealthyNodes }),
    ...(config.maxQuarantined === undefined ? {} : { maxQuarantined: config.maxQuarantined }),
    fleetLock: config.fleetlockUrl !== '',
    ...waveOf(config),
  });
}

/** The wave's gates the agents judge, for the plan to give no turn they would refuse. */
function waveOf(config: CoordinatorConfig): Pick<CoordinatorOptions, 'wave'> {
  if (!waveTracked(config)) return {};
  const order = config.groupOrder.kind === 'sequential' ? config.groupOrder.order : undefined;
  return {
    wave: {
      start: config.waveStart,
      growth: config.waveGrowth,
      soakMs: config.soakMs,
      ...(config.maxFailures === undefined ? {} : { maxFailures: config.maxFailures }),
      ...(order === undefined ? {} : { order: { label: config.groupLabel, order } }),
    },
  };
}
