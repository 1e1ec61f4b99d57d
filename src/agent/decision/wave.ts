// The node's part in its wave (src/node/wave.ts), when one is tracked (waveTracked): it joins a wave
// when its need is new, says how far it got in two labels of its own Node (waiting, back, soaked,
// failed), measures its own soak on its own clock (DESIGN §12: no other machine's clock is compared
// with ours), runs the health checks again after its reboot, and, once its wave's failure budget is
// spent, halts the wave with a fleet pause written by kured-ts. The node about to go judges the
// wave's gates from these labels (src/capacity/wave-census.ts); the coordinator only from its view.
import { failedCheck } from '../../blockers/health-check.js';
import { monotonicMs } from '../../clock/clock.js';
import { budgetsOf } from '../../capacity/budget.js';
import { capacityOf } from '../../capacity/settings.js';
import { budgetText } from '../../config/budget.js';
import type { NodeState } from '../../node/node.js';
import type { CycleRecord } from '../../node/cycle.js';
import { WAVE_STATE_LABEL, newWaveId, waveLabels, waveOf, type WaveState } from '../../node/wave.js';
import { HALT_BY, type FleetPause } from '../../pause/fleet-pause.js';
import { renderMessage } from '../../notify/message.js';
import { errorText } from '../../text/error-text.js';
import { shortDuration } from '../../text/duration.js';
import type { WaveStore } from '../../lock/wave-store.js';
import type { Outcome } from '../outcome.js';
import type { SoakMemory } from './memory.js';
import type { Pass } from './pass.js';

/** While a node is back, its health checks are asked again this often (and Ready looked at). */
const SOAK_POLL_MS = 15_000;

/** The node's wave as its labels say, when a wave is tracked. */
function current(pass: Pass): { wave: string; state: WaveState | undefined } | undefined {
  return pass.deps.waves === undefined ? undefined : waveOf(pass.node.labels);
}

/**
 * The need is recorded: the node joins a wave unless it is in one still (waiting, or failed and
 * wanting its reboot still): the last one started while anyone still waits in it, else a new one.
 * The node labels itself before it names a new wave on the DaemonSet, so that a node that lost that
 * race finds the winner waiting in it and joins it.
 */
export async function joinWave(pass: Pass): Promise<void> {
  const waves = pass.deps.waves;
  const state = current(pass)?.state;
  if (waves === undefined || state === 'waiting' || state === 'failed') return;
  const seen = await waves.sight(pass.signal);
  if (await joinOpen(pass, waves, seen.wave)) return;
  const mine = newWaveId(pass.deps.clock.now(), pass.config.nodeId);
  await label(pass, mine, 'waiting');
  if (await waves.start(mine, seen.resourceVersion, pass.signal)) {
    pass.deps.logger.info('wave started', { node: pass.config.nodeId, wave: mine });
    return;
  }
  // another node named its wave first: join it (it labelled itself before naming it)
  const winner = (await waves.sight(pass.signal)).wave;
  if (winner !== mine) await joinOpen(pass, waves, winner);
}

/** Joins `wave` when anyone still waits in it; false when none is named or nobody waits in it. */
async function joinOpen(pass: Pass, waves: WaveStore, wave: string | undefined): Promise<boolean> {
  if (wave === undefined || !(await waves.open(wave, pass.signal))) return false;
  await label(pass, wave, 'waiting');
  return true;
}

/** No reboot needed any more: a node that waited in its wave leaves it (a failure stays counted). */
export async function leaveWave(pass: Pass): Promise<void> {
  if (current(pass)?.state !== 'waiting') return;
  await pass.guardedWrite('it left its wave', (node) =>
    waveOf(node.labels)?.state === 'waiting' ? { labels: { [WAVE_STATE_LABEL]: null } } : undefined,
  );
}

/** Writes the node's wave and state (guarded), unless its labels say so already. */
async function label(pass: Pass, wave: string, state: WaveState): Promise<void> {
  const written = await pass.guardedWrite(`it joined wave ${wave}`, (node) => {
    const now = waveOf(node.labels);
    return now?.wave === wave && now.state === state ? undefined : { labels: waveLabels(wave, state) };
  });
  // the status names the wave from the node as last read
  if (written !== undefined) pass.env.progress.noteNode(pass.node);
}

