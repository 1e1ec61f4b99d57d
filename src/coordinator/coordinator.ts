// The coordinator: one decider for the lock's queue, so that on patch night (every node needs a
// reboot at once, DESIGN §13) a freed slot wakes one node instead of every waiter, and nobody but
// the coordinator looks at the whole fleet. It runs as its own small Deployment (the chart's
// `coordinator`, two replicas); the replicas elect a leader through a Lease (lease-elector.ts).
//
// The leader keeps one view of the Nodes (fleet-view.ts: one list, then a watch) and of the lock
// (a watch of its DaemonSet), and for each free slot names the waiting node whose reboot has been
// needed longest by a turn annotation on that node (turn-plan.ts); the node's agent, which follows
// only its own Node while it waits, then takes the slot itself. It advises on its Lease (the nodes it
// sees, and which gate holds every waiter back now), which the waiters show in their status.
//
// What it cannot do: grant a slot, or let a node past a gate. The slot is still taken by the agent's
// own guarded write to the lock, under the lock's rules (--concurrency, groups, cycle records, forged
// locks), and the agent judges every gate of the fleet's capacity itself from the Nodes (DESIGN §12),
// so a partitioned, stale, duplicated or forged coordinator can change who goes first, never how many
// go or which (docs/advisor.md). A dead
// leader stalls the queue until the standby takes its Lease over (one lease duration, 30 s; at once
// when it stopped cleanly); with no coordinator at all the agents fall back to first come.
import { blindnessOf, leadership, sightOf, type Blindness } from './blindness.js';
import { WAVE_RESUMED_ANNOTATION, parseWaveResume } from '../node/wave.js';
import type { WavePlanConfig } from './wave-plan.js';
import { monotonicMs } from '../clock/clock.js';
import { statusMessage, isNotFound } from '../kube/errors.js';
import type { V1DaemonSet } from '../kube/kube.js';
import { HEALTH_NAMES_SHOWN, type FleetHealth } from '../capacity/fleet-health.js';
import { readLockState } from '../lock/lock-read.js';
import { roomFor } from '../capacity/room.js';
import { LeaseObserver } from '../lock/lease.js';
import { HANDOFF_GRACE_MS, type LockState } from '../lock/lock-state.js';
import { FleetLockAsks } from './fleetlock-asks.js';
import { LockView } from '../lock/lock-view.js';
import { daemonSetListWatch } from '../kube/list-watch.js';
import { Reflector, WATCH_SILENCE_MS, latest } from '../kube/reflector.js';
import { TURN_ANNOTATION, formatLapsedTurn, formatTurn, parseTurn } from '../queue/turn.js';
import { FleetView, turnFields } from './fleet-view.js';
import { PassedOver } from './passed-over.js';
import { LEASE_DURATION_MS, LeaseElector } from './lease-elector.js';
import { planTurns, type Plan, type SlotHolder } from './turn-plan.js';
import type { CoordinatorOptions } from './coordinator-options.js';
import type { FleetBudgets } from '../capacity/budget.js';
import { planBudgets } from '../capacity/plan-budgets.js';
import { NodeMaintenances } from './node-maintenance.js';
import { heldAdvice } from './room-words.js';

/** Turns given, lapsed and plans made by this replica (for tests, simulate and metrics). */
export interface CoordinatorStats {
  plans: number;
  granted: number;
  lapsed: number;
  leaderships: number;
  /** Terms given up because the leader could not see the fleet for a lease duration. */
  stepDowns: number;
}

/**
 * A watch of the Nodes that brings neither an event nor a bookmark for this long is given up: the
 * one staleness bound of every view (WATCH_SILENCE_MS, the agents' too). The view is blind until a
 * new watch runs, and the leader advises nothing meanwhile; blind for a lease duration, it steps
 * down: a silent API server stalls the wave for at most the bound and one lease.
 */
const VIEW_SILENCE_MS = WATCH_SILENCE_MS;

/** The longest a leader sleeps without a change (lease expiries of the lock's slots are woken for). */
const IDLE_REPLAN_MS = 60_000;

