// Waiting out one drain order: polls the node's pods until every evicted pod is gone (or replaced by
// a pod with another UID) and every `wait-completed` pod has completed (Succeeded, Failed or gone),
// the deadline passes, or the caller says stop.
import { monotonicMs, type Clock } from '../clock/clock.js';
import type { Kube, V1Pod } from '../kube/kube.js';
import type { Logger } from '../log/logger.js';
import { podName } from '../node/kube-node-ops.js';
import type { Run, Target } from './drain-target.js';

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
    const present = await o.kube.listPods(
      undefined,
      { fieldSelector: `spec.nodeName=${o.nodeId}` },
      run.signal,
    );
    const now = monotonicMs(o.clock);
    for (const t of open) update(t, present, now, o);
    if (!group.some(waiting)) return;
    if (!(await o.sleepBefore(run, o.pollMs))) {
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
