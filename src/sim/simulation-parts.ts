// Small pieces of a simulation run that need none of its state (simulation.ts runs it).
import { NODE_NAME_EXTRA } from '../admission/agent-policy.js';
import { simAgentPolicies } from './agent-config.js';
import { CelAdmission } from './fake-api/cel-admission.js';
import type { SimCluster } from './cluster.js';
import type { SimServer } from './objects.js';
import type { Observer } from './observer.js';
import type { Violation } from './violation.js';
import type { NodeResult, SimulationOptions, SimulationResult } from './simulation-types.js';
import { costRows, costRowsByNode } from './api-cost.js';
import type { KubeCounters } from './tracked-kube.js';

/** Mean time from reboot required to lock taken, over the nodes that took the lock. */
export function meanPrep(nodes: readonly NodeResult[]): number {
  const spans = nodes.flatMap((n) =>
    n.lockedAtMs !== undefined && n.requiredAtMs !== undefined ? [n.lockedAtMs - n.requiredAtMs] : [],
  );
  return spans.length === 0 ? 0 : spans.reduce((a, b) => a + b, 0) / spans.length;
}

/** The policy enforcement of a run (the chart's policy unless told otherwise), or none. */
export function admissionFor(options: SimulationOptions): CelAdmission | undefined {
  if (options.enforcePolicy === false) return undefined;
  const admission = new CelAdmission(options.admissionPolicies ?? simAgentPolicies(options.agent));
  admission.onReview = options.onAdmission;
  return admission;
}

/** Every agent write the admission policy denied, as an invariant violation at `atMs`. */
export function denialViolations(admission: CelAdmission | undefined, atMs: number): Violation[] {
  return (admission?.denials ?? []).map((d) => {
    const a = d.attributes;
    const resource = a.subResource === '' ? a.resource.resource : `${a.resource.resource}/${a.subResource}`;
    return {
      atMs,
      node: a.userInfo.extra[NODE_NAME_EXTRA]?.[0] ?? '?',
      rule: 'write-denied-by-policy',
      detail: `${a.operation} ${resource} ${a.name}: ${d.denied ?? ''}`,
    };
  });
}

/** Per node: its reboots, its work and when it held a slot. */
export function nodeResults(
  cluster: SimCluster,
  observer: Observer,
  options: SimulationOptions,
  startMs: number,
): NodeResult[] {
  const spec = options.cluster;
  const physical = spec.shutdownMs + spec.bootTimeMs + spec.podStartMs;
  return cluster.names.map((name) => {
    const state = cluster.nodes.get(name);
    const t = observer.timeline.get(name);
    const drain = (t?.drainMs ?? []).reduce((a, b) => a + b, 0);
    const reboots = state?.reboots ?? 0;
    const required = cluster.requiredAtMs.get(name);
    return {
      name,
      neededReboot: cluster.neededAtStart(name),
      reboots,
      workMs: drain + reboots * (physical + options.agent.rebootDelayMs),
      lockedAtMs: t?.lockedAtMs,
      releasedAtMs: t?.releasedAtMs,
      requiredAtMs: required === undefined ? undefined : required - startMs,
      finalPhase: t?.phase ?? 'unknown',
    };
  });
}
/**
 * The drain's evictions the server answered: accepted, refused by a PDB, or failed with a 5xx (the
 * server's failure, committed or not: --eviction-errors). Dry runs count for nothing.
 */
export function countEvictions(requests: SimServer['requests']): {
  accepted: number;
  refused: number;
  failed: number;
} {
  const evictions = { accepted: 0, refused: 0, failed: 0 };
  for (const r of requests) {
    if (r.method !== 'POST' || !r.path.endsWith('/eviction') || r.query.dryRun === 'All') continue;
    if (r.status === 201) evictions.accepted++;
    else if (r.status === 429) evictions.refused++;
    else if (r.status >= 500) evictions.failed++;
  }
  return evictions;
}

/** The requests of `node`'s agent so far: those the server served, and its watches of the feed. */
export function requestsBy(
  server: Pick<SimServer, 'requestsBy'>,
  counters: Pick<KubeCounters, 'watchesBy'>,
  node: string,
): number {
  return server.requestsBy(node) + (counters.watchesBy[node] ?? 0);
}

/**
 * The cost tables of a run (api-cost.ts): the agents', everyone else's (the coordinator's), each
 * node's agent's by name (its whole run: idle passes and its cycle), and each node's cycle: its
 * requests since its need (`atNeed`, requestsBy when its reboot became required).
 */
export function costTables(
  server: Pick<SimServer, 'requests' | 'requestsBy'>,
  counters: Pick<KubeCounters, 'feed' | 'watchesBy'>,
  atNeed: ReadonlyMap<string, number>,
): SimulationResult['cost'] {
  const watches = Object.values(counters.feed);
  return {
    agents: costRows(server.requests, watches, 'agents'),
    other: costRows(server.requests, watches, 'other'),
    byNode: costRowsByNode(server.requests, watches),
    cycles: Object.fromEntries(
      [...atNeed].map(([node, at]) => [node, requestsBy(server, counters, node) - at]),
    ),
  };
}
