// The simulated people and controllers beside the agents: an operator who approves reboots
// (simulate --approve-every), an admin who runs `kured-ts reboot NODE` (simulate --reboot-now) and an
// autoscaler that removes empty nodes (simulate --autoscaler, src/sim/autoscaler.ts).
import { APPROVAL_ANNOTATION, formatApproval } from '../node/approval.js';
import { formatRebootRequest, REBOOT_REQUEST_ANNOTATION, rebootRequestOf } from '../node/reboot-request.js';
import type { SimAutoscaler } from './autoscaler.js';
import type { SimCluster } from './cluster.js';
import type { SimServer } from './objects.js';
import type { Violation } from './violation.js';
import type { VirtualTime } from './virtual-time.js';

/** What they act on. */
export interface OperatorContext {
  time: VirtualTime;
  cluster: SimCluster;
  server: SimServer;
  startMs: number;
  /** Where a mistake in the run's own settings goes (the report's agent errors). */
  errors: string[];
  violations: Violation[];
  /** The run is over: periodic actors stop rescheduling. */
  finished: () => boolean;
}

/** The simulated admin's `kured-ts reboot NODE --reason … [--now]`, at the start. */
export function writeRebootRequests(
  ctx: OperatorContext,
  requests: readonly { node: string; now: boolean }[],
): void {
  const at = new Date(ctx.startMs).toISOString();
  for (const { node: name, now } of requests) {
    const node = ctx.cluster.nodeObject(name);
    if (!node) {
      ctx.errors.push(`reboot request for ${name}: no such node`);
      continue;
    }
    const request = formatRebootRequest({ by: 'sim-admin', reason: 'simulated request', at, now });
    const annotations = { ...node.metadata.annotations, [REBOOT_REQUEST_ANNOTATION]: request };
    ctx.server.update('nodes', { ...node, metadata: { ...node.metadata, annotations } });
  }
}

/** Writes the approval on a node that has none, as `kured-ts approve` does; whether it wrote one. */
export function approve(ctx: OperatorContext, name: string): boolean {
  const node = ctx.cluster.nodeObject(name);
  if (!node || node.metadata.annotations?.[APPROVAL_ANNOTATION] !== undefined) return false;
  const at = new Date(ctx.time.nowMs()).toISOString();
  const approval = formatApproval({ by: 'sim-operator', at });
  const annotations = { ...node.metadata.annotations, [APPROVAL_ANNOTATION]: approval };
  ctx.server.update('nodes', { ...node, metadata: { ...node.metadata, annotations } });
  return true;
}

/** Does an admin's request stand on node `name`? */
export function requested(cluster: SimCluster, name: string): boolean {
  return rebootRequestOf(cluster.nodeObject(name)?.metadata.annotations ?? {}) !== undefined;
}

/**
 * The simulated autoscaler scans every `everyMs` until the run ends (past the wave: the settle).
 * Under the agents' protection (`guarded`), a removal in a cycle or its settle is a violation.
 */
export function runAutoscaler(
  ctx: OperatorContext,
  autoscaler: SimAutoscaler,
  everyMs: number,
  guarded: boolean,
): void {
  const { time, cluster } = ctx;
  const tick = (): void => {
    if (ctx.finished()) return;
    const before = autoscaler.removals.length;
    const nodes = cluster.nodeList().map((node) => ({
      node,
      empty: cluster.evictableOn(node.metadata.name).length === 0,
    }));
    autoscaler.scan(nodes, time.nowMs(), time.nowMs() - ctx.startMs);
    for (const r of autoscaler.removals.slice(before)) {
      if (!guarded || r.when === 'after') continue;
      ctx.violations.push({
        atMs: r.atMs,
        node: r.node,
        rule: 'removed-by-autoscaler',
        detail: `the simulated autoscaler removed the node in its ${r.when === 'cycle' ? 'reboot cycle' : 'settle time'}`,
      });
    }
    time.schedule(time.nowMs() + everyMs, tick);
  };
  time.schedule(ctx.startMs + everyMs, tick);
}