/** Read through a call so that the compiler does not narrow it across awaits. */
function aborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

/** The lock as a leader judges it: its state, and why it gives no slot now (undefined: it does). */
interface JudgedLock {
  state: LockState;
  held: string | undefined;
}

export class Coordinator {
  readonly stats: CoordinatorStats = { plans: 0, granted: 0, lapsed: 0, leaderships: 0, stepDowns: 0 };
  private readonly elector: LeaseElector;

  constructor(private readonly o: CoordinatorOptions) {
    this.elector = new LeaseElector({
      kube: o.kube,
      namespace: o.namespace,
      name: o.leaseName,
      identity: o.identity,
      clock: o.clock,
      log: o.log,
      random: o.random,
      ...(o.leaseDurationMs === undefined ? {} : { leaseDurationMs: o.leaseDurationMs }),
      ...(o.renewDeadlineMs === undefined ? {} : { renewDeadlineMs: o.renewDeadlineMs }),
      ...(o.retryPeriodMs === undefined ? {} : { retryPeriodMs: o.retryPeriodMs }),
    });
  }

  get leading(): boolean {
    return this.elector.isLeader;
  }

  /** Campaigns and, while leading, coordinates; resolves when `signal` aborts (the Lease released). */
  run(signal: AbortSignal): Promise<void> {
    return this.elector.run((leading) => new Term(this.o, this.elector, this.stats).run(leading), signal);
  }
}

/** One leadership term: its own views, started fresh (a new leader trusts nothing of an old one). */
class Term {
  private readonly fleet: FleetView;
  /** The lock's DaemonSet, followed (a read, a watch, a read after each: one small object). */
  private readonly lockReflector: Reflector<V1DaemonSet>;
  private readonly leases = new LeaseObserver();
  private readonly view: LockView;
  private ds: V1DaemonSet | undefined;
  private readonly turnSince = new Map<string, number>();
  private readonly passedOver = new PassedOver();
  private readonly fleetLockAsks = new FleetLockAsks();
  /** The warning of a leader leading on while the API server turns its reads away was given (once per spell). */
  private throttledSaid = false;
  /** When the last plan's first pending turn lapses (monotonic ms): the next plan is due then. */
  private nextLapseMs: number | undefined;
  /** Changes seen by the views: a plan idles after it only when none came in while it ran. */
  private changes = 0;
  private wake: (() => void) | undefined;
  /** When this term began (monotonic ms). */
  private started = 0;
  private readonly maintenances: NodeMaintenances;

  constructor(
    private readonly o: CoordinatorOptions,
    private readonly elector: LeaseElector,
    private readonly stats: CoordinatorStats,
  ) {
    this.maintenances = new NodeMaintenances(o);
    this.fleet = new FleetView({
      kube: o.kube,
      clock: o.clock,
      log: o.log,
      random: o.random,
      groupLabel: o.groups?.label ?? o.wave?.order?.label,
      ...(o.pageSize === undefined ? {} : { pageSize: o.pageSize }),
      ...(this.silenceMs() > 0 ? { silenceMs: this.silenceMs() } : {}),
    });
    this.lockReflector = new Reflector(daemonSetListWatch(o.kube, o.namespace, o.dsName), {
      clock: o.clock,
      log: o.log,
      random: o.random,
      relistEachRound: true,
    });
    this.view = new LockView(
      { nodeId: '', concurrency: o.concurrency, ttlMs: o.ttlMs, groups: o.groups, clock: o.clock },
      this.leases,
    );
  }

