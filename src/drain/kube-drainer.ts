// Drain through the Eviction API, as `kubectl drain` does, with its error handling, but PDB refusals
// are retried after --eviction-retry-delay (kured retries them in a tight loop) and the result is data.
//
// Steps: list this node's pods (fieldSelector spec.nodeName) and plan what to do with each
// (drain-plan.ts: DaemonSet-owned, mirror and terminal pods and those outside --drain-pod-selector
// are passed over; the pods' drain labels and --drain-rules say skip, wait-completed or evict, and the
// order); a pod with a drain label not understood fails the drain before any eviction. Then, order by
// order (ascending): evict that order's pods with bounded parallelism, and wait until every one is gone
// (or replaced by a pod with another UID) and every `wait-completed` pod of the order has completed,
// before the next order starts; all within --drain-timeout (0 = no limit). With --drain-fallback
// delete, pods whose eviction is still refused when the timeout passes are deleted instead
// (drain-fallback.ts), and waited for a bounded while. Pods seen deleting for longer than --skip-wait-for-delete-timeout are
// not waited for: counted on our monotonic clock from when we first saw them deleting, not from their
// deletionTimestamp (the API server's clock: a node whose clock runs fast would skip them at once).
// Answers to an eviction (eviction-answer.ts says which is which): about the pod or the request, as
// kubectl drain treats them (a budget's 429 or a terminating namespace's 403: retried after
// --eviction-retry-delay; 404, or 409 on the eviction's UID precondition: gone, never evicted in its
// place; an admission policy's or webhook's denial: the drain stops at once; anything else, e.g. the
// 500 of a pod under two PDBs: retried MAX_EVICTION_ERRORS - 1 times, then the drain fails naming the
// pod and the answer). About the API server (issue 46: 5xx, a 429 of API Priority and Fairness, no
// answer, a reset): judged by what the cluster shows, then retried with back-off until the deadline,
// never counted against the pod (server-answers.ts; DrainResult.serverFailure when only they failed).
// Eviction counters move as evictions happen (DrainHooks.onEviction), and the caller is asked between
// rounds whether to go on (DrainHooks.keepGoing: the agent stops when its lock slot is gone).
import { abortReason, type Clock } from '../clock/clock.js';
import { isConflict, policyDenial, statusMessage, webhookDenial } from '../kube/errors.js';
import type { Kube, V1Pod } from '../kube/kube.js';
import { evictionAnswer, pdbFromCause } from './eviction-answer.js';
import { failureOf, serverAnswered, serverFailure } from './server-answers.js';
import { settled, type Run, type Target } from './drain-target.js';
import { waitSettled, type PodChanges, type WaitOptions } from './drain-wait.js';
import type { Logger } from '../log/logger.js';
import type { Selector } from '../selector/label-selector.js';
import type { DrainRule } from '../config/config.js';
import type { DrainHooks, DrainResult, Drainer, EvictionOutcome, PodNote } from './drainer.js';
import { coveringBudgets } from './covering-budgets.js';
import { orderGroups, planDrain, type PlannedPod } from './drain-plan.js';
import { deleteRefused } from './drain-fallback.js';
import { evictionOptions } from './eviction.js';

export interface KubeDrainerOptions {
  kube: Kube;
  /** This node (--node-id). */
  nodeId: string;
  clock: Clock;
  log: Logger;
  /** --drain-timeout in ms; 0 = until done (or the signal aborts). */
  timeoutMs: number;
  /** --drain-grace-period in seconds; -1 = each pod's own. */
  gracePeriodSeconds: number;
  /** --drain-pod-selector; empty = every pod. */
  podSelector: Selector;
  /** --drain-rules; default none. */
  rules?: readonly DrainRule[];
  /** --drain-fallback; default 'none'. */
  fallback?: 'none' | 'delete';
  /** --skip-wait-for-delete-timeout in seconds; 0 = always wait. */
  skipWaitForDeleteTimeoutSeconds: number;
  /** --eviction-retry-delay in ms: the wait before retrying an eviction a PDB refused. */
  evictionRetryDelayMs: number;
  /** Evictions in flight at once. Default 5. */
  parallelism?: number;
  /** How often to look whether evicted pods are gone. Default 1000 ms. */
  pollMs?: number;
  /** How often at most DrainHooks.keepGoing is asked. Default KEEP_GOING_EVERY_MS. */
  keepGoingEveryMs?: number;
  /** The pods' changes when a watch follows them (drain-wait.ts): evicted pods seen gone at once. */
  pods?: PodChanges;
  /** [0, 1) for the jitter of the back-off after answers about the API server. Default Math.random. */
  random?: () => number;
  /**
   * Without --drain-timeout: how long an eviction may meet only answers about the API server before
   * the drain ends (the node waits and tries again later). Default SERVER_FAILURE_LIMIT_MS
   * (server-answers.ts).
   */
  serverFailureLimitMs?: number;
}

