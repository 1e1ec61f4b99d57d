// Drain through the Eviction API, as `kubectl drain` does, but PDB refusals are retried after
// --eviction-retry-delay (kured retries them in a tight loop) and the result is data.
//
// Steps: list this node's pods (fieldSelector spec.nodeName); skip DaemonSet-owned, mirror and
// terminal pods and those outside --drain-pod-selector; evict the rest with bounded parallelism;
// a 429 (PDB) is retried after the delay, a 404 means the pod is already gone; then wait until every
// evicted pod is gone or replaced by a pod with another UID, until --drain-timeout (0 = no limit).
// Pods deleting for longer than --skip-wait-for-delete-timeout are not waited for.
import { abortReason, type Clock } from '../clock/clock.js';
import { isNotFound, isTooManyRequests, statusBody, statusMessage } from '../kube/errors.js';
import type { Kube, V1Pod, V1PodDisruptionBudget } from '../kube/kube.js';
import type { Logger } from '../log/logger.js';
import { fromLabelSelectorObject, matches, type Selector } from '../selector/label-selector.js';
import type { DrainResult, Drainer, PodNote } from './drainer.js';
import { isDaemonSetPod, podName } from './kube-node-ops.js';

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
  /** --skip-wait-for-delete-timeout in seconds; 0 = always wait. */
  skipWaitForDeleteTimeoutSeconds: number;
  /** --eviction-retry-delay in ms: the wait before retrying an eviction a PDB refused. */
  evictionRetryDelayMs: number;
  /** Evictions in flight at once. Default 5. */
  parallelism?: number;
  /** How often to look whether evicted pods are gone. Default 1000 ms. */
  pollMs?: number;
}

export const MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

/** Why a pod is not drained, or undefined when it must be. */
export function skipReason(pod: V1Pod, selector: Selector): string | undefined {
  if (isDaemonSetPod(pod)) return 'DaemonSet-owned';
  if (pod.metadata?.annotations?.[MIRROR_ANNOTATION] !== undefined) return 'mirror pod';
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return `terminal (${phase})`;
  if (!matches(selector, pod.metadata?.labels)) return 'not matched by --drain-pod-selector';
  return undefined;
}

/** One pod being drained. */
interface Target {
  pod: V1Pod;
  key: string;
  uid: string | undefined;
  state: 'evicting' | 'evicted' | 'gone' | 'refused' | 'failed';
  reason: string;
  pdb?: string;
}

/** Mutable bookkeeping of one drain. */
interface Run {
  signal: AbortSignal | undefined;
  deadline: number;
  requests: DrainResult['requests'];
}

export class KubeDrainer implements Drainer {
  constructor(private readonly o: KubeDrainerOptions) {}

  /** Drains; throws the signal's reason when it aborts. */
  async drain(signal?: AbortSignal): Promise<DrainResult> {
    const started = this.o.clock.now().getTime();
    const run: Run = {
      signal,
      deadline: this.o.timeoutMs > 0 ? started + this.o.timeoutMs : Infinity,
      requests: { evicted: 0, refused: 0, failed: 0 },
    };
    const pods = await this.o.kube.listPods(
      undefined,
      { fieldSelector: `spec.nodeName=${this.o.nodeId}` },
      signal,
    );
    const skipped: PodNote[] = [];
    const targets: Target[] = [];
    for (const pod of pods) {
      const why = skipReason(pod, this.o.podSelector);
      if (why === undefined)
        targets.push({ pod, key: podName(pod), uid: pod.metadata?.uid, state: 'evicting', reason: '' });
      else skipped.push({ pod: podName(pod), reason: why });
    }
    this.o.log.info('draining node', { node: this.o.nodeId, pods: targets.length, skipped: skipped.length });
    await this.evictAll(targets, run);
    await this.waitGone(targets, run);
    return this.result(targets, skipped, run, started);
  }

  private result(targets: Target[], skipped: PodNote[], run: Run, started: number): DrainResult {
    const evicted = targets.filter((t) => t.state === 'gone').map((t) => t.key);
    const pending = targets
      .filter((t) => t.state !== 'gone')
      .map((t): PodNote => ({
        pod: t.key,
        reason: t.reason,
        ...(t.pdb === undefined ? {} : { pdb: t.pdb }),
      }));
    const durationMs = this.o.clock.now().getTime() - started;
    const result: DrainResult = {
      ok: pending.length === 0,
      evicted,
      skipped,
      pending,
      requests: run.requests,
      durationMs,
    };
    this.o.log[result.ok ? 'info' : 'warn'](result.ok ? 'drain complete' : 'drain incomplete', {
      node: this.o.nodeId,
      evicted: evicted.length,
      pending: pending.map((p) => `${p.pod}: ${p.reason}`),
      durationMs,
    });
    return result;
  }

