// The coordinator replicas of a simulation run (the chart's Deployment): each on its own virtual
// clock and tracked client with the admin credentials, electing a leader through the Lease. A
// scheduled kill takes the leader down as a crash would: no release, its calls never return.
import { setMaxListeners } from 'node:events';
import type { Logger } from '../log/logger.js';
import type { Coordinator } from '../coordinator/coordinator.js';
import { createCoordinator } from '../coordinator/create-coordinator.js';
import { forkRandom } from './random.js';
import type { SimulationOptions, SimulationResult } from './simulation-types.js';
import type { TrackedKube } from './tracked-kube.js';
import type { ActorClock, VirtualTime } from './virtual-time.js';

export interface SimCoordinatorsDeps {
  time: VirtualTime;
  options: SimulationOptions;
  /** A new tracked client with the admin credentials (one per replica: each can be killed alone). */
  client: () => TrackedKube;
  /** A logger for the replica `name` (coordinator-0, …). */
  logger: (name: string) => Logger;
  /** Where a crashed replica is reported. */
  errors: string[];
}

interface Replica {
  coordinator: Coordinator;
  kube: TrackedKube;
  abort: AbortController;
  clock: ActorClock;
}

export class SimCoordinators {
  private readonly replicas: Replica[] = [];

  constructor(private readonly deps: SimCoordinatorsDeps) {}

  /**
   * Starts options.coordinators replicas (default 2) and schedules the leader's deaths
   * (killCoordinatorAtMs, offsets from `startMs`).
   */
  start(startMs: number): void {
    const { time, options } = this.deps;
    const count = options.coordinators ?? 2;
    for (let i = 0; i < count; i++) this.startReplica(i);
    for (const at of options.killCoordinatorAtMs ?? [])
      time.schedule(startMs + at, () => {
        this.killLeader();
      });
  }

  /** The run ended: every replica dies. */
  stop(): void {
    for (const r of this.replicas) {
      r.clock.kill();
      r.kube.kill();
      r.abort.abort();
    }
  }

  /** Turns given and lapsed, leaderships and plans, summed over the replicas. */
  stats(): SimulationResult['coordinator'] {
    const sum = { granted: 0, lapsed: 0, leaderships: 0, plans: 0 };
    for (const { coordinator } of this.replicas) {
      sum.granted += coordinator.stats.granted;
      sum.lapsed += coordinator.stats.lapsed;
      sum.leaderships += coordinator.stats.leaderships;
      sum.plans += coordinator.stats.plans;
    }
    return sum;
  }

  private startReplica(i: number): void {
    const { time, options, errors } = this.deps;
    const clock = time.clock();
    const kube = this.deps.client();
    const abort = new AbortController();
    setMaxListeners(Infinity, abort.signal);
    // the agents' own Config, so the replicas keep the budget the agents keep
    const coordinator = createCoordinator(options.agent, {
      kube,
      identity: `kured-ts-coordinator-${String(i)}`,
      clock,
      log: this.deps.logger(`coordinator-${String(i)}`),
      random: forkRandom(options.cluster.seed, `coordinator#${String(i)}`),
      // as the simulated agents' views: the simulator's watches never hang, and under virtual time
      // their bookmarks do not come every simulated minute (simulate --clusters saw them silent)
      silenceMs: 0,
    });
    this.replicas.push({ coordinator, kube, abort, clock });
    time.after(0, () => {
      coordinator.run(abort.signal).catch((err: unknown) => {
        if (!abort.signal.aborted) errors.push(`coordinator ${String(i)} crashed: ${String(err)}`);
      });
    });
  }

  /** The leading replica dies: its clock and calls stop, its Lease is left to expire. */
  private killLeader(): void {
    const leader = this.replicas.find((r) => r.coordinator.leading && !r.abort.signal.aborted);
    if (leader === undefined) return;
    leader.clock.kill();
    leader.kube.kill();
  }
}
