// `check`'s lock item: the agent's own DaemonSetLock for the node, reading only: held by the node,
// or would acquire() give it a slot now, and which fleet gate holds it back if not.
import { coordinatorOf, createLock } from '../agent/create-agent.js';
import type { Clock } from '../clock/clock.js';
import type { Kube, V1Node } from '../kube/kube.js';
import type { AcquireResult, Lock, LockHolder, LockMetadata } from '../lock/lock.js';
import { silentLogger } from '../log/logger.js';
import { CYCLE_ANNOTATION } from '../node/cycle.js';
import type { CheckItem } from './check-report.js';
import { budgetCount, budgetText, type Budget } from '../config/budget.js';
import type { Config } from '../config/config.js';
import type { PolicyConfig } from '../admission/agent-policy.js';

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
  | 'lockQueue'
  | 'coordinator'
  | 'groupLabel'
  | 'groupConcurrency'
  | 'countUnavailable'
  | 'controlPlaneLast'
  | 'maxUnhealthyNodes'
  | 'quarantineRetryMs'
  | 'volumeDetachTimeoutMs'
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
  | 'nodeChecks'
  | 'silenceMatchers'
  | 'waveStart'
  | 'waveGrowth'
  | 'soakMs'
  | 'maxFailures'
  | 'groupOrder'
> &
  PolicyConfig;

export interface LockItem extends CheckItem {
  held?: LockHolder;
}

/** What `check` asks the lock: the agent's own, through a read-only Kube. */
export type CheckLock = Pick<Lock, 'holding' | 'wouldAcquire'>;

/**
 * The agent's own lock for `node` (createLock: with the coordinated queue's turns, as the agent has
 * them), reading only (through a ReadOnlyKube); wouldAcquire asked once per acquisition and its answer kept, so that
 * the lock's line and the agent's steps that `check` runs read the same answer.
 */
export function checkLock(config: CheckConfig, node: string, clock: Clock, kube: Kube): CheckLock {
  const withNode = { ...config, nodeId: node };
  const io = { kube, clock, logger: silentLogger };
  const lock = createLock(withNode, io, coordinatorOf(withNode, io));
  const answers = new Map<string, Promise<AcquireResult>>();
  return {
    holding: (signal) => lock.holding(signal),
    wouldAcquire: (signal, as) => {
      const key = JSON.stringify(as ?? {});
      const answer = answers.get(key) ?? lock.wouldAcquire(signal, as);
      answers.set(key, answer);
      return answer;
    },
  };
}

/**
 * The lock as the agent's own lock sees it: held by us, or would acquire() give us a slot, as a new
 * acquisition naming `meta` (the agent's own: acquisitionOf)?
 */
export async function evaluateLock(
  config: CheckConfig,
  lock: CheckLock,
  at: { node: V1Node; meta: LockMetadata },
  signal: AbortSignal,
): Promise<LockItem> {
  const { node, meta } = at;
  const held = await lock.holding(signal);
  if (held && node.metadata?.annotations?.[CYCLE_ANNOTATION] !== undefined) {
    return {
      name: 'lock',
      verdict: 'ok',
      detail: `held by this node since ${held.created.toISOString()}`,
      held,
    };
  }
  const item = await newAcquisition(config, lock, meta, signal);
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

/** Would acquire() give this node a slot, as a new acquisition? */
async function newAcquisition(
  config: CheckConfig,
  lock: CheckLock,
  meta: LockMetadata,
  signal: AbortSignal,
): Promise<LockItem> {
  const result = await lock.wouldAcquire(signal, meta);
  if (result.acquired) return { name: 'lock', verdict: 'ok', detail: freeSlot(config, meta.group) };
  // the fleet gate that holds it back, named as kured_ts_blocked names it
  const gate = result.gate === undefined ? {} : { gate: result.gate };
  return { name: 'lock', verdict: 'blocks', detail: result.reason, ...gate };
}
/** A free slot, with the node's group under --group-concurrency (`group` undefined without). */
function freeSlot(config: CheckConfig, group: string | undefined): string {
  const share = (budget: Budget): string =>
    budgetCount(budget) === undefined ? `${budgetText(budget)} of the nodes` : budgetText(budget);
  const slots = share(config.concurrency);
  if (group === undefined) return `a slot is free (${slots} slot(s))`;
  const which = group === '' ? 'none: no such label' : `${config.groupLabel}=${group}`;
  const perGroup = `${config.groupConcurrency === undefined ? '0' : budgetText(config.groupConcurrency)} per ${config.groupLabel}; this node's group ${which}`;
  return `a slot is free (${slots} slot(s), ${perGroup})`;
}