  /** Evicts every target with at most `parallelism` requests in flight. */
  private async evictAll(targets: Target[], run: Run): Promise<void> {
    const queue = [...targets];
    const worker = async (): Promise<void> => {
      for (let t = queue.shift(); t !== undefined; t = queue.shift()) await this.evictOne(t, run);
    };
    await Promise.all(Array.from({ length: Math.max(1, this.o.parallelism ?? 5) }, worker));
  }

  /** Evicts one pod, retrying refusals and errors after --eviction-retry-delay until the deadline. */
  private async evictOne(t: Target, run: Run): Promise<void> {
    for (;;) {
      run.signal?.throwIfAborted();
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
    run.requests.evicted++;
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
      run.requests.refused++;
      const named = pdbFromCause(err);
      const pdb =
        named === undefined
          ? await this.matchingPdb(t.pod, run.signal)
          : `${t.pod.metadata?.namespace ?? ''}/${named}`;
      Object.assign(t, { state: 'refused', reason: `eviction refused: ${statusMessage(err)}`, pdb });
      this.o.log.info('eviction refused by disruption budget', { node: this.o.nodeId, pod: t.key, pdb });
      return false;
    }
    run.requests.failed++;
    Object.assign(t, { state: 'failed', reason: `eviction failed: ${statusMessage(err)}` });
    this.o.log.warn('eviction failed', { node: this.o.nodeId, pod: t.key, error: statusMessage(err) });
    return false;
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

  /** Polls until every evicted pod is gone (or replaced by another UID), or the deadline. */
  private async waitGone(targets: Target[], run: Run): Promise<void> {
    const pollMs = this.o.pollMs ?? 1000;
    for (;;) {
      const waiting = targets.filter((t) => t.state === 'evicted');
      if (waiting.length === 0) return;
      const present = await this.o.kube.listPods(
        undefined,
        { fieldSelector: `spec.nodeName=${this.o.nodeId}` },
        run.signal,
      );
      const now = this.o.clock.now().getTime();
      for (const t of waiting) this.updateWaiting(t, present, now);
      if (!targets.some((t) => t.state === 'evicted')) return;
      if (!(await this.sleepBefore(run, pollMs))) {
        for (const t of targets.filter((x) => x.state === 'evicted'))
          t.reason = 'still terminating at --drain-timeout';
        return;
      }
    }
  }

  private updateWaiting(t: Target, present: V1Pod[], now: number): void {
    const same = present.find((p) => podName(p) === t.key && p.metadata?.uid === t.uid);
    if (same === undefined) {
      Object.assign(t, { state: 'gone', reason: '' });
      return;
    }
    const deleting = same.metadata?.deletionTimestamp;
    const skipAfter = this.o.skipWaitForDeleteTimeoutSeconds;
    if (deleting !== undefined && skipAfter > 0 && now - new Date(deleting).getTime() > skipAfter * 1000) {
      this.o.log.info('not waiting for pod deleting too long', { node: this.o.nodeId, pod: t.key });
      Object.assign(t, { state: 'gone', reason: '' });
    }
  }

  /** The PDB whose selector covers the pod, for a 429 that did not name it. */
  private async matchingPdb(pod: V1Pod, signal?: AbortSignal): Promise<string | undefined> {
    let pdbs: V1PodDisruptionBudget[];
    try {
      pdbs = await this.o.kube.listPodDisruptionBudgets(pod.metadata?.namespace, signal);
    } catch {
      return undefined;
    }
    const pdb = pdbs.find((p) => {
      const selector = p.spec?.selector;
      if (selector === undefined) return false;
      try {
        return matches(fromLabelSelectorObject(selector), pod.metadata?.labels);
      } catch {
        return false;
      }
    });
    return pdb?.metadata?.name === undefined
      ? undefined
      : `${pdb.metadata.namespace ?? ''}/${pdb.metadata.name}`;
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
