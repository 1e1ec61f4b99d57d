// HealthBlocker: --max-unhealthy-nodes. No slot is taken while more other nodes than allowed are
// NotReady, unreachable, or cordoned by someone else: rebooting a node of a fleet that is already
// short of capacity turns a degradation into an outage. No Prometheus needed: one list of the
// nodes, from the API server's watch cache, per decision that gets this far (a reboot is required
// and the window is open); an idle agent never runs it.
//
// Nodes in a kured-ts reboot cycle (label kured-ts.dev/rebooting) are not counted: --concurrency
// bounds them already, and counting them would let the gate stop the wave it is part of.
import type { Kube, V1Node } from '../kube/kube.js';
import { CYCLE_LABEL } from '../node/cycle.js';
import type { Blocker, Verdict } from './blocker.js';

export interface HealthBlockerOptions {
  kube: Kube;
  nodeId: string;
  /** At most this many other nodes (or this percentage of all nodes, rounded down) unhealthy. */
  limit: { count: number } | { percent: number };
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
    const { limit } = this.options;
    return 'count' in limit ? limit.count : Math.floor((limit.percent * total) / 100);
  }

  async check(signal?: AbortSignal): Promise<Verdict> {
    const nodes = await this.options.kube.listNodes({ resourceVersion: '0' }, signal);
    const bad = nodes
      .filter((n) => n.metadata?.name !== this.options.nodeId)
      .filter((n) => n.metadata?.labels?.[CYCLE_LABEL] !== 'true')
      .flatMap((n) => {
        const why = unhealthy(n);
        return why === undefined ? [] : [`${n.metadata?.name ?? '?'} ${why}`];
      })
      .sort();
    const max = this.max(nodes.length);
    if (bad.length <= max) return { blocked: false };
    const more = bad.length > SHOWN ? `, and ${bad.length - SHOWN} more` : '';
    return {
      blocked: true,
      reason: `${bad.length} other nodes unhealthy (max ${max}): ${bad.slice(0, SHOWN).join(', ')}${more}`,
    };
  }
}