/**
 * Answers about the pod or the request an eviction may get before the drain fails (not a budget's
 * 429, a terminating namespace's 403, a 404, nor any answer about the API server).
 */
export const MAX_EVICTION_ERRORS = 3;
/** DrainHooks.keepGoing is asked at most this often. */
const KEEP_GOING_EVERY_MS = 10_000;
/** A pod of the plan as the drain tracks it (not yet started). */
function targetOf(p: PlannedPod): Target {
  return {
    pod: p.pod,
    key: p.key,
    uid: p.uid,
    mode: p.action === 'wait-completed' ? 'wait-completed' : 'evict',
    order: p.order,
    state: 'held',
    reason: '',
    errors: 0,
  };
}

/** Why a pod is still there when the drain ended. */
function pendingReason(t: Target): string {
  if (t.reason !== '') return t.reason;
  if (t.state === 'held') return `not evicted: pods of a lower drain order than ${t.order} are not gone`;
  return t.mode === 'wait-completed' ? 'not completed: the drain stopped' : 'not evicted: the drain stopped';
}

/** Read through a call: a worker may have set it while this one awaited. */
function stopReason(run: Run): string | undefined {
  return run.stop;
}

export class KubeDrainer implements Drainer {
  constructor(private readonly o: KubeDrainerOptions) {}

  /** Drains; throws the signal's reason when it aborts. */
  async drain(signal?: AbortSignal, hooks: DrainHooks = {}): Promise<DrainResult> {
    const started = this.o.clock.now().getTime();
    const run: Run = {
      signal,
      deadline: this.o.timeoutMs > 0 ? started + this.o.timeoutMs : Infinity,
      requests: { evicted: 0, refused: 0, failed: 0 },
      hooks,
      lastAsked: started,
    };
    const pods = await this.o.kube.listPods(
      undefined,
      { fieldSelector: `spec.nodeName=${this.o.nodeId}` },
      signal,
    );
    const plan = planDrain(pods, { podSelector: this.o.podSelector, rules: this.o.rules ?? [] });
    const skipped = plan
      .filter((p) => p.action === 'ignore' || p.action === 'skip')
      .map((p): PodNote => ({
        pod: p.key,
        reason: p.reason,
        ...(p.action === 'skip' ? { rule: true } : {}),
      }));
    const invalid = plan.filter((p) => p.action === 'invalid');
    const groups = orderGroups(plan).map((g) => g.pods.map(targetOf));
    const targets = groups.flat();
    this.o.log.info('draining node', {
      node: this.o.nodeId,
      pods: targets.length,
      skipped: skipped.length,
      orders: groups.length,
    });
    if (invalid.length > 0) return this.refuseInvalid(invalid, { targets, skipped }, run, started);
    for (const group of groups) {
      if (!(await this.drainOrder(group, run))) break;
    }
    return this.result(targets, skipped, run, started);
  }

  /**
   * A pod whose drain label is not understood: the drain fails before any eviction, naming the pod
   * and the value (fail safe: neither evicted early nor waited for without end).
   */
  private refuseInvalid(
    invalid: PlannedPod[],
    { targets, skipped }: { targets: Target[]; skipped: PodNote[] },
    run: Run,
    started: number,
  ): DrainResult {
    const notes = invalid.map((p) => `${p.key}: ${p.reason}`);
    run.stop = `not draining: ${notes.join('; ')}`;
    // only the pods at fault are pending: the quarantine lifts when they change
    const bad = invalid.map((p): Target => ({ ...targetOf(p), reason: p.reason, failure: 'drain-label' }));
    this.o.log.warn('bad drain label', { node: this.o.nodeId, pods: notes, notEvicted: targets.length });
    return this.result(bad, skipped, run, started);
  }

