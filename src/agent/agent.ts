// The agent: DESIGN §1's reboot cycle for one node, run as a loop over injected interfaces.
//
// Four files by concern: this one is the loop (a pass at once at start-up, then as wake-up.ts
// decides from the outcome: every jittered period, sooner while a reboot is in progress, at once when
// the lock changes or a reboot becomes required; and, beside it, the lease of a held slot and the
// minute sentinel refresh), decision/ is one pass of the cycle from what the cluster records,
// report.ts turns its outcome into status, Events, metrics and logs.
import { monotonicMs, type Clock } from '../clock/clock.js';
import type { Logger } from '../log/logger.js';
import type { AgentMetrics } from '../metrics/agent-metrics.js';
import type { Sentinel, SentinelVerdict } from '../sentinel/sentinel.js';
import { errorText } from '../text/error-text.js';
import type { AgentConfig, AgentDeps } from './agent-config.js';
import { HeldSlot } from '../lock/held-slot.js';
import { Decision } from './decision/decision.js';
import { misconfiguredBy } from './decision/misconfigured.js';
import { waitsAgainWhenQuiet, type Outcome } from './outcome.js';
import { Reporter } from './report.js';
import { fleetLockWaitsAfter, wakeUp, type WakeUp } from './wake-up.js';
import { rebootRequestOf } from '../node/reboot-request.js';

export type { Outcome } from './outcome.js';

/** A held slot is renewed every --lock-ttl / LEASE_RENEWALS_PER_TTL. */
const LEASE_RENEWALS_PER_TTL = 3;

export type { AgentConfig, AgentDeps } from './agent-config.js';

/** Read through a call so that the compiler does not narrow it across awaits. */
function aborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

export class Agent {
  private readonly reporter: Reporter;
  private readonly decision: Decision;
  /** Whether we hold a proven slot: the decision takes and gives it back, keepLease renews it. */
  private readonly slot: HeldSlot;
  /** Ends an idle wait early (wake); set only while run() waits after an 'idle' outcome. */
  private idleWait: AbortController | undefined;
  /** wake() interrupted the idle wait: the next pass is a start-up pass (taint now, lock later). */
  private woken = false;
  /** The views' version() when the last pass began (a wait ends at once on a change since). */
  private since: number | undefined;
  /** FleetLock refusals in a row (the retry backs off with them). */
  private fleetLockWaits = 0;

  constructor(
    private readonly config: AgentConfig,
    private readonly deps: AgentDeps,
  ) {
    this.reporter = new Reporter(config.nodeId, deps, {
      deadlineMs: config.rebootDeadlineMs,
      periodMs: config.periodMs,
      ...(deps.shutdown === undefined ? {} : { shutdown: deps.shutdown }),
      templates: config.failureTemplates,
    });
    this.slot = new HeldSlot(deps.lock);
    this.decision = new Decision(config, deps, this.reporter, this.slot);
  }

  /** One pass of the cycle; never throws except when `signal` aborts (the tick is abandoned). */
  async tick(signal?: AbortSignal): Promise<Outcome> {
    return this.step(signal, true);
  }

  /**
   * The first pass of `run`, at once: crash repair, a cycle in progress (a reboot in progress goes on
   * without delay), and when a reboot is required the taint, so that pods evicted from the first
   * node to take the lock do not land here. Stops before the lock attempt ('pending').
   */
  async startUp(signal?: AbortSignal): Promise<Outcome> {
    return this.step(signal, false);
  }

  private async step(signal: AbortSignal | undefined, acquire: boolean): Promise<Outcome> {
    this.deps.metrics.heartbeat(this.deps.clock.now());
    let outcome: Outcome;
    try {
      outcome = await this.decision.decide(signal, acquire);
    } catch (err) {
      if (signal?.aborted) throw err;
      // a write the agent's own admission policy denies is a configuration error, not an outage
      outcome = misconfiguredBy(err, this.config) ?? { kind: 'error', reason: errorText(err) };
    }
    if (outcome !== this.reporter.last && !this.stillIdle(outcome))
      await this.reporter.report(outcome, signal);
    return outcome;
  }

  /**
   * Idle again, for the same reason: nothing to report (the status says so, the metrics too). An idle
   * agent at --period 5s logged a line every period for it (issue 42: an idle agent costs nothing).
   */
  private stillIdle(outcome: Outcome): boolean {
    const last = this.reporter.last;
    return (
      outcome.kind === 'idle' &&
      last?.kind === 'idle' &&
      last.reason === outcome.reason &&
      !this.reporter.statusUnsent
    );
  }

