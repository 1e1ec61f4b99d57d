// What an agent reads of the coordinator (src/coordinator): whether one is alive, and the fleet's
// health as the coordinator sees it from its one watch of the Nodes. Both come from one small
// object, the coordinator's coordination.k8s.io Lease, read at most once per CACHE_MS.
//
// Liveness is judged as client-go's leader election judges it, on the reader's own monotonic clock:
// a Lease whose resourceVersion has not changed for its leaseDurationSeconds since this reader
// first saw it has no live holder. Its renewTime (another machine's wall clock) is never compared
// with ours (DESIGN §12). A reader that has just started cannot tell a fresh Lease from a dead one
// at the first look; it counts the duration from that look (never early).
import { monotonicMs, type Clock } from '../clock/clock.js';
import { isNotFound, statusMessage } from '../kube/errors.js';
import type { Kube, V1Lease } from '../kube/kube.js';
import { LeaseObserver } from '../lock/lease.js';
import type { FleetHealth, GroupHealth } from '../lock/fleet-health.js';

/** Lease annotation: the fleet's health as the coordinator last judged it (FleetHealth as JSON). */
export const HEALTH_ANNOTATION = 'kured-ts.dev/fleet-health';

/** How long a released Lease is waited on for a standby to take it (the coordinator's lease duration). */
export const RELEASED_GRACE_MS = 30_000;

/** A read is reused for this long: one pass of an agent reads the Lease once. */
export const CACHE_MS = 2_000;

export type CoordinatorState =
  | { live: true; holder: string; health: FleetHealth | undefined; durationMs: number }
  | { live: false; reason: string; /** the Lease could not be read (not judged dead) */ unread?: true };

export interface CoordinatorLeaseOptions {
  kube: Kube;
  namespace: string;
  /** The Lease's name (coordinatorLeaseName(dsName)). */
  name: string;
  clock: Clock;
}

/** The coordinator's Lease name for the DaemonSet `dsName`. */
export function coordinatorLeaseName(dsName: string): string {
  return `${dsName}-coordinator`;
}

/** A GroupHealth read from JSON; undefined when it is not one. */
function groupHealthOf(value: unknown): GroupHealth | undefined {
  const v = (typeof value === 'object' && value !== null ? value : {}) as Partial<GroupHealth>;
  if (typeof v.total !== 'number' || typeof v.count !== 'number' || !Array.isArray(v.unhealthy))
    return undefined;
  return { total: v.total, count: v.count, unhealthy: v.unhealthy.filter((s) => typeof s === 'string') };
}

/** The groups of a FleetHealth read from JSON (a group that is not one is left out). */
function groupsOf(value: unknown): Record<string, GroupHealth> | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const groups: Record<string, GroupHealth> = {};
  for (const [name, g] of Object.entries(value)) {
    const health = groupHealthOf(g);
    if (health !== undefined) groups[name] = health;
  }
  return groups;
}

/** The workers ahead of the control plane read from JSON; undefined when not there or not of that shape. */
function workersOf(value: unknown): FleetHealth['workersAhead'] {
  const v = (typeof value === 'object' && value !== null ? value : {}) as {
    count?: unknown;
    names?: unknown;
  };
  if (typeof v.count !== 'number' || !Array.isArray(v.names)) return undefined;
  return { count: v.count, names: v.names.filter((s): s is string => typeof s === 'string') };
}

/** The quarantined nodes of a FleetHealth read from JSON; nothing when not there or not of that shape. */
function quarantineOf(v: Record<string, unknown>): Pick<FleetHealth, 'quarantined' | 'quarantinedCount'> {
  if (!Array.isArray(v.quarantined) || typeof v.quarantinedCount !== 'number') return {};
  return {
    quarantined: v.quarantined.filter((s): s is string => typeof s === 'string'),
    quarantinedCount: v.quarantinedCount,
  };
}

