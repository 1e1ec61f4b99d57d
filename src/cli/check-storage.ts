// `check --node`'s lines about the data on the node: the volumes the wait after the drain would wait
// for, and the node checks (--node-check) as the agent judges them after the drain.
import { NodeChecks, collectionOf } from '../blockers/node-check.js';
import { WorkerCel } from '../cel/worker-cel.js';
import { planDrain } from '../drain/drain-plan.js';
import { KubeVolumeReads } from '../drain/volume-reads.js';
import type { Kube, V1Node, V1Pod } from '../kube/kube.js';
import { toNodeState } from '../node/kube-node-ops.js';
import { shortDuration } from '../text/duration.js';
import { judgeVolumes, volumeList } from '../volumes/volumes.js';
import type { CheckConfig } from './check-lock.js';
import type { CheckItem } from './check-report.js';

/**
 * The volumes attached to the node or in use on it, as the wait after the drain judges them (the
 * agent's judgeVolumes): those it would wait for, and those of the pods the drain leaves.
 */
export async function evaluateVolumes(
  config: CheckConfig,
  node: V1Node,
  kube: Kube,
  signal?: AbortSignal,
): Promise<CheckItem> {
  const volumes = toNodeState(node).volumes ?? { attached: [], inUse: [] };
  const attached = judgeVolumes(volumes, new Set());
  if (attached.waiting.length === 0) return { name: 'volumes', verdict: 'ok', detail: 'none attached' };
  const timeout = config.volumeDetachTimeoutMs;
  if (timeout <= 0)
    return {
      name: 'volumes',
      verdict: 'ok',
      detail: `${volumeList(attached.waiting)} attached; not waited for (--volume-detach-timeout 0)`,
    };
  // before the drain: the pods its plan leaves (skipped, passed over) keep their volumes
  const rules = { podSelector: config.drainPodSelector, rules: config.drainRules };
  const leaves = (pod: V1Pod): boolean =>
    ['skip', 'ignore'].includes(planDrain([pod], rules)[0]?.action ?? '');
  const kept = await new KubeVolumeReads({ kube, nodeId: node.metadata?.name ?? '' }).kept(signal, leaves);
  const judged = judgeVolumes(volumes, kept);
  const left =
    judged.kept.length === 0 ? '' : `; not waited for (pods left on the node): ${volumeList(judged.kept)}`;
  const waits = judged.waiting.length === 0 ? 'none of them' : volumeList(judged.waiting);
  return {
    name: 'volumes',
    verdict: 'ok',
    detail: `after the drain the reboot waits until detached: ${waits} (at most --volume-detach-timeout ${shortDuration(timeout)})${left}`,
  };
}

/**
 * Each --node-check of after the drain (after-drain, always) as the agent judges it there (one LIST
 * each, the expression with this Node): a check false now is what the reboot would wait for (at most
 * --volume-detach-timeout); before the drain that is expected of a check about the node's own
 * volumes. The at-slot and always checks are the node-check blocker's line.
 */
export async function evaluateNodeChecks(
  config: CheckConfig,
  node: V1Node,
  kube: Kube,
  signal?: AbortSignal,
): Promise<CheckItem[]> {
  const nodeId = node.metadata?.name ?? '';
  const checks = new NodeChecks({ kube, nodeId, checks: config.nodeChecks, cel: new WorkerCel() });
  if (checks.afterDrain.length === 0) return [];
  const timeout = shortDuration(config.volumeDetachTimeoutMs);
  return (await checks.evaluate(checks.afterDrain, signal)).map((r) => ({
    name: 'node check',
    verdict: 'ok',
    detail: r.ok
      ? `${r.check.text}: true now (${collectionOf(r.check)})`
      : `${r.check.text}: ${r.reason} now; after the drain the reboot waits until it is true (at most --volume-detach-timeout ${timeout})`,
  }));
}
