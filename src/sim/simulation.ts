// One simulation run: a fake API server, a simulated cluster, one agent per node, virtual time.
import { budgetCount } from '../config/budget.js';
import { excuseFailedNodes, waveHalt, waveResult } from './wave-report.js';
import { waveDone } from './done.js';
import { setMaxListeners } from 'node:events';
import type { Kube } from '../kube/kube.js';
import { LOCK_ANNOTATION } from './agent-config.js';
import { CelAdmission } from './fake-api/cel-admission.js';
import { SimCluster } from './cluster.js';
import { serviceChecksOf } from './service-checks.js';
import { DS_NAME, DS_NAMESPACE } from './cluster-spec.js';
import { kernelsUpdated, type SimDaemonSet, type SimServer } from './objects.js';
import { Observer } from './observer.js';
import { startFakePrometheus } from './fake-prometheus.js';
import { forkRandom } from './random.js';
import { WatchFeed, newKubeCounters, SerialGate, TrackedKube, type KubeCounters } from './tracked-kube.js';
import { buildTimeline } from './timeline.js';
import { VirtualTime, type StopReason } from './virtual-time.js';
import { fleetHalt, quarantinedNodes } from './quarantined.js';
import { SimCoordinators } from './sim-coordinators.js';
import { SimAutoscaler } from './autoscaler.js';
import {
  approve,
  requested,
  runAutoscaler,
  writeRebootRequests,
  type OperatorContext,
} from './sim-operators.js';
import { SimLogger } from './sim-logger.js';
import { holdWorkerOf, type SimHoldWorker } from './hold-worker.js';
import {
  admissionFor,
  costTables,
  countEvictions,
  requestsBy,
  denialViolations,
  meanPrep,
  nodeResults,
} from './simulation-parts.js';
import { SimCoordinatorThief } from './coordinator-thief.js';
import { SimOtherOperator } from './other-operator.js';
import { startAgentLoops } from './sim-agent.js';
export type { AgentFactory, SimulationOptions, SimulationResult } from './simulation-types.js';
import type { RequestSample, SimAgentIo, SimulationOptions, SimulationResult } from './simulation-types.js';

const DAY = 24 * 3600_000;

interface Running {
  clock: ReturnType<VirtualTime['clock']>;
  kube: TrackedKube;
  abort: AbortController;
}

/** Runs one simulation to its end and returns what was measured. */
export async function runSimulation(options: SimulationOptions): Promise<SimulationResult> {
  const wallStart = Date.now();
  const time = new VirtualTime(options.start ?? SIM_START);
  const opened = await openSimulation(options, time);
  try {
    return await opened.simulation.run(wallStart);
  } finally {
    await opened.close();
  }
}

/** The virtual start of a run unless told otherwise: a Monday. */
export const SIM_START = new Date('2026-01-05T00:00:00Z');

/**
 * One cluster's simulation on `time` (which several may share: simulate --clusters), its server
 * started; close() stops what it started once the run is over.
 */
export async function openSimulation(
  options: SimulationOptions,
  time: VirtualTime,
): Promise<{ simulation: Simulation; server: SimServer; close: () => Promise<void> }> {
  const admission = admissionFor(options);
  const server = await options.startServer(time.clock(), admission);
  const firingUntil = time.nowMs() + (options.alertFiringForMs ?? 0);
  const prometheus =
    (options.alertFiringForMs ?? 0) > 0
      ? await startFakePrometheus(() => time.nowMs() < firingUntil)
      : undefined;
  const agent = { ...options.agent, prometheusUrl: prometheus?.url ?? options.agent.prometheusUrl };
  return {
    simulation: new Simulation(server, time, { ...options, agent }, admission),
    server,
    close: async () => {
      await prometheus?.close();
      await server.close();
    },
  };
}

export class Simulation {
  readonly cluster: SimCluster;
  private readonly observer: Observer;
  private readonly feed: WatchFeed;
  private readonly gate = new SerialGate();
  private readonly counters: KubeCounters = newKubeCounters();
  /** Each node's agent's requests (watches included) when its reboot became required. */
  private readonly costAtNeed = new Map<string, number>();
  private readonly agentKube: (node: string) => Kube;
  private readonly closeInner: () => void;
  private readonly agents = new Map<string, Running>();
  private readonly starts = new Map<string, number>();
  private readonly errors: string[] = [];
  private readonly startMs: number;
  private readonly samples: RequestSample[] = [];
  /** Lock annotations deleted by the simulated third party, approvals by the simulated operator. */
  private lockWipes = 0;
  private approvals = 0;
  private readonly coordinators: SimCoordinators;
  /** simulate --autoscaler, --hold-worker, --coordinator-thief, --other-operator (undefined without) */
  private readonly autoscaler: SimAutoscaler | undefined;
  private readonly holdWorker: SimHoldWorker | undefined;
  private readonly thief: SimCoordinatorThief | undefined;
  private readonly other: SimOtherOperator | undefined;
  /** The run is over: periodic actors stop rescheduling. */
  private finished = false;

