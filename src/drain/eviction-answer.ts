// What one failed eviction means for the drain, decided here alone (issue 46): an answer about the pod
// or the request is acted on as kubectl drain acts on it; an answer about the API server itself is
// retried with back-off until the drain's deadline and never blamed on the pod (src/kube/errors.ts
// says which is which).
import {
  isBudgetRefusal,
  isConflict,
  isDenial,
  isNotFound,
  isServerError,
  isTooManyRequests,
  statusBody,
  statusCode,
} from '../kube/errors.js';

/**
 * - `gone`: 404, or 409 on the eviction's UID precondition (another pod took the name): nothing of
 *   the pod we meant is left to evict;
 * - `budget`: a PodDisruptionBudget refuses for now (429 saying so): retried after
 *   --eviction-retry-delay until --drain-timeout;
 * - `denied`: an admission policy or webhook denied it: the drain stops at once;
 * - `namespace-terminating`: 403 for a namespace being deleted: retried like a budget's refusal;
 * - `server`: about the API server (5xx but the 500 of a pod under two budgets, a 429 of API Priority
 *   and Fairness, no answer, a broken connection): judged by what the cluster shows, then retried
 *   with back-off until the deadline; never counted against the pod;
 * - `rejected`: anything else about the pod or the request (400, 403, 422, the 500 of a pod under two
 *   budgets, an answer we cannot place): retried MAX_EVICTION_ERRORS - 1 times, then the drain fails.
 */
export type EvictionAnswer = 'gone' | 'budget' | 'denied' | 'namespace-terminating' | 'server' | 'rejected';

/** kube's Status cause of a 403 for a namespace being deleted (corev1.NamespaceTerminatingCause). */
const NAMESPACE_TERMINATING = 'NamespaceTerminating';

/** Is this a 403 for a namespace being deleted? */
function namespaceTerminating(err: unknown): boolean {
  return (
    statusCode(err) === 403 &&
    (statusBody(err)?.details?.causes ?? []).some((c) => c.reason === NAMESPACE_TERMINATING)
  );
}

/** What a failed eviction's answer means (see EvictionAnswer). */
export function evictionAnswer(err: unknown): EvictionAnswer {
  if (isNotFound(err) || isConflict(err)) return 'gone';
  if (isDenial(err)) return 'denied';
  if (isServerError(err)) return 'server';
  if (isBudgetRefusal(err)) return 'budget';
  if (namespaceTerminating(err)) return 'namespace-terminating';
  return 'rejected';
}

/**
 * Could the eviction have been carried out although its answer was an error? Every answer about the
 * server may come after etcd committed the write, but a 429 of API Priority and Fairness: it is
 * given before the request is handled.
 */
export function mayHaveCommitted(err: unknown): boolean {
  return isServerError(err) && !isTooManyRequests(err);
}

/**
 * The PDB named in a 429's causes: kube-apiserver says `Cannot evict pod as it would violate the
 * pod's disruption budget.` with a DisruptionBudget cause `The disruption budget <name> needs …`.
 */
export function pdbFromCause(err: unknown): string | undefined {
  const causes = statusBody(err)?.details?.causes ?? [];
  for (const cause of causes) {
    if (cause.reason !== 'DisruptionBudget') continue;
    const m = /disruption budget (\S+)/i.exec(cause.message ?? '');
    if (m?.[1] !== undefined) return m[1];
  }
  return undefined;
}
