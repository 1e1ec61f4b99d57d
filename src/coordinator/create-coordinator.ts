// Builds a Coordinator from the agents' own Config: the CLI's `kured-ts coordinator`, the simulator's
// replicas and the real-API bench build it here, as the agents build their lock with createLock, so
// that the agents and the coordinator read one --concurrency, one lock and one set of gates.
import type { Config } from '../config/config.js';
import { coordinatorLeaseName } from '../queue/coordinator-lease.js';
import { Coordinator } from './coordinator.js';
import { capacityOf, type CapacityConfig } from '../capacity/settings.js';
import type { CoordinatorOptions } from './coordinator-options.js';

/** The agents' flags the coordinator reads (the same Config, so that the two cannot disagree). */
export type CoordinatorConfig = CapacityConfig &
  Pick<Config, 'dsNamespace' | 'dsName' | 'lockAnnotation' | 'lockTtlMs' | 'fleetlockUrl'>;

/**
 * The coordinator for the agents' own configuration: the CLI's `kured-ts coordinator`, the
 * simulator's replicas and the real-API bench's build it here, as the agents build their lock with
 * createLock, both with capacityOf.
 */
export function createCoordinator(
  config: CoordinatorConfig,
  io: Pick<CoordinatorOptions, 'kube' | 'identity' | 'clock' | 'log' | 'random' | 'silenceMs'>,
): Coordinator {
  return new Coordinator({
    ...io,
    ...capacityOf(config),
    namespace: config.dsNamespace,
    dsName: config.dsName,
    leaseName: coordinatorLeaseName(config.dsName),
    annotation: config.lockAnnotation,
    ttlMs: config.lockTtlMs,
    fleetLock: config.fleetlockUrl !== '',
  });
}