  /** One order: evict its pods, fall back to deleting if so configured, wait; true when all are done. */
  private async drainOrder(group: Target[], run: Run): Promise<boolean> {
    for (const t of group) t.state = t.mode === 'evict' ? 'evicting' : 'waiting';
    await this.evictAll(
      group.filter((t) => t.mode === 'evict'),
      run,
    );
    if (stopReason(run) !== undefined) return false;
    if (this.o.fallback === 'delete') await this.fallBack(group, run);
    await waitSettled(group, run, this.waitOptions());
    return stopReason(run) === undefined && group.every(settled);
  }

  /**
   * --drain-fallback delete: once the deadline passed, the pods whose eviction is still refused are
   * deleted, and the deadline moves on by the time they may take to terminate (bounded).
   */
  private async fallBack(group: Target[], run: Run): Promise<void> {
    if (this.o.clock.now().getTime() < run.deadline) return;
    const refused = group.filter((t) => t.state === 'refused');
    if (refused.length === 0) return;
    const grace = this.o.gracePeriodSeconds >= 0 ? this.o.gracePeriodSeconds : undefined;
    const waitMs = await deleteRefused(
      refused,
      { kube: this.o.kube, log: this.o.log, node: this.o.nodeId, grace },
      run.signal,
    );
    run.deadline = this.o.clock.now().getTime() + waitMs;
  }

  private waitOptions(): WaitOptions {
    return {
      kube: this.o.kube,
      nodeId: this.o.nodeId,
      clock: this.o.clock,
      log: this.o.log,
      pollMs: this.o.pollMs ?? 1000,
      skipWaitForDeleteTimeoutSeconds: this.o.skipWaitForDeleteTimeoutSeconds,
      askToGoOn: (r) => this.askToGoOn(r),
      sleepBefore: (r, ms) => this.sleepBefore(r, ms),
      pods: this.o.pods,
    };
  }

  private result(targets: Target[], skipped: PodNote[], run: Run, started: number): DrainResult {
    const evicted = targets.filter((t) => t.state === 'gone').map((t) => t.key);
    const pending = targets
      .filter((t) => !settled(t))
      .map((t): PodNote => {
        const failure = failureOf(t, run.stop !== undefined);
        return {
          pod: t.key,
          ...(t.uid === undefined ? {} : { uid: t.uid }),
          reason: pendingReason(t),
          ...(failure === undefined ? {} : { failure }),
          ...(t.pdb === undefined ? {} : { pdb: t.pdb }),
        };
      });
    const durationMs = this.o.clock.now().getTime() - started;
    const ok = pending.length === 0 && run.stop === undefined;
    const server = ok ? undefined : serverFailure(pending, run);
    const result: DrainResult = {
      ok,
      ...(run.stop === undefined ? {} : { stopped: run.stop }),
      ...(run.denied === undefined ? {} : { denied: run.denied }),
      ...(server === undefined ? {} : { serverFailure: server }),
      evicted,
      skipped,
      waited: targets.filter((t) => t.state === 'completed').map((t) => t.key),
      deleted: targets.filter((t) => t.deleted === true).map((t) => t.key),
      pending,
      requests: run.requests,
      durationMs,
    };
    this.o.log[result.ok ? 'info' : 'warn'](result.ok ? 'drain complete' : 'drain incomplete', {
      node: this.o.nodeId,
      evicted: evicted.length,
      pending: pending.map((p) => `${p.pod}: ${p.reason}`),
      ...(run.stop === undefined ? {} : { stopped: run.stop }),
      durationMs,
    });
    return result;
  }

  /** Counts one eviction request's outcome, and tells the caller at once. */
  private count(run: Run, outcome: EvictionOutcome): void {
    run.requests[outcome]++;
    run.hooks.onEviction?.(outcome);
  }