  constructor(
    private readonly server: SimServer,
    private readonly time: VirtualTime,
    private readonly options: SimulationOptions,
    private readonly admission?: CelAdmission,
  ) {
    this.startMs = this.time.nowMs();
    this.cluster = new SimCluster(server, this.time, options.cluster);
    this.observer = new Observer(server, this.time, this.cluster, {
      concurrency: options.slots,
      groupConcurrency: budgetCount(options.agent.groupConcurrency), // a share: the agents' to resolve
      lockAnnotation: LOCK_ANNOTATION,
      taintKey: options.agent.preferNoScheduleTaint,
      controlPlaneLast: options.agent.controlPlaneLast,
      countUnavailable: options.agent.countUnavailable,
    });
    this.observer.onPhase = options.onPhase;
    this.feed = new WatchFeed(server);
    const client = options.connect(server);
    this.coordinators = new SimCoordinators({
      time,
      options,
      client: () => this.trackedKube(client.kube),
      logger: (name) => new SimLogger(name, this.errors),
      errors: this.errors,
    });
    this.autoscaler =
      (options.autoscalerEveryMs ?? 0) > 0 ? new SimAutoscaler(options.agent.settleTimeMs) : undefined;
    this.holdWorker = holdWorkerOf(options.holdWorker, {
      ...this.operatorContext(),
      holders: () => this.observer.holders,
    });
    const { coordinatorThief: thief, otherOperator: other } = options;
    this.thief = thief === undefined ? undefined : new SimCoordinatorThief(this.operatorContext(), thief);
    this.other = other === undefined ? undefined : new SimOtherOperator(this.operatorContext(), other);
    this.agentKube = (node) => (admission && client.forAgent ? client.forAgent(node) : client.kube);
    this.closeInner = () => {
      client.close();
    };
  }

  async run(wallStart: number): Promise<SimulationResult> {
    this.begin();
    const limit = this.startMs + (this.options.limitMs ?? 7 * DAY);
    let doneAt: number | undefined;
    const stop = await this.time.run(
      () => {
        if (doneAt === undefined && this.done()) doneAt = this.time.nowMs();
        return doneAt !== undefined && this.time.nowMs() >= this.endAfter(doneAt);
      },
      limit,
      this.options.wallLimitMs,
      this.options.wallNow,
    );
    this.halt();
    return this.finish(stop, doneAt, wallStart);
  }

  /** The earliest the run may end, done at `doneAt`: after --min-duration and the autoscaler's tail. */
  endAfter(doneAt: number): number {
    return Math.max(this.startMs + (this.options.minDurationMs ?? 0), doneAt + this.tailMs());
  }

  /** Populates the cluster and starts its agents, coordinators and simulated actors. */
  begin(): void {
    this.cluster.populate({
      down: this.kill.bind(this),
      agentStarted: this.startAgent.bind(this),
      required: (node) => void this.costAtNeed.set(node, requestsBy(this.server, this.counters, node)),
    });
    this.observer.start();
    for (const name of this.cluster.names) this.startAgent(name);
    this.coordinators.start(this.startMs);
    this.scheduleWipes();
    this.scheduleApprovals();
    this.startOperators();
    for (const at of this.options.sampleAtMs ?? [])
      this.time.schedule(this.startMs + at, () => {
        this.samples.push({ atMs: at, requests: this.server.requests.length + this.counters.watches });
      });
  }

  /** The run is over: every agent and coordinator stops. */
  halt(): void {
    this.finished = true;
    for (const name of [...this.agents.keys()]) this.kill(name);
    this.coordinators.stop();
  }

  /** After halt(): the final checks and what was measured. */
  async finish(stop: StopReason, doneAt: number | undefined, wallStart: number): Promise<SimulationResult> {
    await this.time.quiesce();
    this.cluster.stop();
    this.feed.close();
    this.observer.finalChecks(stop !== 'wall-limit');
    excuseFailedNodes(this.observer.violations, this.cluster);
    this.observer.violations.push(...denialViolations(this.admission, this.time.nowMs() - this.startMs));
    this.observer.stop();
    this.closeInner();
    return this.result(stop, doneAt, wallStart);
  }

  /** Runs `act` every `every` virtual ms from the start while the wave goes on (0 = never). */
  private everyUntilDone(every: number, act: () => void): void {
    if (every <= 0) return;
    const tick = (): void => {
      if (this.done()) return;
      act();
      this.time.schedule(this.time.nowMs() + every, tick);
    };
    this.time.schedule(this.startMs + every, tick);
  }

