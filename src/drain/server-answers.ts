// Evictions answered about the API server itself (issue 46): a 500 of an etcd that timed out, a 503
// of an overloaded server, a 429 of API Priority and Fairness, no answer, a reset connection. None is
// the pod's fault, and some came after the eviction was carried out. So the cluster is asked first
// (the pod gone, or terminating with the UID it had: evicted); else the eviction is sent again after
// a jittered back-off, the server's Retry-After honoured, until the drain's deadline (without
// --drain-timeout: until such answers have lasted SERVER_FAILURE_LIMIT_MS). A drain that ends with
// only such failures says so (serverFailure), and the node is not quarantined for it.
import { abortReason, monotonicMs, type Clock } from '../clock/clock.js';
import { retryAfterSeconds, statusMessage } from '../kube/errors.js';
import type { Kube, V1Pod } from '../kube/kube.js';
import { backoffMs } from '../kube/retry.js';
import type { Logger } from '../log/logger.js';
import type { PodFailure } from '../node/quarantine.js';
import { shortDuration } from '../text/duration.js';
import type { PodNote } from './drainer.js';
import type { Run, Target } from './drain-target.js';
import { mayHaveCommitted } from './eviction-answer.js';

/** Back-off after an eviction met an answer about the API server: this, doubling per answer in a row… */
const SERVER_RETRY_BASE_MS = 1_000;
/** …up to this (each jittered in its upper half). */
const SERVER_RETRY_MAX_MS = 30_000;
/** The longest Retry-After honoured between two evictions; a longer one waits this long. */
const SERVER_RETRY_AFTER_CAP_MS = 60_000;
/** Without --drain-timeout, answers about the API server end the drain once they have lasted this long. */
const SERVER_FAILURE_LIMIT_MS = 10 * 60_000;

/** What the handling of such an answer needs of the drain. */
export interface ServerAnswerContext {
  kube: Kube;
  clock: Clock;
  log: Logger;
  node: string;
  /** [0, 1) for the back-off's jitter. Default Math.random. */
  random?: (() => number) | undefined;
  /** Default SERVER_FAILURE_LIMIT_MS. */
  limitMs?: number | undefined;
}

/**
 * An eviction of `t` answered about the API server: undefined when the cluster shows it carried out
 * (or the drain must end: such answers outlasted their limit, run.stop says so), else the wait before
 * sending it again.
 */
export async function serverAnswered(
  t: Target,
  err: unknown,
  run: Run,
  c: ServerAnswerContext,
): Promise<number | undefined> {
  if (mayHaveCommitted(err) && (await evictedMeanwhile(t, run.signal, c))) return undefined;
  const now = monotonicMs(c.clock);
  t.serverSince ??= now;
  t.serverErrors = (t.serverErrors ?? 0) + 1;
  const answer = statusMessage(err);
  Object.assign(t, {
    state: 'failed',
    reason: `the API server is failing: ${answer}`,
    failure: 'api-server',
  });
  c.log.warn('eviction failed: the API server is failing', {
    node: c.node,
    pod: t.key,
    attempt: t.serverErrors,
    error: answer,
  });
  const limit = c.limitMs ?? SERVER_FAILURE_LIMIT_MS;
  if (outlasted(t, run, { answer, forMs: now - t.serverSince, limit })) return undefined;
  return serverBackoffMs(t.serverErrors, err, c.random ?? Math.random);
}

/**
 * Without a deadline: have such answers lasted `limit` (`forMs` so far)? Then the drain ends, saying
 * so (run.stop, marked as the server's).
 */
function outlasted(
  t: Target,
  run: Run,
  { answer, forMs, limit }: { answer: string; forMs: number; limit: number },
): boolean {
  if (run.deadline !== Infinity || forMs < limit) return false;
  run.stop ??= `the API server is failing: ${answer} (eviction of ${t.key}) for ${shortDuration(limit)}`;
  run.serverStop ??= true;
  return true;
}

/**
 * The wait before the next attempt after `attempt` answers about the server in a row: jittered,
 * doubling from SERVER_RETRY_BASE_MS to SERVER_RETRY_MAX_MS, and never shorter than the server's
 * Retry-After (up to SERVER_RETRY_AFTER_CAP_MS).
 */
function serverBackoffMs(attempt: number, err: unknown, random: () => number): number {
  const after = Math.min(SERVER_RETRY_AFTER_CAP_MS, (retryAfterSeconds(err) ?? 0) * 1000);
  return Math.max(after, backoffMs(attempt, SERVER_RETRY_BASE_MS, SERVER_RETRY_MAX_MS, random));
}

/** The pod as the cluster shows it now; undefined when that cannot be seen either. */
async function lookUp(
  t: Target,
  signal: AbortSignal | undefined,
  c: ServerAnswerContext,
): Promise<V1Pod[] | undefined> {
  const namespace = t.pod.metadata?.namespace ?? 'default';
  const name = t.pod.metadata?.name ?? '';
  try {
    return await c.kube.listPods(namespace, { fieldSelector: `metadata.name=${name}` }, signal);
  } catch (err) {
    if (signal?.aborted === true) throw abortReason(signal);
    c.log.debug('cannot see whether the eviction was carried out', {
      node: c.node,
      pod: t.key,
      error: statusMessage(err),
    });
    return undefined;
  }
}

/**
 * Was the eviction carried out though its answer was lost (a 500 after etcd committed it, a reset,
 * no answer in time)? Judged by what the cluster shows now: the pod gone, or another pod under its
 * name, is gone; the pod terminating with the UID it had is evicted (and waited for). No: the pod
 * stands as it was, or the question went unanswered too; the eviction is then sent again.
 */
async function evictedMeanwhile(
  t: Target,
  signal: AbortSignal | undefined,
  c: ServerAnswerContext,
): Promise<boolean> {
  const pods = await lookUp(t, signal, c);
  if (pods === undefined) return false;
  const name = t.pod.metadata?.name;
  const same = pods.find(
    (p) => p.metadata?.name === name && (t.uid === undefined || p.metadata?.uid === t.uid),
  );
  const terminating = same?.metadata?.deletionTimestamp !== undefined;
  if (same !== undefined && !terminating) return false;
  const state = same === undefined ? 'gone' : 'evicted';
  const reason = same === undefined ? '' : 'evicted (its answer was lost), still terminating';
  Object.assign(t, { state, reason, failure: undefined });
  c.log.info('eviction answer lost: judged by what the cluster shows', {
    node: c.node,
    pod: t.key,
    now: state,
  });
  return true;
}

/**
 * Which kind of failure keeps a pod that is still there when the drain ends: its answer's, or, past
 * the deadline, not gone (or not completed) in time. None when it had no chance: never tried, or
 * evicted when the drain stopped for another pod (`stopped`).
 */
export function failureOf(t: Target, stopped: boolean): PodFailure | undefined {
  if (t.failure !== undefined || stopped) return t.failure;
  if (t.state === 'evicted') return 'still-terminating';
  return t.state === 'waiting' ? 'not-completed' : undefined;
}

/**
 * `the API server is failing: …` when the drain ended for answers about the API server alone: stopped
 * by their limit, or past the deadline with every pending pod that failed failing on them.
 */
export function serverFailure(pending: readonly PodNote[], run: Run): string | undefined {
  if (run.stop !== undefined) return run.serverStop === true ? run.stop : undefined;
  const failed = pending.filter((p) => p.failure !== undefined);
  const first = failed[0];
  if (first === undefined || failed.some((p) => p.failure !== 'api-server')) return undefined;
  return `${first.reason} (eviction of ${first.pod}) until --drain-timeout`;
}
