// --single-replica restart, the step before the drain: each Deployment whose only ready replica the
// drain would evict is restarted (at most once per cycle: marked in the cycle record before the
// patch), and the drain waits until it is available again with a new pod elsewhere, up to
// --single-replica-timeout from the restart; past it, or where no restart can help (Recreate,
// maxSurge 0, StatefulSets, bare pods), the drain evicts as it always did, and the status and an
// Event say why.
import type { RestartMark, CycleRecord } from '../../node/cycle.js';
import type { ReplicaPlan } from '../../drain/rollout-restart.js';
import { errorText } from '../../text/error-text.js';
import type { Pass } from './pass.js';

/** How often a restarted Deployment is looked at while the drain waits for it. */
const POLL_MS = 2_000;
/** The reasons of at most this many pods go into one status reason or Event. */
const SHOWN = 5;

/** What the step came to, as data: each Deployment and single pod with what became of it. */
export interface SingleReplicaReport {
  /** namespace/name of the Deployments available again with a new pod elsewhere. */
  available: string[];
  /** Pods and Deployments left to the drain as today, each with why. */
  asToday: string[];
}

function firstOf(items: readonly string[]): string {
  const more = items.length > SHOWN ? ` and ${items.length - SHOWN} more` : '';
  return `${items.slice(0, SHOWN).join('; ')}${more}`;
}

/** The report in words (status reason, Event message); undefined when there is nothing to say. */
function reportWords(report: SingleReplicaReport): string | undefined {
  const parts: string[] = [];
  if (report.available.length > 0)
    parts.push(`restarted before the drain, available elsewhere: ${firstOf(report.available)}`);
  if (report.asToday.length > 0) parts.push(`evicted as today: ${firstOf(report.asToday)}`);
  return parts.length === 0 ? undefined : `single replicas: ${parts.join('; ')}`;
}

/** The Deployments the plan says to restart, each once. */
function toRestart(plan: readonly ReplicaPlan[]): string[] {
  return [...new Set(plan.flatMap((p) => (p.verdict.action === 'restart' ? [p.verdict.deployment] : [])))];
}

/**
 * The step: plan, mark, restart, wait. Returns the record (with its marks) and the report; with
 * --single-replica off, the record as it was and an empty report.
 */
export async function restartSingleReplicas(
  pass: Pass,
  record: CycleRecord,
): Promise<{ record: CycleRecord; report: SingleReplicaReport }> {
  const restarter = pass.deps.restarter;
  const report: SingleReplicaReport = { available: [], asToday: [] };
  if (pass.config.singleReplica !== 'restart' || restarter === undefined) return { record, report };
  const plan = await restarter.plan(pass.signal);
  for (const p of plan) if (p.verdict.action === 'keep') report.asToday.push(`${p.pod}: ${p.verdict.reason}`);
  const wanted = toRestart(plan);
  const marked = new Set((record.restarts ?? []).map((m) => m.deployment));
  const fresh = wanted.filter((d) => !marked.has(d));
  const { current, skip } = await markAndRestart(pass, record, fresh, report);
  const waits = (current.restarts ?? []).filter(
    (m) => wanted.includes(m.deployment) && !skip.has(m.deployment),
  );
  await waitAvailable(pass, waits, report);
  await tell(pass, report);
  return { record: current, report };
}

/**
 * Marks `fresh` in the record, then restarts each: the marks first, so that a restarted agent never
 * restarts them again, even if it died mid-patch. Returns the record and the Deployments not to wait for.
 */
async function markAndRestart(
  pass: Pass,
  record: CycleRecord,
  fresh: readonly string[],
  report: SingleReplicaReport,
): Promise<{ current: CycleRecord; skip: Set<string> }> {
  const skip = new Set<string>();
  const restarter = pass.deps.restarter;
  if (fresh.length === 0 || restarter === undefined) return { current: record, skip };
  const at = pass.now();
  const restarts: RestartMark[] = [
    ...(record.restarts ?? []),
    ...fresh.map((deployment) => ({ deployment, at })),
  ];
  const current = await pass.writeRecord({ ...record, restarts });
  for (const d of fresh) {
    const answer = await restarter.restart(d, at, pass.signal).catch((err: unknown) => ({
      restarted: false as const,
      wait: false,
      reason: `restart failed: ${errorText(err)}`,
    }));
    if (!answer.restarted && !answer.wait) {
      skip.add(d);
      report.asToday.push(`Deployment ${d}: ${answer.reason}`);
    }
  }
  return { current, skip };
}

/** Waits for each restarted Deployment until it is available elsewhere or its bound passes. */
async function waitAvailable(
  pass: Pass,
  marks: readonly RestartMark[],
  report: SingleReplicaReport,
): Promise<void> {
  const restarter = pass.deps.restarter;
  if (restarter === undefined) return;
  const clock = pass.deps.clock;
  let pending = [...marks];
  if (pending.length > 0) {
    const names = pending.map((m) => m.deployment).join(', ');
    await pass.env.progress.report(
      { kind: 'draining', reason: `waiting for restarted Deployments: ${names}` },
      pass.signal,
    );
  }
  while (pending.length > 0) {
    const left: RestartMark[] = [];
    for (const mark of pending) {
      const waiting = await restarter
        .waitingFor(mark.deployment, pass.signal)
        .catch((err: unknown) => `an answer: ${errorText(err)}`);
      const deadline = Date.parse(mark.at) + pass.config.singleReplicaTimeoutMs;
      if (waiting === undefined) report.available.push(mark.deployment);
      else if (!(clock.now().getTime() < deadline))
        report.asToday.push(
          `Deployment ${mark.deployment}: still waiting for ${waiting} after --single-replica-timeout`,
        );
      else left.push(mark);
    }
    pending = left;
    // the next look, or the nearest bound if it comes first
    const next = Math.min(...pending.map((m) => Date.parse(m.at) + pass.config.singleReplicaTimeoutMs));
    if (pending.length > 0)
      await clock.sleep(Math.max(1, Math.min(POLL_MS, next - clock.now().getTime())), pass.signal);
  }
}

/** The log line and Event of the step (the status reason carries it on with the drain's). */
async function tell(pass: Pass, report: SingleReplicaReport): Promise<void> {
  const words = reportWords(report);
  if (words === undefined) return;
  pass.deps.logger.info('single replicas', {
    node: pass.config.nodeId,
    available: report.available,
    asToday: report.asToday,
  });
  const type = report.asToday.length > 0 ? 'Warning' : 'Normal';
  await pass.deps.events.record('SingleReplicaRestart', words, type);
  await pass.env.progress.report({ kind: 'draining', reason: words }, pass.signal);
}