  /** A third party deletes the lock annotation every wipeLockEveryMs while the wave goes on. */
  private scheduleWipes(): void {
    this.everyUntilDone(this.options.wipeLockEveryMs ?? 0, () => {
      const ds = this.server.get<SimDaemonSet>('daemonsets', DS_NAMESPACE, DS_NAME);
      const annotations = { ...ds?.metadata.annotations };
      if (ds && annotations[LOCK_ANNOTATION] !== undefined) {
        Reflect.deleteProperty(annotations, LOCK_ANNOTATION);
        this.server.update('daemonsets', { ...ds, metadata: { ...ds.metadata, annotations } });
        this.lockWipes++;
      }
    });
  }

  /** The simulated operator: every approveEveryMs, `kured-ts approve --all` (one merge patch per node). */
  private scheduleApprovals(): void {
    if (!this.options.agent.requireApproval) return;
    this.everyUntilDone(this.options.approveEveryMs ?? 0, () => {
      for (const [name, t] of this.observer.timeline) {
        if (t.phase === 'awaiting-approval' && approve(this.operatorContext(), name)) this.approvals++;
      }
    });
  }

  /** The simulated admin's requests, and the autoscaler. */
  private startOperators(): void {
    writeRebootRequests(this.operatorContext(), this.options.rebootRequests ?? []);
    this.holdWorker?.start();
    this.thief?.start();
    this.other?.start();
    if (!this.autoscaler) return;
    const guarded = this.options.agent.autoscalerProtection;
    runAutoscaler(this.operatorContext(), this.autoscaler, this.options.autoscalerEveryMs ?? 0, guarded);
  }

  /** With an autoscaler watching, the run goes on past the end of the last settle (and a scan after). */
  private tailMs(): number {
    return this.autoscaler ? this.autoscaler.settleMs + 2 * (this.options.autoscalerEveryMs ?? 0) : 0;
  }

  /** What the simulated admin and autoscaler act on. */
  private operatorContext(): OperatorContext {
    return {
      time: this.time,
      cluster: this.cluster,
      server: this.server,
      startMs: this.startMs,
      errors: this.errors,
      violations: this.observer.violations,
      finished: () => this.finished,
    };
  }

  /**
   * Every node that needed a reboot rebooted, or is quarantined (its drain failed), or waits while
   * new cycles are halted (--max-quarantined); nobody holds the lock, nothing is cordoned by us.
   */
  done(): boolean {
    return waveDone({
      cluster: this.cluster,
      observer: this.observer,
      server: this.server,
      options: this.options,
    });
  }

  private startAgent(name: string): void {
    const n = (this.starts.get(name) ?? 0) + 1;
    this.starts.set(name, n);
    const clock = this.time.clock();
    const kube = this.trackedKube(this.agentKube(name), this.options.watchEvents, name);
    const abort = new AbortController();
    // Every queued API call of the agent listens on this signal; dozens may queue at the gate.
    setMaxListeners(Infinity, abort.signal);
    this.agents.set(name, { clock, kube, abort });
    const io: SimAgentIo = {
      kube,
      clock,
      logger: new SimLogger(name, this.errors),
      random: forkRandom(this.options.cluster.seed, `${name}#${n}`),
      track: (work) => (clock.killed ? new Promise(() => undefined) : this.time.track(work, 'agent work')),
      ...(this.options.fleetLock ? { fleetLock: this.options.fleetLock } : {}),
      // a client whose watches deliver nothing (kured's polling model) must not read from them
      watchesDeliver: this.options.watchEvents,
      sentinel: {
        rebootRequired: () =>
          Promise.resolve({ required: this.cluster.nodes.get(name)?.needsReboot ?? false }),
      },
      rebooter: {
        reboot: () => {
          this.observer.checkReboot(name);
          this.holdWorker?.checkReboot(name);
          this.cluster.requestReboot(name);
          return Promise.resolve();
        },
      },
    };
    const agent = this.options.createAgent({ ...this.options.agent, nodeId: name }, io);
    this.time.after(0, () => {
      agent.run(abort.signal).catch((err: unknown) => {
        if (!abort.signal.aborted) this.errors.push(`${name} agent crashed: ${String(err)}`);
      });
      startAgentLoops(agent, io, {
        clock,
        signal: abort.signal,
        requested: () => requested(this.cluster, name),
        periodMs: this.options.agent.periodMs,
      });
    });
  }

  /** A client over `inner` in step with the virtual time, through the one gate all clients share. */
  private trackedKube(inner: Kube, watchEvents?: boolean, owner?: string): TrackedKube {
    const { time, gate, feed, counters } = this;
    return new TrackedKube({ inner, time, gate, feed, counters, watchEvents, owner });
  }