  /** Asks the caller whether to go on, at most every KEEP_GOING_EVERY_MS; sets run.stop when not. */
  private async askToGoOn(run: Run): Promise<boolean> {
    if (run.stop !== undefined) return false;
    const keepGoing = run.hooks.keepGoing;
    const now = this.o.clock.now().getTime();
    if (keepGoing === undefined || now - run.lastAsked < (this.o.keepGoingEveryMs ?? KEEP_GOING_EVERY_MS))
      return true;
    run.lastAsked = now;
    const stop = await keepGoing();
    if (stop !== undefined) run.stop ??= stop;
    return stopReason(run) === undefined;
  }

  /** Evicts every target with at most `parallelism` requests in flight. */
  private async evictAll(targets: Target[], run: Run): Promise<void> {
    const queue = [...targets];
    const worker = async (): Promise<void> => {
      for (let t = queue.shift(); t !== undefined; t = queue.shift()) await this.evictOne(t, run);
    };
    await Promise.all(Array.from({ length: Math.max(1, this.o.parallelism ?? 5) }, worker));
  }

  /**
   * Evicts one pod, retrying refusals (and a few errors) after --eviction-retry-delay and answers
   * about the API server after a back-off, until the deadline.
   */
  private async evictOne(t: Target, run: Run): Promise<void> {
    for (;;) {
      run.signal?.throwIfAborted();
      if (!(await this.askToGoOn(run))) return;
      const again = await this.tryEvict(t, run);
      if (again === undefined) return;
      if (!(await this.sleepBefore(run, again))) return;
    }
  }

  /** One eviction request; the wait before the next attempt, or undefined when none is needed. */
  private async tryEvict(t: Target, run: Run): Promise<number | undefined> {
    const namespace = t.pod.metadata?.namespace ?? 'default';
    const name = t.pod.metadata?.name ?? '';
    try {
      const options = evictionOptions(this.o.gracePeriodSeconds, t.pod);
      await this.o.kube.evictPod(namespace, name, options, run.signal);
    } catch (err) {
      return this.handleEvictionError(t, err, run);
    }
    this.count(run, 'evicted');
    Object.assign(t, { state: 'evicted', reason: 'evicted, still terminating', failure: undefined });
    return undefined;
  }

  /** Records an eviction failure; the wait before the next attempt, or undefined when none is needed. */
  private async handleEvictionError(t: Target, err: unknown, run: Run): Promise<number | undefined> {
    if (run.signal?.aborted === true) throw abortReason(run.signal);
    const answer = evictionAnswer(err);
    if (answer === 'server') return this.serverFailed(t, err, run);
    // an answer about the pod ends a run of the server's
    t.serverSince = undefined;
    t.serverErrors = 0;
    if (answer === 'gone') {
      this.gone(t, err);
      return undefined;
    }
    if (answer === 'budget') return this.refused(t, err, run);
    this.count(run, 'failed');
    if (answer === 'denied') {
      this.deniedEviction(t, err, run);
      return undefined;
    }
    if (answer === 'namespace-terminating') return this.terminatingNamespace(t, err);
    return this.failedEviction(t, err, run);
  }

  /** 429: a PodDisruptionBudget (named, or found) refused it for now: retried after the delay. */
  private async refused(t: Target, err: unknown, run: Run): Promise<number> {
    this.count(run, 'refused');
    const named = pdbFromCause(err);
    const pdb =
      named === undefined
        ? await this.matchingPdb(t.pod, run.signal)
        : `${t.pod.metadata?.namespace ?? ''}/${named}`;
    const reason = `eviction refused: ${statusMessage(err)}`;
    Object.assign(t, { state: 'refused', reason, pdb, failure: 'disruption-budget' });
    this.o.log.info('eviction refused by disruption budget', { node: this.o.nodeId, pod: t.key, pdb });
    return this.o.evictionRetryDelayMs;
  }

  /** An answer about the API server (server-answers.ts): never counted against MAX_EVICTION_ERRORS. */
  private async serverFailed(t: Target, err: unknown, run: Run): Promise<number | undefined> {
    this.count(run, 'failed');
    const o = this.o;
    const context = { kube: o.kube, clock: o.clock, log: o.log, node: o.nodeId, random: o.random };
    return serverAnswered(t, err, run, { ...context, limitMs: o.serverFailureLimitMs });
  }

