// simulate --clusters N --fleetlock-slots S: several clusters on one virtual time, each with its own
// fake API server, agents and coordinators (as simulate builds one), sharing one FleetLock server in
// memory. An observer across them holds the shared budget as an invariant: never more than S
// clusters with a node rebooting (down, or in its cycle: a cycle begins only with a FleetLock slot).
import { CYCLE_ANNOTATION } from '../node/cycle.js';
import type { SimCluster } from './cluster.js';
import { FakeFleetLock, type FleetLockCounts } from './fake-fleetlock.js';
import type { SimServer } from './objects.js';
import { openSimulation, SIM_START, type Simulation } from './simulation.js';
import type { SimulationOptions, SimulationResult } from './simulation-types.js';
import { VirtualTime, type StopReason } from './virtual-time.js';

/** The URL the simulated agents are given (the in-memory server answers whatever the host). */
const SIM_FLEETLOCK_URL = 'http://fleetlock.sim';
/** The group every simulated cluster takes its slots from (the agents' default). */
const SIM_FLEETLOCK_GROUP = 'default';

const DAY = 24 * 3600_000;

export interface FleetSimulationOptions {
  /** Clusters, each built from the same options (its seed + its index). */
  clusters: number;
  /** FleetLock slots of the shared group; 0 = no FleetLock (independent clusters). */
  slots: number;
}

/** Too many clusters rebooting at once. */
interface FleetViolation {
  /** Virtual ms since the start. */
  atMs: number;
  /** The clusters with a node rebooting then, and which node. */
  rebooting: string[];
}

export interface FleetSimulationResult {
  stop: StopReason;
  /** Each cluster's own result (its invariants, its requests), named c1, c2, …. */
  clusters: { name: string; result: SimulationResult }[];
  /** With slots > 0: the shared budget as observed, and what the server was asked. */
  fleetLock?: { slots: number; maxRebooting: number; violations: FleetViolation[]; counts: FleetLockCounts };
  wallMs: number;
}

/** Which nodes of each cluster are rebooting, checked on every Node write of any cluster. */
class FleetObserver {
  readonly violations: FleetViolation[] = [];
  maxRebooting = 0;
  private readonly rebooting: Set<string>[];

  constructor(
    private readonly names: string[],
    private readonly slots: number,
    private readonly elapsed: () => number,
  ) {
    this.rebooting = names.map(() => new Set<string>());
  }

  watch(index: number, server: SimServer, cluster: SimCluster): () => void {
    const set = this.rebooting[index] ?? new Set<string>();
    return server.onWrite((e) => {
      if (e.resource !== 'nodes') return;
      const { name, inCycle } = cycleOf(e.object, e.type === 'DELETED');
      if (inCycle || cluster.nodes.get(name)?.rebooting === true) set.add(name);
      else set.delete(name);
      this.check();
    });
  }

  private check(): void {
    const active = this.names.flatMap((name, i) => {
      const first = [...(this.rebooting[i] ?? [])][0];
      return first === undefined ? [] : [`${name}/${first}`];
    });
    this.maxRebooting = Math.max(this.maxRebooting, active.length);
    if (active.length > this.slots) this.violations.push({ atMs: this.elapsed(), rebooting: active });
  }
}

/** A written Node's name, and whether it carries a cycle record. */
function cycleOf(object: unknown, deleted: boolean): { name: string; inCycle: boolean } {
  const { metadata } = object as { metadata?: { name?: string; annotations?: Record<string, string> } };
  return {
    name: metadata?.name ?? '',
    inCycle: !deleted && metadata?.annotations?.[CYCLE_ANNOTATION] !== undefined,
  };
}

/** Cluster `i`'s options: its own seed, and the shared FleetLock server (with ids qualified by `name`). */
function clusterOptions(
  options: SimulationOptions,
  i: number,
  name: string,
  server: FakeFleetLock | undefined,
): SimulationOptions {
  const one: SimulationOptions = {
    ...options,
    cluster: { ...options.cluster, seed: options.cluster.seed + i },
  };
  if (!server) return one;
  return {
    ...one,
    agent: { ...options.agent, fleetlockUrl: SIM_FLEETLOCK_URL, fleetlockGroup: SIM_FLEETLOCK_GROUP },
    fleetLock: { exchange: server.exchange(`${name}/`) },
  };
}

/** Runs the clusters to their end (every one done, or a limit) and returns what was measured. */
export async function runFleetSimulation(
  options: SimulationOptions,
  fleet: FleetSimulationOptions,
): Promise<FleetSimulationResult> {
  const wallStart = Date.now();
  const time = new VirtualTime(options.start ?? SIM_START);
  const server = fleet.slots > 0 ? new FakeFleetLock(fleet.slots) : undefined;
  const names = Array.from({ length: fleet.clusters }, (_, i) => `c${i + 1}`);
  const startMs = time.nowMs();
  const observer = new FleetObserver(names, fleet.slots, () => time.nowMs() - startMs);
  const opened = await openAll(options, names, server, time);
  const unwatch = opened.map((o, i) => observer.watch(i, o.server, o.simulation.cluster));
  try {
    for (const o of opened) o.simulation.begin();
    const sims = opened.map((o) => o.simulation);
    const { stop, doneAt } = await runAll(time, sims, options);
    for (const s of sims) s.halt();
    const clusters = [];
    for (const [i, s] of sims.entries()) {
      clusters.push({ name: `c${i + 1}`, result: await s.finish(stop, doneAt[i], wallStart) });
    }
    const result: FleetSimulationResult = { stop, clusters, wallMs: Date.now() - wallStart };
    if (!server) return result;
    const { maxRebooting, violations } = observer;
    return {
      ...result,
      fleetLock: { slots: fleet.slots, maxRebooting, violations, counts: { ...server.counts } },
    };
  } finally {
    for (const u of unwatch) u();
    for (const o of opened) await o.close();
  }
}

/** Opens every cluster's simulation on the shared time. */
async function openAll(
  options: SimulationOptions,
  names: string[],
  server: FakeFleetLock | undefined,
  time: VirtualTime,
): Promise<Awaited<ReturnType<typeof openSimulation>>[]> {
  const opened = [];
  for (const [i, name] of names.entries()) {
    opened.push(await openSimulation(clusterOptions(options, i, name, server), time));
  }
  return opened;
}

/** Runs the shared time until every cluster is done (and past its own tail), or a limit. */
async function runAll(
  time: VirtualTime,
  sims: Simulation[],
  options: SimulationOptions,
): Promise<{ stop: StopReason; doneAt: (number | undefined)[] }> {
  const doneAt: (number | undefined)[] = sims.map(() => undefined);
  const limit = time.nowMs() + (options.limitMs ?? 7 * DAY);
  // each cluster's own end is noted when it comes (no short cut: every one is asked each time)
  const stop = await time.run(
    () =>
      sims
        .map((s, i) => {
          if (doneAt[i] === undefined && s.done()) doneAt[i] = time.nowMs();
          const at = doneAt[i];
          return at !== undefined && time.nowMs() >= s.endAfter(at);
        })
        .every(Boolean),
    limit,
    options.wallLimitMs,
    options.wallNow,
  );
  return { stop, doneAt };
}