  /**
   * Ticks until `signal` aborts: at once (startUp), then every --period jittered ±50%, the first
   * lock attempt within a minute, sooner while verifying a reboot, and at once when the lock
   * changes while we wait for a slot or a PodDisruptionBudget. Meanwhile renews, with --lock-ttl,
   * the lease of a slot we hold, and the cycle's silences (--silence-matcher). */
  async run(signal: AbortSignal): Promise<void> {
    const views = this.deps.views;
    // an admin's request (`kured-ts reboot`) on the followed Node wakes an idle agent at once
    const stop = views?.onNodeChange((annotations) => {
      if (rebootRequestOf(annotations) !== undefined) this.wake();
    });
    try {
      // the views first: the first pass's read of the Node waits for their list instead of its own
      const also = [this.keepLease(signal), this.deps.silences?.keep(signal)];
      await Promise.all([views?.run(signal), this.loop(signal), ...also]);
    } finally {
      stop?.();
    }
  }

  private async loop(signal: AbortSignal): Promise<void> {
    let last: Outcome | undefined;
    while (!signal.aborted) {
      try {
        // what the views had taken in when this pass began: a change during it ends the wait after it
        this.since = this.deps.views?.version();
        if (last === undefined || this.woken) {
          this.woken = false;
          last = await this.startUp(signal);
        } else last = await this.tick(signal);
        // an idle agent reads none of its pods: their watch closes until a reboot is wanted
        if (last.kind === 'idle') this.deps.views?.releasePods();
        await this.wait(this.wakeUp(last), last, signal);
      } catch (err) {
        if (aborted(signal)) return;
        throw err;
      }
    }
  }

  /**
   * While we hold a slot, renew its lease every --lock-ttl / 3 (a sign of life for every reader),
   * also while a tick is busy draining or waiting --reboot-delay. Nothing without a TTL.
   */
  private async keepLease(signal: AbortSignal): Promise<void> {
    const ttl = this.config.lockTtlMs;
    if (ttl <= 0) return;
    const every = ttl / LEASE_RENEWALS_PER_TTL;
    while (!signal.aborted) {
      await this.deps.clock.sleep(every, signal).catch(() => undefined);
      if (aborted(signal)) continue;
      try {
        await this.slot.renew(signal);
      } catch (err) {
        if (!aborted(signal))
          this.deps.logger.warn('cannot renew lock slot', {
            node: this.config.nodeId,
            error: errorText(err),
          });
      }
    }
  }

  /**
   * Someone (the minute sentinel refresher, the request poller) saw that a reboot became required
   * (on the host, or asked for on the node): end an idle wait now,
   * so the taint goes on at once instead of up to 1.5 periods later. The lock attempt still follows
   * the start-up jitter. Does nothing unless the agent is idle.
   */
  wake(): void {
    if (this.idleWait === undefined) return;
    this.decision.forgetClean();
    this.woken = true;
    this.idleWait.abort(new Error('woken: reboot required'));
  }

  /** The pause after `outcome` before the next tick (wake-up.ts decides it, and what ends it sooner). */
  nextDelay(outcome: Outcome): number {
    return this.wakeUp(outcome).delayMs;
  }

  private wakeUp(outcome: Outcome): WakeUp {
    this.fleetLockWaits = fleetLockWaitsAfter(outcome, this.fleetLockWaits);
    const { clock, window, views } = this.deps;
    const nowMs = clock.now().getTime();
    const dueMs = this.decision.protectedUntil();
    return wakeUp(outcome, {
      nowMs,
      periodMs: this.config.periodMs,
      random: this.deps.random,
      following: views?.following === true,
      lockQueue: this.config.lockQueue,
      fleetLockWaits: this.fleetLockWaits,
      windowOpens: () => window.next(new Date(nowMs)).change?.getTime(),
      ...(dueMs === undefined ? {} : { dueMs }),
      statusUnsent: this.reporter.statusUnsent,
    });
  }

  private async wait({ delayMs, on }: WakeUp, last: Outcome, signal: AbortSignal): Promise<void> {
    const views = this.deps.views;
    if (on === 'wake') await this.idleSleep(delayMs, signal);
    else if (on === 'node' && views !== undefined) {
      // readiness is what the Node (and its DaemonSet pods) say: look again when they change
      await views.changed(delayMs, signal, this.config.waitForDaemonSetPods, this.since);
      signal.throwIfAborted();
    } else if (on === 'lock')
      await this.reporter.flushingWhile(signal, () => this.waitForLock(delayMs, last, signal));
    else await this.deps.clock.sleep(delayMs, signal);
  }

  /**
   * The wait for a slot or a turn, as the last refusal said. The lock spreads the waiters woken by a
   * freed slot itself (DaemonSetLock, HERD_SPREAD_MS) and returns only to those that may still find
   * it free: no extra pause here. A wait that times out with nothing changed may be followed by
   * another (waitsAgainWhenQuiet, stillQuiet).
   */
  private async waitForLock(delay: number, last: Outcome, signal: AbortSignal): Promise<void> {
    const how = last.kind === 'waiting-for-lock' ? last.wait : undefined;
    for (let wait = delay; ; wait = this.nextDelay(last)) {
      const quiet = waitsAgainWhenQuiet(last) ? this.quiet() : undefined;
      const started = monotonicMs(this.deps.clock);
      try {
        await this.deps.lock.waitForChange(wait, signal, how);
      } catch (err) {
        if (signal.aborted) throw err;
        await this.deps.clock.sleep(wait, signal);
        return;
      }
      // (within a millisecond: timers and the virtual clock round what they were asked for)
      const timedOut = monotonicMs(this.deps.clock) - started >= wait - 1;
      if (!timedOut || quiet === undefined || !(await this.stillQuiet(quiet, signal))) return;
    }
  }

