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
import type { Kube, V1Node } from '../kube/kube.js';
import type { CoordinatorLease, FleetHealth } from '../lock/coordinator-lease.js';
import { CYCLE_LABEL } from '../node/cycle.js';
import { isQuarantined } from '../node/quarantine.js';
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

/** A node as the health gate judges it: its name, in a kured-ts cycle or not, and why it is unhealthy. */
export interface JudgedNode {
  name: string;
  inCycle: boolean;
  unhealthy: string | undefined;
  /** Carries the quarantine label (its drain failed): counted for --max-quarantined. */
  quarantined: boolean;
}

/** The node as the health gate judges it. */
export function judgeNode(node: V1Node): JudgedNode {
  return {
    name: node.metadata?.name ?? '?',
    inCycle: node.metadata?.labels?.[CYCLE_LABEL] === 'true',
    unhealthy: unhealthy(node),
    quarantined: isQuarantined(node.metadata?.labels ?? {}),
  };
}

/**
 * The fleet's health (the coordinator's view, or a list): nodes in a cycle not counted; at most
 * `shown` of the unhealthy named, and of the quarantined.
 */
export function fleetHealth(nodes: Iterable<JudgedNode>, shown: number): FleetHealth {
  const bad: string[] = [];
  const quarantined: string[] = [];
  let total = 0;
  for (const n of nodes) {
    total++;
    if (!n.inCycle && n.unhealthy !== undefined) bad.push(`${n.name} ${n.unhealthy}`);
    if (n.quarantined) quarantined.push(n.name);
  }
  bad.sort();
  quarantined.sort();
  return {
    total,
    count: bad.length,
    unhealthy: bad.slice(0, shown),
    quarantined: quarantined.slice(0, shown),
    quarantinedCount: quarantined.length,
  };
}

/** Why a node counts as unhealthy; undefined when it does not. */
export function unhealthy(node: V1Node): string | undefined {
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? 'Unknown';
  if (ready === 'Unknown' || unreachableTaint(node)) return 'unreachable';
  if (ready !== 'True') return 'not ready';
  return node.spec?.unschedulable === true ? 'cordoned' : undefined;
}

/** The node lifecycle controller's taint for a node it cannot reach. */
function unreachableTaint(node: V1Node): boolean {
  return (node.spec?.taints ?? []).some((t) => t.key === 'node.kubernetes.io/unreachable');
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
  private async health(signal?: AbortSignal): Promise<FleetHealth> {
    const coordinator = await this.options.coordinator?.read(signal);
    if (coordinator?.live === true && coordinator.health !== undefined) return coordinator.health;
    const nodes = await this.options.kube.listNodes({ resourceVersion: '0' }, signal);
    return fleetHealth(nodes.map(judgeNode), nodes.length);
  }
}
