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
// deletionTimestamp (the API server's clock: a node whose clock runs fast would skip them at once). Answers to an eviction, as kubectl drain treats them:
// - 429 (a PodDisruptionBudget refused; or API throttling): retried after --eviction-retry-delay;
// - 403 for a namespace being deleted: retried the same way, or waited for when the pod is deleting;
// - 404: the pod is gone;
// - anything else (e.g. the 500 kube-apiserver answers for a pod covered by two PDBs): retried at
//   most MAX_EVICTION_ERRORS - 1 times, then the drain fails at once, naming the pod and the answer.
// Eviction counters move as evictions happen (DrainHooks.onEviction), and the caller is asked between
// rounds whether to go on (DrainHooks.keepGoing: the agent stops when its lock slot is gone).
import { abortReason, type Clock } from '../clock/clock.js';
import { isNotFound, isTooManyRequests, statusBody, statusCode, statusMessage } from '../kube/errors.js';
import type { Kube, V1Pod } from '../kube/kube.js';
import { settled, type Run, type Target } from './drain-target.js';
import { waitSettled, type PodChanges, type WaitOptions } from './drain-wait.js';
import type { Logger } from '../log/logger.js';
import type { Selector } from '../selector/label-selector.js';
import type { DrainRule } from '../config/config.js';
import type { DrainHooks, DrainResult, Drainer, EvictionOutcome, PodNote } from './drainer.js';
import { coveringBudgets } from './covering-budgets.js';
import { orderGroups, planDrain, type PlannedPod } from './drain-plan.js';
import { deleteRefused } from './drain-fallback.js';

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
}

/** Attempts at evicting one pod when the answer is neither 429, 403 (terminating namespace) nor 404. */
export const MAX_EVICTION_ERRORS = 3;
/** DrainHooks.keepGoing is asked at most this often. */
export const KEEP_GOING_EVERY_MS = 10_000;
/** kube's Status cause of a 403 for a namespace being deleted (corev1.NamespaceTerminatingCause). */
const NAMESPACE_TERMINATING = 'NamespaceTerminating';

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

/** Is this a 403 for a namespace being deleted? */
function namespaceTerminating(err: unknown): boolean {
  return (
    statusCode(err) === 403 &&
    (statusBody(err)?.details?.causes ?? []).some((c) => c.reason === NAMESPACE_TERMINATING)
  );
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
    const bad = invalid.map((p): Target => ({ ...targetOf(p), reason: p.reason }));
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
      .map((t): PodNote => ({
        pod: t.key,
        ...(t.uid === undefined ? {} : { uid: t.uid }),
        reason: pendingReason(t),
        ...(t.pdb === undefined ? {} : { pdb: t.pdb }),
      }));
    const durationMs = this.o.clock.now().getTime() - started;
    const result: DrainResult = {
      ok: pending.length === 0 && run.stop === undefined,
      ...(run.stop === undefined ? {} : { stopped: run.stop }),
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

  /** Evicts one pod, retrying refusals (and a few errors) after --eviction-retry-delay until the deadline. */
  private async evictOne(t: Target, run: Run): Promise<void> {
    for (;;) {
      run.signal?.throwIfAborted();
      if (!(await this.askToGoOn(run))) return;
      if (await this.tryEvict(t, run)) return;
      if (!(await this.sleepBefore(run, this.o.evictionRetryDelayMs))) return;
    }
  }

  /** One eviction request; true when this pod needs no further attempts. */
  private async tryEvict(t: Target, run: Run): Promise<boolean> {
    const grace = this.o.gracePeriodSeconds >= 0 ? this.o.gracePeriodSeconds : undefined;
    const namespace = t.pod.metadata?.namespace ?? 'default';
    const name = t.pod.metadata?.name ?? '';
    try {
      await this.o.kube.evictPod(namespace, name, grace, run.signal);
    } catch (err) {
      return this.handleEvictionError(t, err, run);
    }
    this.count(run, 'evicted');
    Object.assign(t, { state: 'evicted', reason: 'evicted, still terminating' });
    return true;
  }

  /** Records an eviction failure; true when this pod needs no further eviction attempts. */
  private async handleEvictionError(t: Target, err: unknown, run: Run): Promise<boolean> {
    if (run.signal?.aborted === true) throw abortReason(run.signal);
    if (isNotFound(err)) {
      Object.assign(t, { state: 'gone', reason: '' });
      return true;
    }
    if (isTooManyRequests(err)) {
      this.count(run, 'refused');
      const named = pdbFromCause(err);
      const pdb =
        named === undefined
          ? await this.matchingPdb(t.pod, run.signal)
          : `${t.pod.metadata?.namespace ?? ''}/${named}`;
      Object.assign(t, { state: 'refused', reason: `eviction refused: ${statusMessage(err)}`, pdb });
      this.o.log.info('eviction refused by disruption budget', { node: this.o.nodeId, pod: t.key, pdb });
      return false;
    }
    this.count(run, 'failed');
    if (namespaceTerminating(err)) return this.terminatingNamespace(t, err);
    return this.failedEviction(t, err, run);
  }

  /** kubectl's rule: a deleting pod in a deleting namespace is waited for; another is retried. */
  private terminatingNamespace(t: Target, err: unknown): boolean {
    if (t.pod.metadata?.deletionTimestamp !== undefined) {
      Object.assign(t, { state: 'evicted', reason: 'deleting with its namespace' });
      return true;
    }
    Object.assign(t, { state: 'refused', reason: `eviction refused: ${statusMessage(err)}` });
    return false;
  }

  /** Any other answer: retried a few times, then the whole drain fails at once with this reason. */
  private failedEviction(t: Target, err: unknown, run: Run): boolean {
    t.errors++;
    const answer = statusMessage(err);
    this.o.log.warn('eviction failed', { node: this.o.nodeId, pod: t.key, attempt: t.errors, error: answer });
    if (t.errors < MAX_EVICTION_ERRORS) {
      Object.assign(t, { state: 'failed', reason: `eviction failed: ${answer}` });
      return false;
    }
    const reason = `eviction of ${t.key} failed ${t.errors} times: ${answer}`;
    Object.assign(t, { state: 'failed', reason });
    run.stop ??= reason;
    return true;
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