  /** The host went down (or the run ended): the agent process dies without a word. */
  private kill(name: string): void {
    const running = this.agents.get(name);
    if (!running) return;
    this.agents.delete(name);
    running.clock.kill();
    running.kube.kill();
    running.abort.abort(new Error('simulation: host down'));
  }

  private result(stop: StopReason, doneAt: number | undefined, wallStart: number): SimulationResult {
    const { observer, cluster } = this;
    const end = doneAt ?? this.time.nowMs();
    const nodes = nodeResults(this.cluster, this.observer, this.options, this.startMs);
    const locks = nodes.map((n) => n.lockedAtMs).filter((x): x is number => x !== undefined);
    const firstLockMs = locks.length > 0 ? Math.min(...locks) : 0;
    const C = this.options.slots;
    // a drain that failed (a quarantined node's) took its slot too: it is work of this wave
    const work = nodes.filter((n) => n.workMs > 0).map((n) => n.workMs);
    const lowerBoundMs = Math.max(work.reduce((a, b) => a + b, 0) / C, ...work, 0);
    const evictions = countEvictions(this.server.requests);
    const byReplica = [...cluster.podStats.evictionsByReplica.values()];
    return {
      stop,
      makespanMs: end - this.startMs,
      rollingMs: end - this.startMs - firstLockMs,
      firstLockMs,
      lowerBoundMs,
      outOfOrder: [...observer.outOfOrder],
      longestWaitMs: Math.max(
        0,
        ...nodes.map((n) =>
          n.lockedAtMs === undefined || n.requiredAtMs === undefined ? 0 : n.lockedAtMs - n.requiredAtMs,
        ),
      ),
      concurrency: C,
      nodes,
      rebooted: nodes.filter((n) => n.neededReboot && n.reboots > 0).length,
      needed: nodes.filter((n) => n.neededReboot).length,
      maxDown: cluster.outages.max,
      maxHolders: observer.maxHolders,
      lockWipes: this.lockWipes,
      admission: this.admission ? { ...this.admission.counts } : undefined,
      maxDownByZone: Object.fromEntries([...cluster.outages.maxByZone].sort()),
      ...this.controlPlane(),
      approvals: this.approvals,
      ...quarantinedNodes(cluster),
      drainOrder: observer.drainOrder.result(),
      volumes: cluster.workloads?.volumes?.result(),
      ...serviceChecksOf(cluster, nodes, observer.phases),
      halted: fleetHalt(observer) ?? waveHalt(this.server),
      wave: waveResult(this.server, cluster, nodes),
      autoscalerRemovals: this.removals(),
      holdWorker: this.holdWorker?.stats(),
      coordinatorThief: this.thief?.stats(),
      otherOperator: this.other?.stats(),
      kernelsUpdated: kernelsUpdated(this.cluster.nodeList()),
      evictions,
      evictedMoreThanOnce: byReplica.filter((n) => n > 1).length,
      podEvictions: byReplica.reduce((a, b) => a + b, 0),
      placementsOnPendingNodes: cluster.podStats.placementsOnPendingNodes,
      blockingOnPendingNodes: cluster.podStats.blockingOnPendingNodes,
      churnJobs: cluster.churnJobs,
      meanPrepMs: meanPrep(nodes),
      blockedMs: Object.fromEntries(observer.blockedMs),
      violations: observer.violations,
      apiRequests: this.server.requests.length + this.counters.watches,
      responseBytes: this.server.responseBytes + this.counters.watchBytes,
      watchBytes: this.counters.watchBytes,
      coordinator: this.coordinators.stats(),
      watches: this.counters.watches,
      kubeCalls: { ...this.counters.calls },
      cost: costTables(this.server, this.counters, this.costAtNeed),
      agentErrors: this.errors,
      samples: this.samples,
      elapsedMs: this.time.nowMs() - this.startMs,
      timeline: buildTimeline({
        endMs: end - this.startMs,
        concurrency: C,
        nodes: cluster.names,
        phases: observer.phases,
        outages: cluster.outages.since(this.startMs),
        slotChanges: observer.slotChanges,
      }),
      wallMs: Date.now() - wallStart,
      tasks: this.time.tasksRun,
    };
  }

  /** With control-plane nodes: how many, and when the first of them and the last worker took a slot. */
  private controlPlane(): Pick<SimulationResult, 'controlPlane'> {
    const nodes = this.cluster.spec.controlPlane ?? 0;
    return nodes > 0 ? { controlPlane: { nodes, ...this.observer.controlPlane } } : {};
  }

  /** The simulated autoscaler's removals; undefined without it. */
  private removals(): SimulationResult['autoscalerRemovals'] {
    return this.autoscaler === undefined ? undefined : [...this.autoscaler.removals];
  }
}