  /**
   * What a waiter's next pass would start from, when it can tell without a request: the own Node as
   * followed (see stillQuiet). undefined: it cannot (no watch), and the next pass reads as always.
   */
  private quiet(): string | undefined {
    if (this.reporter.statusUnsent) return undefined;
    return this.deps.views?.fingerprint();
  }

  /**
   * A timed-out wait for a slot or a turn ends in another wait, not a pass, while nothing the pass
   * decides on changed: the sentinel still asks, the window is open, the own Node (an admin's request,
   * a pause, an approval) and the lock as last seen are as they were. A pass per period per waiter
   * grew with the wave's length, i.e. with the fleet (issue 42); a turn or a slot wakes the waiter.
   */
  private async stillQuiet(quiet: string, signal: AbortSignal): Promise<boolean> {
    const { sentinel, window, clock } = this.deps;
    if (!window.contains(clock.now())) return false;
    const verdict = await sentinel.rebootRequired(signal);
    return verdict.required && this.deps.views?.fingerprint() === quiet;
  }

  /** Sleeps like any wait, but wake() ends it early (without error). */
  private async idleSleep(delay: number, signal: AbortSignal): Promise<void> {
    const controller = new AbortController();
    this.idleWait = controller;
    try {
      await this.deps.clock.sleep(delay, AbortSignal.any([signal, controller.signal]));
    } catch (err) {
      if (signal.aborted || !this.woken) throw err;
    } finally {
      this.idleWait = undefined;
    }
  }
}

/**
 * How often an agent looks for an admin's reboot request on its node (`kured-ts reboot`) while it
 * would otherwise not read it (idle; capped by --period): one GET of its Node. 5,000 nodes make
 * 17 requests a second of it, a kubelet's Lease renewals 500.
 */
export const REQUEST_POLL_MS = 5 * 60_000;

/** What the request poller reads and reports to. */
export interface RebootRequestPollerOptions {
  /** Is there a request on the node now (one read of it)? */
  requested(signal: AbortSignal): Promise<boolean>;
  clock: Clock;
  logger: Logger;
  /** Stops the poller. */
  signal: AbortSignal;
  /** Default REQUEST_POLL_MS. */
  intervalMs?: number;
  /** Called whenever a request stands (the agent wakes from an idle wait). */
  onRequested: () => void;
}

/** Wakes an idle agent when an admin asked its node to reboot. Resolves when the signal aborts. */
export async function pollRebootRequest(options: RebootRequestPollerOptions): Promise<void> {
  const { clock, logger, signal } = options;
  while (!signal.aborted) {
    await clock.sleep(options.intervalMs ?? REQUEST_POLL_MS, signal).catch(() => undefined);
    if (aborted(signal)) return;
    try {
      if (await options.requested(signal)) options.onRequested();
    } catch (err: unknown) {
      if (!aborted(signal)) logger.debug('cannot read the reboot request', { error: errorText(err) });
    }
  }
}

/** What the minute sentinel refresher reads and reports to. */
export interface RebootRequiredRefresherOptions {
  sentinel: Sentinel;
  metrics: AgentMetrics;
  clock: Clock;
  logger: Logger;
  /** Stops the refresher. */
  signal: AbortSignal;
  /** Default 60 s (kured's interval). */
  intervalMs?: number;
  /** Called whenever the sentinel says a reboot is required (the agent wakes from an idle wait). */
  onRequired?: () => void;
}

/**
 * Keeps kured_reboot_required current between ticks, as kured does (every minute), and wakes an idle
 * agent when a reboot becomes required. Resolves when the signal aborts; never rejects.
 */
export async function refreshRebootRequired(options: RebootRequiredRefresherOptions): Promise<void> {
  const { sentinel, clock, logger, signal } = options;
  const intervalMs = options.intervalMs ?? 60_000;
  while (!signal.aborted) {
    try {
      noteVerdict(await sentinel.rebootRequired(signal), options);
    } catch (err: unknown) {
      if (!aborted(signal)) logger.warn('reboot sentinel failed', { error: errorText(err) });
    }
    await clock.sleep(intervalMs, signal).catch(() => undefined);
  }
}

/** Records one sentinel answer: the metric, an error count and warning, or the wake-up call. */
function noteVerdict(verdict: SentinelVerdict, options: RebootRequiredRefresherOptions): void {
  if (verdict.error !== undefined) {
    options.metrics.countSentinelError();
    options.logger.warn('reboot sentinel failed', { error: verdict.error });
    return;
  }
  options.metrics.setRebootRequired(verdict.required);
  if (verdict.required) options.onRequired?.();
}