  /**
   * Plans until leadership ends; returns early (the elector then steps down) when this replica has
   * been blind for a lease duration: no whole list of the Nodes, its watch failing, or the lock
   * never read. A leader that cannot see the fleet would keep its Lease and give no turns.
   */
  async run(signal: AbortSignal): Promise<void> {
    this.stats.leaderships++;
    this.started = monotonicMs(this.o.clock);
    const changed = (): void => {
      this.changes++;
      this.wake?.();
    };
    const stop = new AbortController();
    const views = AbortSignal.any([signal, stop.signal]);
    const following = [this.fleet.follow(changed, views), this.followLock(changed, views)];
    // other operators' maintenances read once before the first plan (a turn given before would
    // stand), while the views take their first lists
    this.fleet.setMaintained(await this.maintenances.first(views));
    following.push(
      this.maintenances.run((m) => {
        this.fleet.setMaintained(m);
        changed();
      }, views),
    );
    while (!signal.aborted) {
      await this.o.clock.sleep(this.o.settleMs ?? 200, signal).catch(() => undefined);
      if (aborted(signal)) break;
      const blind = this.blindness();
      if (this.givesUp(blind)) {
        this.stats.stepDowns++;
        break;
      }
      const seen = this.changes;
      // a view that does not follow the fleet advises nothing (a new term's, before its first list)
      if (blind !== undefined || this.silent()) this.elector.advise(undefined);
      if (blind === undefined) await this.step(signal);
      if (this.changes === seen) await this.idle(signal);
    }
    stop.abort();
    await Promise.all(following);
  }

  /**
   * The view has heard nothing from the API server (no event, no bookmark, no list) for
   * VIEW_SILENCE_MS: its watches are answered but say nothing (a hung connection, a stalled server).
   * It plans on (a plan only orders turns) but advises nothing until it hears again.
   */
  private silent(): boolean {
    const bound = this.silenceMs();
    const heard = this.fleet.lastHeardMs ?? this.started;
    return bound > 0 && monotonicMs(this.o.clock) - heard > bound;
  }

  /** The view's silence bound (CoordinatorOptions.silenceMs); 0: none. */
  private silenceMs(): number {
    return this.o.silenceMs ?? VIEW_SILENCE_MS;
  }

  private leaseMs(): number {
    return this.o.leaseDurationMs ?? LEASE_DURATION_MS;
  }

  /** Does this leader give up leading (blindness.ts decides)? Said as a warning (leading on: once per spell). */
  private givesUp(blind: Blindness | undefined): boolean {
    const { verdict, warning } = leadership(blind, this.leaseMs());
    const again = verdict === 'leads-on' && this.throttledSaid;
    this.throttledSaid = verdict === 'leads-on';
    if (warning !== undefined && !again)
      this.o.log.warn(warning.message, { identity: this.o.identity, ...warning.fields });
    return verdict === 'hands-over';
  }

  /** Why this leader cannot plan now, and for how long it has not been able to; undefined: it can. */
  private blindness(): Blindness | undefined {
    return blindnessOf(monotonicMs(this.o.clock), this.started, {
      nodes: sightOf(this.fleet),
      lock: sightOf(this.lockReflector, this.ds !== undefined),
    });
  }