/**
 * The labels the write that ends a cycle adds: back (its soak and checks to come), soaked (nothing to
 * wait for), or failed (not back in time); {} without a wave.
 */
export function waveAtEnd(pass: Pass, node: NodeState, ok: boolean): Record<string, string> {
  const wave = pass.deps.waves === undefined ? undefined : waveOf(node.labels)?.wave;
  if (wave === undefined) return {};
  if (!ok) return waveLabels(wave, 'failed');
  const waits = pass.config.soakMs > 0 || pass.config.healthChecks.length > 0;
  return waveLabels(wave, waits ? 'back' : 'soaked');
}

/**
 * The node failed in its wave (`why`): its state says so (guarded, once), then the wave halts if its
 * budget is spent. Nothing without a wave.
 */
export async function waveFailed(pass: Pass, why: string): Promise<void> {
  const wave = current(pass)?.wave;
  if (wave === undefined) return;
  const written = await pass.guardedWrite('it failed in its wave', (node) =>
    waveOf(node.labels)?.state === 'failed' ? undefined : { labels: waveLabels(wave, 'failed') },
  );
  if (written !== undefined) await afterFailure(pass, wave, why);
}

/**
 * A node of `wave` failed: once the wave's failed nodes (those `kured-ts resume` acknowledged left
 * out) reach --max-failures, the wave halts: a fleet pause by kured-ts (HALT_BY) naming them, written
 * where no pause stands, an Event WaveHalted and a notification. Waiters stop at the pause; a node
 * that took its slot but has not drained gives it back (haltedBeforeDrain).
 */
export async function afterFailure(pass: Pass, wave: string, why: string): Promise<void> {
  const { waves, logger } = pass.deps;
  const budget = pass.config.maxFailures;
  if (waves === undefined || budget === undefined) return;
  try {
    const failed = await waves.failed(wave, pass.signal);
    // resolved as the lock and the coordinator resolve it: of the nodes the DaemonSet runs on
    const max = budgetsOf(capacityOf(pass.config), (await waves.sight(pass.signal)).nodes).failures;
    if (max === undefined || failed.length < max) return;
    const reason = `wave ${wave} halted by its failure budget (--max-failures ${budgetText(budget)}): ${failed.slice(0, 20).join(', ')} failed; kured-ts resume continues it`;
    const halt: FleetPause = { reason, by: HALT_BY, since: pass.now(), wave, failed: failed.slice(0, 100) };
    if (!(await waves.halt(halt, pass.signal))) return;
    logger.warn('wave halted', { node: pass.config.nodeId, wave, failed, why });
    await pass.deps.events.record('WaveHalted', `${reason} (this node: ${why})`, 'Warning');
    await notifyFailure(pass, 'wave-halted', `${reason}; this node: ${why}`);
  } catch (err) {
    if (pass.signal?.aborted === true) throw err;
    // the node about to go judges the budget itself (roomFor): a halt not written holds nothing less
    logger.warn('cannot halt the wave', { node: pass.config.nodeId, wave, error: errorText(err) });
  }
}

/** A failure notification (--notify-events): the kind's text with the node, and the reason after it. */
async function notifyFailure(
  pass: Pass,
  kind: 'wave-halted' | 'not-back' | 'reboot-failed',
  reason: string,
): Promise<void> {
  const node = pass.config.nodeId;
  try {
    const text = renderMessage(pass.config.failureTemplates[kind], node);
    await pass.deps.notifier.notify(kind, node, `${text}: ${reason}`);
  } catch (err) {
    pass.deps.logger.warn('notification failed', { node, event: kind, error: errorText(err) });
  }
}

/**
 * After the cycle cordon: a wave halted meanwhile (a pause by kured-ts) sends a node that has not
 * drained back: its cycle ends, its slot goes. undefined: not halted (or no budget), go on.
 */
export async function haltedBeforeDrain(
  pass: Pass,
  record: CycleRecord,
  abort: (pass: Pass, record: CycleRecord, why: string) => Promise<Outcome>,
): Promise<Outcome | undefined> {
  const waves = pass.deps.waves;
  if (waves === undefined || pass.config.maxFailures === undefined) return undefined;
  const halt = (await waves.sight(pass.signal)).halt;
  if (halt === undefined) return undefined;
  return abort(pass, record, `the wave halted before the drain (${halt.reason})`);
}

