// MaxQuarantinedBlocker: --max-quarantined. When more nodes than allowed are quarantined (their drain
// failed: src/node/quarantine.ts), no new cycle starts anywhere: so many undrainable nodes say that
// something is wrong with the fleet's workloads, and an operator should look before the wave goes on
// (AKS stops an upgrade at maxBlockedNodes). The node itself is not counted: a quarantined node whose
// pods changed may still try again, and its success lowers the count.
//
// The count comes from the fleet health the live coordinator publishes on its Lease (DESIGN §13);
// without one, one list of the nodes from the API server's watch cache per decision that gets this far.
import type { Kube } from '../kube/kube.js';
import type { CoordinatorLease } from '../queue/coordinator-lease.js';
import type { FleetHealth } from '../lock/fleet-health.js';
import { QUARANTINE_LABEL } from '../node/quarantine.js';
import { publishedOrListed } from '../lock/fleet-census.js';
import { maxUnhealthy } from './health.js';
import type { Blocker, Verdict } from './blocker.js';

export interface MaxQuarantinedBlockerOptions {
  kube: Kube;
  nodeId: string;
  /** At most this many other nodes (or this percentage of all nodes, rounded down) quarantined. */
  limit: { count: number } | { percent: number };
  /** The coordinator, whose published count is used while it is live. */
  coordinator?: CoordinatorLease;
}

/** How the reason of a halt begins (the simulator tells a halted wave by it). */
export const HALT_REASON = 'halted';

/** Names shown in a reason before "and N more". */
const SHOWN = 10;

export class MaxQuarantinedBlocker implements Blocker {
  readonly name = 'max-quarantined';

  constructor(private readonly options: MaxQuarantinedBlockerOptions) {}

  async check(signal?: AbortSignal): Promise<Verdict> {
    const health = await this.health(signal);
    const names = health.quarantined ?? [];
    const self = names.includes(this.options.nodeId);
    const others = names.filter((n) => n !== this.options.nodeId);
    const count = (health.quarantinedCount ?? names.length) - (self ? 1 : 0);
    const max = maxUnhealthy(this.options.limit, health.total);
    if (count <= max) return { blocked: false };
    const more = count > SHOWN ? `, and ${count - SHOWN} more` : '';
    return {
      blocked: true,
      reason: `${HALT_REASON}: ${count} other nodes quarantined (--max-quarantined ${max}): ${others.slice(0, SHOWN).join(', ')}${more}; no new cycle starts anywhere until fewer are (an operator removes the label ${QUARANTINE_LABEL} from a node to release it)`,
    };
  }

  /** The coordinator's published health while it is live (and counts quarantines), else one list. */
  private health(signal?: AbortSignal): Promise<FleetHealth> {
    return publishedOrListed(this.options, (h) => h.quarantined !== undefined, signal);
  }
}
