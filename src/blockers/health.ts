// HealthBlocker: --max-unhealthy-nodes. No slot is taken while more other nodes than allowed are
// NotReady, unreachable, or cordoned by someone else: rebooting a node of a fleet that is already
// short of capacity turns a degradation into an outage. No Prometheus needed.
//
// At fleet scale no agent lists the nodes (DESIGN §13): with a live coordinator (--lock-queue fair)
// the verdict comes from the fleet health the coordinator publishes on its Lease, judged from its one
// watch of the Nodes (one small read, shared with the lock's turn). Without one, one list of the
// nodes from the API server's watch cache per decision that gets this far (a reboot is required and
// the window is open); an idle agent never runs it.
//
// Nodes in a kured-ts reboot cycle (label kured-ts.dev/rebooting) are not counted: --concurrency
// bounds them already, and counting them would let the gate stop the wave it is part of.
import type { Kube } from '../kube/kube.js';
import type { CoordinatorLease } from '../queue/coordinator-lease.js';
import type { FleetHealth } from '../lock/fleet-health.js';
import { publishedOrListed } from '../lock/fleet-census.js';
import type { Blocker, Verdict } from './blocker.js';

export interface HealthBlockerOptions {
  kube: Kube;
  nodeId: string;
  /** At most this many other nodes (or this percentage of all nodes, rounded down) unhealthy. */
  limit: { count: number } | { percent: number };
  /** The coordinator, whose published health is used while it is live. */
  coordinator?: CoordinatorLease;
}

/** The limit as a number of nodes in a fleet of `total`. */
export function maxUnhealthy(limit: { count: number } | { percent: number }, total: number): number {
  return 'count' in limit ? limit.count : Math.floor((limit.percent * total) / 100);
}

/** Names shown in a reason before "and N more". */
const SHOWN = 10;

export class HealthBlocker implements Blocker {
  readonly name = 'health';

  constructor(private readonly options: HealthBlockerOptions) {}

  /** The most other nodes that may be unhealthy in a fleet of `total`. */
  max(total: number): number {
    return maxUnhealthy(this.options.limit, total);
  }

  async check(signal?: AbortSignal): Promise<Verdict> {
    const health = await this.health(signal);
    // the others: this node is left out when it is named (a list the coordinator cut short may not
    // name it: then it counts, which can only block more)
    const self = health.unhealthy.find((s) => s.startsWith(`${this.options.nodeId} `));
    const bad = health.unhealthy.filter((s) => s !== self);
    const count = health.count - (self === undefined ? 0 : 1);
    const max = this.max(health.total);
    if (count <= max) return { blocked: false };
    const more = count > SHOWN ? `, and ${count - SHOWN} more` : '';
    return {
      blocked: true,
      reason: `${count} other nodes unhealthy (max ${max}): ${bad.slice(0, SHOWN).join(', ')}${more}`,
    };
  }

  /** The coordinator's published health while it is live, else one list of the nodes. */
  private health(signal?: AbortSignal): Promise<FleetHealth> {
    return publishedOrListed(this.options, () => true, signal);
  }
}