  /** Sleeps until a change, the next lapse of a turn or a slot's expiry, or IDLE_REPLAN_MS. */
  private async idle(signal: AbortSignal): Promise<void> {
    const now = monotonicMs(this.o.clock);
    const next = [this.nextLapseMs, this.view.nextExpiry(this.lockState().state)];
    const times = next.filter((t): t is number => t !== undefined);
    const blind = this.blindness();
    // blind: look again when a lease of it has passed, and at most once a second while it waits on
    if (blind !== undefined) times.push(Math.max(now + 1_000, now - blind.forMs + this.leaseMs()));
    const until = Math.min(IDLE_REPLAN_MS, ...times.map((t) => Math.max(0, t - now)));
    const stop = new AbortController();
    const both = AbortSignal.any([signal, stop.signal]);
    try {
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        void this.o.clock.sleep(until, both).then(resolve, resolve);
      });
    } finally {
      this.wake = undefined;
      stop.abort();
    }
  }

  /** Follows the lock's DaemonSet (a read, then a watch, a read after each: one small object). */
  private async followLock(changed: () => void, signal: AbortSignal): Promise<void> {
    const { namespace, dsName } = this.o;
    const reflector = this.lockReflector;
    let warned = false;
    await reflector.run(
      latest<V1DaemonSet>((ds) => {
        // deleted: the lock is gone with it (the agents find the same); the view waits for it again
        if (ds === undefined && !warned)
          this.o.log.warn('coordinator cannot read the lock', { error: `${namespace}/${dsName} not found` });
        warned = ds === undefined;
        this.ds = ds;
        changed();
      }),
      signal,
    );
  }

  /** The lock as this leader judges it now (the agents' own reader): live slots, and why it gives none, if it does not. */
  private lockState(): JudgedLock {
    const now = this.view.nowMs();
    const state = readLockState(this.ds, this.o.annotation, (key, text) => {
      this.leases.observe(key, text, now);
    });
    if (state.malformed === undefined) return { state, held: this.heldBy(state) };
    const readable = { ...state, entries: [] };
    return this.view.malformedExpired(state)
      ? { state: readable, held: undefined }
      : { state, held: `the lock annotation is unparsable: ${state.malformed}` };
  }

  /** Why a readable lock gives no slot to anyone: a manual lock, or more live slots than allowed. */
  private heldBy(state: LockState): string | undefined {
    const live = this.view.live(state.entries);
    // the agents' own rule (roomFor), asked for no node: the answers that hold every node back
    const room = roomFor({
      live,
      nodeId: '',
      declared: state.declared,
      group: undefined,
      concurrency: this.view.slots(state),
      groups: undefined,
    });
    if (room.room) return undefined;
    if (room.why === 'manual') return `kured's manual lock (${room.entry.nodeID}) holds every slot`;
    if (room.why === 'forged')
      return `the lock names ${live.length} slots, more than it or --concurrency allow`;
    return undefined;
  }

  /** The wave's gates for a plan, over the view (wave-plan.ts); none when not configured. */
  private wavePlan(budgets: FleetBudgets): { wave?: WavePlanConfig } {
    const w = this.o.wave;
    if (w === undefined) return {};
    const resumed = parseWaveResume(this.ds?.metadata?.annotations?.[WAVE_RESUMED_ANNOTATION]);
    return {
      wave: {
        start: w.start,
        growth: w.growth,
        soakMs: w.soakMs,
        slowStart: budgets.slowStart,
        ...(budgets.failures === undefined ? {} : { maxFailures: budgets.failures }),
        ...(w.order === undefined ? {} : { order: w.order.order }),
        members: (wave) => this.fleet.waveMembers(wave),
        ...(resumed === undefined ? {} : { resumed }),
      },
    };
  }

  /** One plan over the current views, carried out. */
  private async step(signal: AbortSignal): Promise<void> {
    const lock = this.lockState();
    const slots: SlotHolder[] = this.view.live(lock.state.entries).map((e) => ({
      node: e.nodeID,
      group: typeof e.metadata.group === 'string' ? e.metadata.group : undefined,
      controlPlane: e.metadata.controlPlane === true,
    }));
    const health = this.health();
    const nowMs = monotonicMs(this.o.clock);
    for (const r of this.fleet.withTurn())
      if (r.turn !== undefined && !this.turnSince.has(r.name)) this.turnSince.set(r.name, nowMs);
    this.fleetLockAsks.note(this.fleet.withTurn(), nowMs);
    const { gates, budgets } = planBudgets(this.o, health, {
      unhealthy: this.fleet.unavailable(),
      quarantined: this.fleet.quarantined(),
      controlPlane: this.fleet.controlPlane(),
      matching: lock.state.matching,
    });
    const plan = planTurns({
      nodes: this.fleet.inPlan(),
      index: { withTurn: this.fleet.withTurn(), inCycle: this.fleet.inCycle() },
      slots,
      lockHeld: lock.held,
      ...gates,
      fleetLock: this.o.fleetLock === true,
      now: this.o.clock.now(),
      nowMs,
      turnSince: this.turnSince,
      graceMs: this.o.graceMs ?? HANDOFF_GRACE_MS,
      fleetLockAsks: this.fleetLockAsks.seen(),
      passedOver: this.passedOver.names(),
      ...this.wavePlan(budgets),
    });
    this.stats.plans++;
    this.nextLapseMs = plan.nextLapseMs;
    if (!this.silent()) this.advise(health.total, plan);
    this.forgetStale();
    await this.carryOut(plan, signal);
  }

  /**
   * Passed-over nodes that no longer wait are forgotten, and those whose agent wrote its status since
   * the lapse get their place back; turns no longer on any node are forgotten.
   */
  private forgetStale(): void {
    for (const node of this.passedOver.settle((n) => this.fleet.get(n)))
      this.o.log.info('node back in its place after its turn lapsed', { node });
    for (const node of this.turnSince.keys()) {
      const record = this.fleet.get(node);
      if (record?.turn === undefined) this.turnSince.delete(node);
    }
  }

  /** Sends the nodes whose turn lapsed behind every other waiter, until their agent writes its status. */
  private passOver(lapsed: readonly string[]): void {
    for (const node of lapsed) {
      this.o.log.info('turn lapsed: not taken within its grace', { node });
      const record = this.fleet.get(node);
      if (record !== undefined) this.passedOver.add(record);
      this.stats.lapsed++;
    }
  }

  private async carryOut(plan: Plan, signal: AbortSignal): Promise<void> {
    this.passOver(plan.lapse);
    for (const node of plan.revoke) await this.setTurn(node, null, signal);
    const at = this.o.clock.now().toISOString();
    for (const node of plan.lapse) {
      const turn = parseTurn(this.fleet.get(node)?.turn);
      await this.setTurn(node, turn === undefined ? null : formatLapsedTurn({ turn, at }), signal);
    }
    const turn = formatTurn({ since: this.o.clock.now().toISOString(), by: this.o.identity });
    for (const node of plan.grant) if (await this.setTurn(node, turn, signal)) this.given(node, plan);
    if (plan.grant.length === 0 && plan.held !== undefined && plan.queue.length > 0)
      this.o.log.debug('no turn given', { reason: plan.held, waiting: plan.queue.length });
  }

  /** A turn given to `node`: its grace starts, and the FleetLock question its status says is the baseline. */
  private given(node: string, plan: Plan): void {
    const now = monotonicMs(this.o.clock);
    this.turnSince.set(node, now);
    this.nextLapseMs = Math.min(this.nextLapseMs ?? Infinity, now + (this.o.graceMs ?? HANDOFF_GRACE_MS));
    this.fleetLockAsks.granted(node, this.fleet.get(node)?.status?.fleetLockAsked);
    this.stats.granted++;
    this.o.log.info('turn given', { node, queue: plan.queue.length });
  }

  /** Sets (or with null removes) a node's turn annotation (a turn, or a lapsed one); false when the write failed. */
  private async setTurn(node: string, value: string | null, signal: AbortSignal): Promise<boolean> {
    try {
      const patch = { metadata: { annotations: { [TURN_ANNOTATION]: value } } };
      await this.o.kube.mergePatchNode(node, patch, signal);
      const record = this.fleet.get(node);
      if (record !== undefined) this.fleet.set({ ...record, ...turnFields(value ?? undefined) });
      return true;
    } catch (err) {
      if (isNotFound(err)) this.fleet.delete(node);
      else if (!signal.aborted) this.o.log.warn('cannot write turn', { node, error: statusMessage(err) });
      return false;
    }
  }

  private health(): FleetHealth {
    return this.fleet.fleetHealth(HEALTH_NAMES_SHOWN, this.o.groups !== undefined);
  }

  /**
   * What the Lease tells the waiters (with each renewal, under this leader's name and a new sequence
   * number): the nodes it sees, and why no turn is given now, when a gate or the lock holds every
   * waiter back. Advice only: each agent judges every gate itself before it takes a slot.
   */
  private advise(nodes: number, plan: Plan): void {
    this.elector.advise({ nodes, ...heldAdvice(plan, this.fleet.takenOut()) });
  }
}