export function parseHealth(text: string | undefined): FleetHealth | undefined {
  if (text === undefined) return undefined;
  try {
    const v = JSON.parse(text) as Record<string, unknown>;
    const all = groupHealthOf(v);
    if (all === undefined) return undefined;
    const groups = groupsOf(v.groups);
    const workersAhead = workersOf(v.workersAhead);
    return {
      ...all,
      ...(typeof v.reported === 'number' ? { reported: v.reported } : {}),
      ...(groups === undefined ? {} : { groups }),
      ...(workersAhead === undefined ? {} : { workersAhead }),
      ...quarantineOf(v),
    };
  } catch {
    return undefined;
  }
}

/** A live coordinator as `lease` tells: its holder, the health it publishes, how long it is trusted. */
function live(lease: V1Lease, holder: string, durationMs: number): CoordinatorState {
  return {
    live: true,
    holder,
    health: parseHealth(lease.metadata?.annotations?.[HEALTH_ANNOTATION]),
    durationMs,
  };
}

export class CoordinatorLease {
  private readonly observed = new LeaseObserver();
  private cached: { at: number; state: CoordinatorState } | undefined;

  constructor(private readonly o: CoordinatorLeaseOptions) {}

  /** The coordinator as its Lease tells now (a read of the last CACHE_MS is reused). */
  async read(signal?: AbortSignal): Promise<CoordinatorState> {
    const now = monotonicMs(this.o.clock);
    if (this.cached !== undefined && now - this.cached.at < CACHE_MS) return this.cached.state;
    const state = await this.fetch(now, signal);
    this.cached = { at: now, state };
    return state;
  }

  private async fetch(now: number, signal?: AbortSignal): Promise<CoordinatorState> {
    const where = `Lease ${this.o.namespace}/${this.o.name}`;
    let lease: V1Lease;
    try {
      lease = await this.o.kube.getLease(this.o.namespace, this.o.name, signal);
    } catch (err) {
      if (isNotFound(err)) return { live: false, reason: `no coordinator: ${where} does not exist` };
      if (signal?.aborted === true) throw err;
      return {
        live: false,
        reason: `cannot read the coordinator's ${where}: ${statusMessage(err)}`,
        unread: true,
      };
    }
    return this.judge(lease, where, now);
  }

  private judge(lease: V1Lease, where: string, now: number): CoordinatorState {
    const holder = lease.spec?.holderIdentity ?? '';
    this.observed.observe(where, lease.metadata?.resourceVersion ?? '', now);
    if (holder === '') return this.released(lease, where, now);
    const stale = this.staleSeconds(lease, where, now);
    if (stale !== undefined) {
      return { live: false, reason: `no coordinator: ${where} of ${holder} not renewed for ${stale}s` };
    }
    return live(lease, holder, this.durationMs(lease));
  }

  /**
   * A released Lease (a leader that stopped, or stepped down because it could not see the fleet) is
   * waited on for RELEASED_GRACE_MS since this reader first saw it so: its standby takes it within a
   * retry period, and a fleet that went first come meanwhile would herd on the lock (at 5,000 nodes,
   * every waiter reading and watching the DaemonSet) only to queue again moments later.
   */
  private released(lease: V1Lease, where: string, now: number): CoordinatorState {
    if (this.observed.expired(where, RELEASED_GRACE_MS, now))
      return { live: false, reason: `no coordinator: ${where} has no holder` };
    return live(lease, 'none: released, its standby expected', RELEASED_GRACE_MS);
  }

  private durationMs(lease: V1Lease): number {
    return (lease.spec?.leaseDurationSeconds ?? 15) * 1000;
  }

  /** Seconds the Lease has gone unchanged, once that is its leaseDurationSeconds (default 15) or more. */
  private staleSeconds(lease: V1Lease, where: string, now: number): number | undefined {
    if (!this.observed.expired(where, this.durationMs(lease), now)) return undefined;
    return Math.round((now - (this.observed.since(where) ?? now)) / 1000);
  }
}