/**
 * Outside a cycle, a node back in its wave: Ready for --soak on its own clock, and its health checks
 * true, it says soaked; a check still failing --health-check-timeout after it came back makes it
 * failed. The soak starts again whenever the node is seen not Ready.
 */
export async function soak(pass: Pass): Promise<void> {
  const wave = current(pass);
  if (wave?.state !== 'back') {
    pass.remember({ kind: 'soak', soak: undefined });
    return;
  }
  const at = monotonicMs(pass.deps.clock);
  const s = soakNow(pass.memory.soak, wave.wave, at, isReady(pass.node));
  pass.remember({ kind: 'soak', soak: s });
  const checks = await checksFailing(pass);
  if (checks !== undefined && at - s.backSince >= pass.config.healthCheckTimeoutMs) {
    pass.remember({ kind: 'soak', soak: undefined });
    await checksFailed(pass, checks);
    return;
  }
  const soakedAt = soakEnd(s, pass.config.soakMs);
  if (checks === undefined && soakedAt !== undefined && at >= soakedAt) {
    pass.remember({ kind: 'soak', soak: undefined });
    await soaked(pass, wave.wave);
    return;
  }
  const wait = checks !== undefined || soakedAt === undefined ? SOAK_POLL_MS : soakedAt - at;
  const dueAt = pass.deps.clock.now().getTime() + Math.max(0, Math.min(wait, SOAK_POLL_MS * 40));
  pass.remember({ kind: 'soak', soak: { ...s, dueAt } });
}

/** A health check still false --health-check-timeout after the reboot: the node failed in its wave. */
async function checksFailed(pass: Pass, checks: string): Promise<void> {
  const why = `${checks}, ${shortDuration(pass.config.healthCheckTimeoutMs)} after its reboot`;
  await waveFailed(pass, why);
  await notifyFailure(pass, 'not-back', why);
}

/** When the node will have been Ready for --soak (monotonic ms); undefined while it is not Ready. */
function soakEnd(s: SoakMemory, soakMs: number): number | undefined {
  return s.readySince === undefined ? undefined : s.readySince + soakMs;
}

function isReady(node: NodeState): boolean {
  return node.conditions.find((c) => c.type === 'Ready')?.status === 'True';
}

/** The soak of `wave` after a look at `at`: begun now when new; its Ready time restarts when not Ready. */
function soakNow(before: SoakMemory | undefined, wave: string, at: number, ready: boolean): SoakMemory {
  const s = before?.wave === wave ? before : { wave, backSince: at };
  return { ...s, readySince: ready ? (s.readySince ?? at) : undefined };
}

/** The node soaked: it says so (guarded: only from back). */
async function soaked(pass: Pass, wave: string): Promise<void> {
  await pass.guardedWrite('it soaked', (node) =>
    waveOf(node.labels)?.state === 'back' ? { labels: waveLabels(wave, 'soaked') } : undefined,
  );
  pass.deps.logger.info('soaked', { node: pass.config.nodeId, wave });
}

/** The first failing health check after the reboot, as a reason; undefined: all true (or none). */
async function checksFailing(pass: Pass): Promise<string | undefined> {
  const checks = pass.deps.checks;
  if (checks === undefined) return undefined;
  try {
    return failedCheck(await checks.evaluate(pass.signal));
  } catch (err) {
    if (pass.signal?.aborted === true) throw err;
    return `health checks: ${errorText(err)}`;
  }
}

/**
 * The cycle just ended, the node Ready and back in `wave`: its soak starts now (on this agent's
 * clock), and the next pass comes when it ends or the checks are asked again, not a period later.
 */
export function startSoak(pass: Pass): void {
  const wave = current(pass);
  if (wave?.state !== 'back') return;
  const at = monotonicMs(pass.deps.clock);
  const wait = pass.config.healthChecks.length > 0 ? SOAK_POLL_MS : pass.config.soakMs;
  pass.remember({
    kind: 'soak',
    soak: {
      wave: wave.wave,
      backSince: at,
      readySince: at,
      dueAt: pass.deps.clock.now().getTime() + Math.min(wait, pass.config.soakMs || SOAK_POLL_MS),
    },
  });
}

/** When the next pass is due for the soak (ms since the epoch), if one runs. */
export function soakDue(memory: { soak?: SoakMemory }): number | undefined {
  return memory.soak?.dueAt;
}
