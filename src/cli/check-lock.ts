// `check`'s lock item: the agent's own DaemonSetLock for the node, reading only: held by the node,
// or would acquire() give it a slot now, and which fleet gate holds it back if not.
import { coordinatorOf, createLock } from '../agent/create-agent.js';
import type { Clock } from '../clock/clock.js';
import type { Kube, V1Node } from '../kube/kube.js';
import type { DaemonSetLock } from '../lock/daemonset-lock.js';
import type { LockHolder, LockMetadata } from '../lock/lock.js';
import { waveTracked } from '../lock/wave-gate.js';
import { silentLogger } from '../log/logger.js';
import { CYCLE_ANNOTATION } from '../node/cycle.js';
import { isControlPlane } from '../node/role.js';
import { waveOf } from '../node/wave.js';
import type { CheckItem } from './check-report.js';
import type { Config } from '../config/config.js';

/** What `check` needs from the agent's configuration. */
export type CheckConfig = Pick<
  Config,
  | 'window'
  | 'rebootRetries'
  | 'maxRebootsPerNeed'
  | 'packageManagerWaitMs'
  | 'rebootMethod'
  | 'hostRoot'
  | 'dsNamespace'
  | 'dsName'
  | 'lockAnnotation'
  | 'lockTtlMs'
  | 'concurrency'
  | 'concurrencyPercent'
  | 'lockQueue'
  | 'coordinator'
  | 'groupLabel'
  | 'groupConcurrency'
  | 'groupConcurrencyPercent'
  | 'countUnavailable'
  | 'controlPlaneLast'
  | 'maxUnhealthyNodes'
  | 'quarantineRetryMs'
  | 'maxQuarantined'
  | 'requireApproval'
  | 'approvalTtlMs'
  | 'blockingPodSelectors'
  | 'prometheusUrl'
  | 'proxy'
  | 'blockingQueries'
  | 'alertFilterRegexp'
  | 'alertFilterMatchOnly'
  | 'alertFiringOnly'
  | 'blockOnPdb'
  | 'taintTiming'
  | 'drainPodSelector'
  | 'drainRules'
  | 'drainGracePeriodSeconds'
  | 'singleReplica'
  | 'rebootSentinel'
  | 'rebootSentinelCommand'
  | 'hostExec'
  | 'fleetlockUrl'
  | 'fleetlockGroup'
  | 'postRebootTimeoutMs'
  | 'healthChecks'
  | 'waveStart'
  | 'waveGrowth'
  | 'soakMs'
  | 'maxFailures'
  | 'groupOrder'
>;

/** The node `check` judges, and the agent's flags. */
interface CheckOptions {
  node: string;
  config: CheckConfig;
}

export interface LockItem extends CheckItem {
  held?: LockHolder;
}

/**
 * The agent's own lock for `options.node` (createLock: with the coordinated queue's turns, as the
 * agent has them), reading only (through a ReadOnlyKube).
 */
function agentLock(options: CheckOptions, clock: Clock, kube: Kube): DaemonSetLock {
  const config = { ...options.config, nodeId: options.node };
  const io = { kube, clock, logger: silentLogger };
  return createLock(config, io, coordinatorOf(config, io));
}

/** The lock as the agent's own DaemonSetLock sees it: held by us, or would acquire() give us a slot? */
export async function evaluateLock(
  options: CheckOptions,
  clock: Clock,
  at: { kube: Kube; node: V1Node },
  signal: AbortSignal,
): Promise<LockItem> {
  const { kube, node } = at;
  const lock = agentLock(options, clock, kube);
  const held = await lock.holding(signal);
  if (held && node.metadata?.annotations?.[CYCLE_ANNOTATION] !== undefined) {
    return {
      name: 'lock',
      verdict: 'ok',
      detail: `held by this node since ${held.created.toISOString()}`,
      held,
    };
  }
  const item = await newAcquisition(options.config, lock, node, signal);
  if (!held) return item;
  // an entry naming this node that no cycle of its own proves is judged as a new acquisition (DESIGN
  // §12); a refusal already says, in the agent's words, that the agent removes that entry
  if (item.verdict === 'blocks') return { ...item, held };
  return {
    ...item,
    detail: `${item.detail}; the entry naming this node is not proven by a cycle of its own`,
    held,
  };
}

/** What the node's agent names in its acquisition: its group, its role, its wave (whose gates judge it). */
function acquisitionOf(
  config: CheckConfig,
  labels: Record<string, string>,
): Pick<LockMetadata, 'group' | 'controlPlane' | 'wave'> {
  const grouped = config.groupConcurrency > 0 || config.groupOrder.kind === 'sequential';
  const group = grouped ? (labels[config.groupLabel] ?? '') : undefined;
  const wave = waveTracked(config) ? waveOf(labels)?.wave : undefined;
  return {
    ...(group === undefined ? {} : { group }),
    ...(isControlPlane(labels) ? { controlPlane: true } : {}),
    ...(wave === undefined ? {} : { wave }),
  };
}

/** Would acquire() give this node a slot, as a new acquisition? */
async function newAcquisition(
  config: CheckConfig,
  lock: DaemonSetLock,
  node: V1Node,
  signal: AbortSignal,
): Promise<LockItem> {
  const metadata = acquisitionOf(config, node.metadata?.labels ?? {});
  const result = await lock.wouldAcquire(signal, metadata);
  if (result.acquired) return { name: 'lock', verdict: 'ok', detail: freeSlot(config, metadata.group) };
  // the fleet gate that holds it back, named as kured_ts_blocked names it
  const gate = result.gate === undefined ? {} : { gate: result.gate };
  return { name: 'lock', verdict: 'blocks', detail: result.reason, ...gate };
}

/** A free slot, with the node's group under --group-concurrency (`group` undefined without). */
function freeSlot(config: CheckConfig, group: string | undefined): string {
  const slots =
    config.concurrencyPercent > 0 ? `${config.concurrencyPercent}% of the nodes` : String(config.concurrency);
  if (group === undefined) return `a slot is free (${slots} slot(s))`;
  const which = group === '' ? 'none: no such label' : `${config.groupLabel}=${group}`;
  const share =
    config.groupConcurrencyPercent > 0 ? `${config.groupConcurrencyPercent}%` : config.groupConcurrency;
  const perGroup = `${share} per ${config.groupLabel}; this node's group ${which}`;
  return `a slot is free (${slots} slot(s), ${perGroup})`;
}
