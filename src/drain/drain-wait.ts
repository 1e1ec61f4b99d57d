// Waiting out one drain order: polls the node's pods until every evicted pod is gone (or replaced by
// a pod with another UID) and every `wait-completed` pod has completed (Succeeded, Failed or gone),
// the deadline passes, or the caller says stop.
import { monotonicMs, type Clock } from '../clock/clock.js';
import type { Kube, V1Pod } from '../kube/kube.js';
import type { Logger } from '../log/logger.js';
import { podName } from '../node/kube-node-ops.js';
import type { Run, Target } from './drain-target.js';

/**
 * Changes of the node's pods, when a watch follows them (src/kube/own-views.ts): the wait looks again
 * at the next one, not a poll later. Absent: it polls every pollMs.
 */
export interface PodChanges {
  /** Changes taken in so far. */
  version(): number;
  /** Resolves at the next change after `since`, after `ms`, or when `signal` aborts. */
  changed(ms: number, signal: AbortSignal | undefined, since: number): Promise<void>;
}

export interface WaitOptions {
  kube: Kube;
  nodeId: string;
  clock: Clock;
  log: Logger;
  /** How often to look. */
  pollMs: number;
  /** --skip-wait-for-delete-timeout in seconds; 0 = always wait. */
  skipWaitForDeleteTimeoutSeconds: number;
  /** The drain's own: asks the caller whether to go on (sets run.stop when not). */
  askToGoOn: (run: Run) => Promise<boolean>;
  /** The drain's own: sleeps `ms`, or until the deadline and answers false. */
  sleepBefore: (run: Run, ms: number) => Promise<boolean>;
  /** The pods' changes, when followed; the wait then ends at each change (at pollMs at the latest). */
  pods?: PodChanges | undefined;
}

/** Still to be waited for? */
function waiting(t: Target): boolean {
  return t.state === 'evicted' || t.state === 'waiting';
}

/** Polls until no target of the group is left to wait for, or the deadline, or stop. */
export async function waitSettled(group: readonly Target[], run: Run, o: WaitOptions): Promise<void> {
  for (;;) {
    const open = group.filter(waiting);
    if (open.length === 0 || !(await o.askToGoOn(run))) return;
    const since = o.pods?.version();
    const present = await o.kube.listPods(
      undefined,
      { fieldSelector: `spec.nodeName=${o.nodeId}` },
      run.signal,
    );
    const now = monotonicMs(o.clock);
    for (const t of open) update(t, present, now, o);
    if (!group.some(waiting)) return;
    if (!(await pause(run, o, since))) {
      for (const t of group.filter(waiting)) {
        t.reason =
          t.state === 'waiting'
            ? 'not completed at --drain-timeout (drain rule wait-completed)'
            : 'still terminating at --drain-timeout';
      }
      return;
    }
  }
}

/**
 * The pause before looking again: until the pods' next change when they are followed (a watch tells
 * that an evicted pod is gone), at most pollMs, never past the deadline (false there, as sleepBefore).
 */
async function pause(run: Run, o: WaitOptions, since: number | undefined): Promise<boolean> {
  if (o.pods === undefined || since === undefined) return o.sleepBefore(run, o.pollMs);
  const left = run.deadline - o.clock.now().getTime();
  if (left <= 0) return false;
  await o.pods.changed(Math.min(o.pollMs, left), run.signal, since);
  run.signal?.throwIfAborted();
  return o.clock.now().getTime() < run.deadline || !Number.isFinite(run.deadline);
}

/** Is the pod as listed done with: gone (or replaced), or for wait-completed, completed? */
function done(t: Target, same: V1Pod | undefined): boolean {
  if (same === undefined) return true;
  const phase = same.status?.phase;
  return t.state === 'waiting' && (phase === 'Succeeded' || phase === 'Failed');
}

function update(t: Target, present: V1Pod[], now: number, o: WaitOptions): void {
  const same = present.find((p) => podName(p) === t.key && p.metadata?.uid === t.uid);
  const settledAs: Target['state'] = t.state === 'waiting' ? 'completed' : 'gone';
  if (done(t, same)) {
    Object.assign(t, { state: settledAs, reason: '' });
    return;
  }
  if (same?.metadata?.deletionTimestamp === undefined) return;
  t.deletingSince ??= now;
  const skipAfter = o.skipWaitForDeleteTimeoutSeconds;
  if (skipAfter > 0 && now - t.deletingSince > skipAfter * 1000) {
    o.log.info('not waiting for pod deleting too long', { node: o.nodeId, pod: t.key });
    Object.assign(t, { state: settledAs, reason: '' });
  }
}