  /**
   * 404: the pod is gone. 409: the eviction names the pod's UID (evictionOptions), and the only
   * conflict an eviction of ours meets is that precondition: another pod took the name since the
   * drain listed it (a StatefulSet's), and it is not ours to evict; the one we meant is gone.
   */
  private gone(t: Target, err: unknown): void {
    if (isConflict(err))
      this.o.log.info('pod replaced under its name: not evicted', { node: this.o.nodeId, pod: t.key });
    Object.assign(t, { state: 'gone', reason: '', failure: undefined });
  }

  /**
   * An admission policy or webhook denied the eviction: no retry would pass it, so the drain ends
   * now (a policy's denial is kept: the caller judges whether it was the agent's own).
   */
  private deniedEviction(t: Target, err: unknown, run: Run): void {
    const policy = policyDenial(err);
    const webhook = webhookDenial(err);
    const by =
      policy !== undefined
        ? `admission policy ${policy.policy}: ${policy.message}`
        : `admission webhook ${webhook?.webhook ?? '?'}: ${webhook?.message ?? statusMessage(err)}`;
    const reason = `eviction of ${t.key} denied by ${by}`;
    Object.assign(t, { state: 'failed', reason, failure: 'eviction-denied' });
    this.o.log.warn('eviction denied by admission', { node: this.o.nodeId, pod: t.key, by });
    run.stop ??= reason;
    if (policy !== undefined) run.denied ??= policy;
  }

  /** kubectl's rule: a deleting pod in a deleting namespace is waited for; another is retried. */
  private terminatingNamespace(t: Target, err: unknown): number | undefined {
    if (t.pod.metadata?.deletionTimestamp !== undefined) {
      Object.assign(t, { state: 'evicted', reason: 'deleting with its namespace', failure: undefined });
      return undefined;
    }
    const reason = `eviction refused: ${statusMessage(err)}`;
    Object.assign(t, { state: 'refused', reason, failure: 'namespace-terminating' });
    return this.o.evictionRetryDelayMs;
  }

  /**
   * Any other answer about the pod or the request: retried a few times, then the whole drain fails at
   * once with this reason.
   */
  private failedEviction(t: Target, err: unknown, run: Run): number | undefined {
    t.errors++;
    const answer = statusMessage(err);
    this.o.log.warn('eviction failed', { node: this.o.nodeId, pod: t.key, attempt: t.errors, error: answer });
    if (t.errors < MAX_EVICTION_ERRORS) {
      Object.assign(t, {
        state: 'failed',
        reason: `eviction failed: ${answer}`,
        failure: 'eviction-rejected',
      });
      return this.o.evictionRetryDelayMs;
    }
    const reason = `eviction of ${t.key} failed ${t.errors} times: ${answer}`;
    Object.assign(t, { state: 'failed', reason, failure: 'eviction-rejected' });
    run.stop ??= reason;
    return undefined;
  }

  /**
   * Waits a full `ms` and returns true; when the deadline comes first, waits until the deadline and
   * returns false. The next request is thus at least `ms` after the answer to the previous one: a
   * wait cut short by the deadline never lets one more request through.
   */
  private async sleepBefore(run: Run, ms: number): Promise<boolean> {
    const target = this.o.clock.now().getTime() + ms;
    if (target >= run.deadline) {
      await this.sleepUntil(run.deadline, run.signal);
      return false;
    }
    await this.sleepUntil(target, run.signal);
    return true;
  }

  /**
   * Sleeps until the clock reads `at`. Node's timers run on libuv's millisecond monotonic clock, so a
   * setTimeout(ms) ends up to 1 ms before Date.now() has advanced by `ms` (measured: about 1 timer in
   * 75): sleep again for what is left rather than act before `at`.
   */
  private async sleepUntil(at: number, signal: AbortSignal | undefined): Promise<void> {
    for (let left = at - this.o.clock.now().getTime(); left > 0; left = at - this.o.clock.now().getTime())
      await this.o.clock.sleep(left, signal);
  }

  /** The PDB whose selector covers the pod, for a 429 that did not name it. */
  private async matchingPdb(pod: V1Pod, signal?: AbortSignal): Promise<string | undefined> {
    return (await coveringBudgets(this.o.kube, pod, signal))[0];
  }
}
