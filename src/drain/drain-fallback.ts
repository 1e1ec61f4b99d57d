// --drain-fallback delete: pods whose eviction was still refused when --drain-timeout passed (a
// PodDisruptionBudget that never allows, 429s without end) are deleted instead, as kubectl drain
// --disable-eviction does. Only pods the drain would have evicted: a drain rule's `skip` and
// `wait-completed` pods are never targets. Each deletion is conditioned on the pod's UID, so a pod
// recreated under the same name (a StatefulSet's) is never deleted in its place.
import { isConflict, isNotFound, statusMessage } from '../kube/errors.js';
import type { Kube } from '../kube/kube.js';
import type { Logger } from '../log/logger.js';
import type { Target } from './drain-target.js';

/** Beyond the pods' grace period, how long the drain waits for deleted pods to be gone. */
const FALLBACK_MARGIN_MS = 10_000;
/** A pod's grace period when it sets none (kube's default). */
const DEFAULT_GRACE_SECONDS = 30;

export interface FallbackOptions {
  kube: Kube;
  log: Logger;
  node: string;
  /** --drain-grace-period in seconds; undefined = each pod's own. */
  grace: number | undefined;
}

/** The longest grace period the deleted pods get. */
function graceSeconds(targets: readonly Target[], grace: number | undefined): number {
  if (grace !== undefined) return grace;
  return Math.max(
    0,
    ...targets.map((t) => t.pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS),
  );
}

/** Deletes one refused target: marked deleted and waited for, or gone, or left with the reason. */
async function deleteOne(t: Target, o: FallbackOptions, signal: AbortSignal | undefined): Promise<void> {
  const [namespace = 'default', name = ''] = t.key.split('/');
  try {
    await o.kube.deletePod(namespace, name, { uid: t.uid, gracePeriodSeconds: o.grace }, signal);
  } catch (err) {
    if (signal?.aborted === true) throw err;
    deleteFailed(t, err, o);
    return;
  }
  Object.assign(t, {
    state: 'evicted',
    deleted: true,
    reason: 'deleted (--drain-fallback), still terminating',
  });
  o.log.warn('pod deleted: eviction refused until --drain-timeout', { node: o.node, pod: t.key, pdb: t.pdb });
}

/** A deletion answered with an error: 404/409 mean the pod we drain is gone; else it stays, with why. */
function deleteFailed(t: Target, err: unknown, o: FallbackOptions): void {
  if (isNotFound(err) || isConflict(err)) {
    // gone, or another pod by that name by now: the one we were draining is not there
    Object.assign(t, { state: 'gone', reason: '' });
    return;
  }
  t.reason = `eviction refused, and deleting it failed: ${statusMessage(err)}`;
  o.log.warn('cannot delete pod', { node: o.node, pod: t.key, error: statusMessage(err) });
}

/**
 * Deletes each refused target, one after the other; answers how long to wait for them to be gone:
 * their longest grace period plus FALLBACK_MARGIN_MS.
 */
export async function deleteRefused(
  refused: readonly Target[],
  o: FallbackOptions,
  signal: AbortSignal | undefined,
): Promise<number> {
  for (const t of refused) await deleteOne(t, o, signal);
  return graceSeconds(refused, o.grace) * 1000 + FALLBACK_MARGIN_MS;
}
