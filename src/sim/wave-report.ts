// The wave as a simulation ends it (--wave-start, --max-failures, --group-order, --bad-kernel): whether
// its failure budget halted it (a fleet pause by kured-ts on the lock's DaemonSet), which nodes
// failed, how many were touched, how far a bad kernel spread, and the order the zones went in.
import { WAVE_STATE_LABEL } from '../node/wave.js';
import { FLEET_PAUSE_ANNOTATION, isWaveHalt, parseFleetPause } from '../pause/fleet-pause.js';
import { DS_NAME, DS_NAMESPACE, ZONE_LABEL } from './cluster-spec.js';
import type { SimCluster } from './cluster.js';
import type { SimDaemonSet, SimServer } from './objects.js';
import type { Observer } from './observer.js';

/** What the report says of the wave; undefined when nothing of it happened. */
export interface WaveResult {
  /** The halt's reason, when the failure budget halted the wave. */
  halted?: string;
  /** Nodes whose wave state says failed. */
  failed: string[];
  /** Nodes that took a slot (and so began their reboot cycle) in the run. */
  touched: number;
  /** --bad-kernel: the node that took it, and how many nodes began their reboot after it. */
  badKernel?: { node: string; rebootedAfter: number };
  /** With zones: each zone's first and last slot taken (virtual ms), in the order they started. */
  zones?: { zone: string; firstMs: number; lastMs: number }[];
}

/** The halt of a wave by its budget standing on the lock's DaemonSet, if one does. */
export function waveHalt(server: SimServer): string | undefined {
  const ds = server.get<SimDaemonSet>('daemonsets', DS_NAMESPACE, DS_NAME);
  const pause = parseFleetPause(ds?.metadata.annotations?.[FLEET_PAUSE_ANNOTATION]);
  return isWaveHalt(pause) ? pause.reason : undefined;
}

/** Does the node's own label say it failed in its wave? */
export function failedInWave(cluster: SimCluster, name: string): boolean {
  return cluster.nodeObject(name)?.metadata.labels?.[WAVE_STATE_LABEL] === 'failed';
}

/**
 * The nodes that failed in their wave: such a node keeps its slot and cordon (--on-post-reboot-timeout
 * hold) until an operator looks at it, so the run is done without them.
 */
export function failedNodes(cluster: SimCluster): Set<string> {
  return new Set(cluster.names.filter((n) => failedInWave(cluster, n)));
}

/** Of `failed`, those cordoned now. */
export function cordonedFailed(cluster: SimCluster, failed: ReadonlySet<string>): number {
  return [...failed].filter((n) => cluster.nodeObject(n)?.spec.unschedulable === true).length;
}

/**
 * A halted wave has settled: no host is going down or booting, and every node still holding a slot or
 * in its cycle is one that failed (it keeps its slot: --on-post-reboot-timeout hold). The cycles past
 * their drain when it halted have finished; the others gave their slot back.
 */
export function haltSettled(cluster: SimCluster, observer: Observer): boolean {
  for (const state of cluster.nodes.values()) if (state.rebooting) return false;
  if (observer.holders.some((h) => !failedInWave(cluster, h))) return false;
  return [...observer.inCycle].every((n) => failedInWave(cluster, n));
}

/** What a node that failed in a halted wave leaves on purpose: its slot and its cordon (and taint). */
const KEPT_BY_A_FAILED_NODE = new Set(['left-cordoned', 'taint-left', 'lock-left']);

/**
 * The end-state checks' findings less those of the nodes that failed in their wave: such a node keeps
 * its slot and cordon (--on-post-reboot-timeout hold) until an operator looks at it.
 */
export function excuseFailedNodes(violations: { node: string; rule: string }[], cluster: SimCluster): void {
  for (let i = violations.length - 1; i >= 0; i--) {
    const v = violations[i];
    if (v !== undefined && KEPT_BY_A_FAILED_NODE.has(v.rule) && failedInWave(cluster, v.node))
      violations.splice(i, 1);
  }
}

/** The wave at the end of a run; undefined when no node was in one and no bad kernel was simulated. */
export function waveResult(
  server: SimServer,
  cluster: SimCluster,
  locks: readonly { name: string; lockedAtMs?: number | undefined }[],
): WaveResult | undefined {
  const failed = cluster.names.filter((n) => failedInWave(cluster, n));
  const halted = waveHalt(server);
  const bad = cluster.badKernel.node;
  const tracked = cluster.names.some(
    (n) => cluster.nodeObject(n)?.metadata.labels?.[WAVE_STATE_LABEL] !== undefined,
  );
  if (!tracked && bad === undefined) return undefined;
  const order = cluster.badKernel.order;
  return {
    ...(halted === undefined ? {} : { halted }),
    failed,
    touched: locks.filter((n) => n.lockedAtMs !== undefined).length,
    ...(bad === undefined
      ? {}
      : { badKernel: { node: bad, rebootedAfter: order.length - order.indexOf(bad) - 1 } }),
    ...zonesOf(cluster, locks),
  };
}

/** With zones: when each zone's first and last slot were taken, the zones in the order they started. */
function zonesOf(
  cluster: SimCluster,
  locks: readonly { name: string; lockedAtMs?: number | undefined }[],
): Pick<WaveResult, 'zones'> {
  const spans = new Map<string, { zone: string; firstMs: number; lastMs: number }>();
  for (const { name, lockedAtMs } of locks) {
    const zone = cluster.nodeObject(name)?.metadata.labels?.[ZONE_LABEL];
    if (zone === undefined || lockedAtMs === undefined) continue;
    const span = spans.get(zone) ?? { zone, firstMs: lockedAtMs, lastMs: lockedAtMs };
    span.firstMs = Math.min(span.firstMs, lockedAtMs);
    span.lastMs = Math.max(span.lastMs, lockedAtMs);
    spans.set(zone, span);
  }
  if (spans.size === 0) return {};
  return { zones: [...spans.values()].sort((a, b) => a.firstMs - b.firstMs) };
}
