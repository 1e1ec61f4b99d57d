// What the agents' flags say about room, in one shape: the lock (createLock) and the coordinator
// (createCoordinator) both take it from capacityOf(config), so that the two cannot read the flags
// apart. Each "N or N%" flag stays a Budget here; budget.ts resolves them for the fleet as it is.
import type { Budget } from '../config/budget.js';
import type { Config, WaveGrowth } from '../config/config.js';

/** The wave's gates as configured (wave-gate.ts): slow start and soak, the failure budget, the group order. */
export interface WaveSettings {
  /** --wave-start; 0 = no slow start. */
  start: number;
  /** --wave-growth. */
  growth: WaveGrowth;
  /** --soak (for the reason: each node measures its own). */
  soakMs: number;
  /** --max-failures; undefined = no budget. */
  maxFailures?: Budget;
  /** --group-order sequential: the group label and the order given. */
  order?: { label: string; order: readonly string[] };
}

/** How many may be out, and who: every flag the room rule (room.ts) is asked with. */
export interface CapacitySettings {
  /**
   * --concurrency: N slots, or N% of the nodes the lock's DaemonSet runs on. A number above 1, or a
   * share, makes the lock kured's multi form (maxOwners: the resolved number).
   */
  concurrency: Budget;
  /**
   * --group-label/--group-concurrency: at most `concurrency` slots (N, or N% of the group's nodes)
   * per value of the node label `label`, within --concurrency. A slot records its node's group; a
   * slot that records none (kured's, or an agent without groups) counts against every group.
   * undefined: no group limit.
   */
  groups?: { label: string; concurrency: Budget };
  /** --count-unavailable: unavailable nodes holding no slot take slots. Default false here (the agent's flag defaults on). */
  countUnavailable?: boolean;
  /** --control-plane-last: a control-plane node takes a slot only once no worker waits or reboots. */
  controlPlaneLast?: boolean;
  /** --max-unhealthy-nodes: no slot while more other nodes are unhealthy. Default none. */
  maxUnhealthy?: Budget;
  /** --max-quarantined: no slot while more other nodes are quarantined (the wave halts). Default none. */
  maxQuarantined?: Budget;
  /** The wave's gates; undefined: none configured (waveTracked). */
  wave?: WaveSettings;
}

/** The flags capacityOf reads. */
export type CapacityConfig = Pick<
  Config,
  | 'concurrency'
  | 'groupLabel'
  | 'groupConcurrency'
  | 'countUnavailable'
  | 'controlPlaneLast'
  | 'maxUnhealthyNodes'
  | 'maxQuarantined'
  | 'waveStart'
  | 'waveGrowth'
  | 'soakMs'
  | 'maxFailures'
  | 'groupOrder'
  | 'healthChecks'
>;

/**
 * Is a wave tracked (the nodes label their wave and state): any of its gates configured, or health
 * checks (a check failing after a reboot is a failure of the wave). Without, nothing is written or read.
 */
export function waveTracked(
  config: Pick<Config, 'waveStart' | 'waveGrowth' | 'soakMs' | 'maxFailures' | 'groupOrder' | 'healthChecks'>,
): boolean {
  return (
    config.waveStart > 0 ||
    config.waveGrowth.kind !== 'none' ||
    config.soakMs > 0 ||
    config.maxFailures !== undefined ||
    config.groupOrder.kind === 'sequential' ||
    config.healthChecks.length > 0
  );
}

/** The wave's gates of `config`, when any is configured. */
function waveOf(config: CapacityConfig): WaveSettings | undefined {
  if (!waveTracked(config)) return undefined;
  const order = config.groupOrder.kind === 'sequential' ? config.groupOrder.order : undefined;
  return {
    start: config.waveStart,
    growth: config.waveGrowth,
    soakMs: config.soakMs,
    ...(config.maxFailures === undefined ? {} : { maxFailures: config.maxFailures }),
    ...(order === undefined ? {} : { order: { label: config.groupLabel, order } }),
  };
}

/** The capacity flags of `config`, for the lock and the coordinator alike. */
export function capacityOf(config: CapacityConfig): CapacitySettings {
  const wave = waveOf(config);
  return {
    concurrency: config.concurrency,
    ...(config.groupConcurrency === undefined
      ? {}
      : { groups: { label: config.groupLabel, concurrency: config.groupConcurrency } }),
    countUnavailable: config.countUnavailable,
    controlPlaneLast: config.controlPlaneLast,
    ...(config.maxUnhealthyNodes === undefined ? {} : { maxUnhealthy: config.maxUnhealthyNodes }),
    ...(config.maxQuarantined === undefined ? {} : { maxQuarantined: config.maxQuarantined }),
    ...(wave === undefined ? {} : { wave }),
  };
}
