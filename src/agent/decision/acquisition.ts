// What a node's agent names in its acquisition of a slot, from its labels: its group, its role and
// its wave. The agent's pass and `kured-ts check` both take it from here (the lock judges by it).
import type { Config } from '../../config/config.js';
import type { LockMetadata } from '../../lock/lock.js';
import type { NodeState } from '../../node/node.js';
import { isControlPlane } from '../../node/role.js';
import { waveOf } from '../../node/wave.js';

/** The --group-label and the flags that make the lock judge by group. */
export type GroupConfig = Pick<Config, 'groupConcurrency' | 'groupOrder' | 'groupLabel'>;

/**
 * With --group-concurrency or --group-order sequential: the node's group (its --group-label value,
 * '' without one) for the lock.
 */
export function groupOf(config: GroupConfig, labels: Readonly<Record<string, string>>): { group?: string } {
  if (config.groupConcurrency === undefined && config.groupOrder.kind !== 'sequential') return {};
  return { group: labels[config.groupLabel] ?? '' };
}

/** A control-plane node says so in its slot (one at a time, after the workers: src/capacity/room.ts). */
export function roleOf(labels: Readonly<Record<string, string>>): { controlPlane?: boolean } {
  return isControlPlane(labels) ? { controlPlane: true } : {};
}

/** Its group, its role and, when waves are tracked, its wave (whose gates judge it). */
function acquisitionOf(
  config: GroupConfig,
  labels: Readonly<Record<string, string>>,
  wavesTracked: boolean,
): Pick<LockMetadata, 'group' | 'controlPlane' | 'wave'> {
  const wave = wavesTracked ? waveOf(labels)?.wave : undefined;
  return { ...groupOf(config, labels), ...roleOf(labels), ...(wave === undefined ? {} : { wave }) };
}

/**
 * Everything the node names when it asks for a slot: its cordon and bootID as last read, beside
 * acquisitionOf. The agent's takeSlot and `kured-ts check` (which asks wouldAcquire as it would).
 */
export function slotMetaOf(
  config: GroupConfig,
  node: Pick<NodeState, 'labels' | 'unschedulable' | 'bootID'>,
  wavesTracked: boolean,
): LockMetadata {
  return {
    unschedulable: node.unschedulable,
    bootID: node.bootID,
    ...acquisitionOf(config, node.labels, wavesTracked),
  };
}
