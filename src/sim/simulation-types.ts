// What a simulation takes and what it reports (simulation.ts runs it).
import type { VolumeStats } from './volumes.js';
import type { WaveResult } from './wave-report.js';
import type { CostRow } from './api-cost.js';
import type { DrainOrderStats } from './drain-order-checks.js';
import type { Removal } from './autoscaler.js';
import type { HoldWorkerSettings, HoldWorkerStats } from './hold-worker.js';
import type { ThiefSettings, ThiefStats } from './coordinator-thief.js';
import type { OtherOperatorSettings, OtherOperatorStats } from './other-operator.js';
import type { FleetLockTuning } from '../agent/create-agent.js';
import type { Clock } from '../clock/clock.js';
import type { Config } from '../config/config.js';
import type { Kube } from '../kube/kube.js';
import type { Logger } from '../log/logger.js';
import type { Rebooter } from '../reboot/rebooter.js';
import type { Sentinel } from '../sentinel/sentinel.js';
import type { Admission } from './fake-api/admission.js';
import { type BoundPolicy, type ReviewRecord } from './fake-api/cel-admission.js';
import type { SimKube } from './sim-kube.js';
import type { ClusterSpec } from './cluster-spec.js';
import type { SimServer } from './objects.js';
import { type PhaseChange } from './observer.js';
import type { Violation } from './violation.js';
import { type Random } from './random.js';
import { type Timeline } from './timeline.js';
import { type StopReason } from './virtual-time.js';

/** What an agent gets from the simulator: the same seams production fills with real things. */
export interface SimAgentIo {
  kube: Kube;
  clock: Clock;
  logger: Logger;
  rebooter: Rebooter;
  sentinel: Sentinel;
  random: Random;
  /** Marks real asynchronous work outside the Kube (an HTTP query to Prometheus) as in flight. */
  track: <T>(work: () => Promise<T>) => Promise<T>;
  /** With agent.fleetlockUrl: the FleetLock server the clusters share, answering in memory. */
  fleetLock?: FleetLockTuning;
  /** false: `kube`'s watches deliver nothing (kured's polling model), so the agent follows nothing. */
  watchesDeliver?: boolean;
}

/** An agent process: runs until its signal aborts (or forever, if killed by a reboot). */
interface RunnableAgent {
  run(signal: AbortSignal): Promise<void>;
  /** Ends an idle wait: a reboot became required (as the minute sentinel refresher does in run.ts). */
  wake?(): void;
}

export type AgentFactory = (config: Config, io: SimAgentIo) => RunnableAgent;

/** Everything one run needs. Durations in ms. */
export interface SimulationOptions {
  cluster: ClusterSpec;
  /**
   * The agents' configuration (simulate's flags over the agent's defaults, and the simulation's
   * seams): each agent runs with it and its node's name.
   */
  agent: Config;
  /** The slots the observer holds the run to: --concurrency, or what its percentage resolves to. */
  slots: number;
  /** Builds an agent (simulate uses createAgent: the production code). */
  createAgent: AgentFactory;
  /**
   * Starts the fake API server (graceful pod deletion, timestamps from `clock`), enforcing
   * `admission` on every HTTP write when given.
   */
  startServer: (clock: Clock, admission?: Admission) => Promise<SimServer>;
  /**
   * Builds the client of the server: simulate's over HTTP (connectSimKube), the scenario tests' in
   * memory (memorySimKube).
   */
  connect: (server: SimServer) => SimKube;
  /**
   * Send every agent write through kured-ts's admission policy (as the chart installs it), each
   * agent with its own identity; a denied write is an invariant violation. Default true.
   */
  enforcePolicy?: boolean;
  /** The policies to enforce. Default: the chart's, with the agents' values (simAgentPolicies). */
  admissionPolicies?: BoundPolicy[];
  /** Told of every admission review (tests). */
  onAdmission?: (record: ReviewRecord) => void;
  /** Deliver lock watch events (true) or let agents find out only by polling (false). */
  watchEvents: boolean;
  /**
   * Coordinator replicas (the chart's Deployment; they elect a leader) keeping the lock's queue for
   * agents with --lock-queue fair. Default 2; 0 = none (the agents then take slots first come).
   */
  coordinators?: number;
  /** The leading coordinator dies (no release, its calls never return) at these virtual offsets. */
  killCoordinatorAtMs?: number[];
  /** Virtual time limit. Default 7 days. */
  limitMs?: number;
  /** Wall-clock limit. Default none. */
  wallLimitMs?: number;
  /** The wall clock the limit is read from (tests cut a run at a chosen moment). Default Date.now. */
  wallNow?: () => number;
  /** Virtual start. Default 2026-01-05T00:00:00Z (a Monday). */
  start?: Date;
  onPhase?: (change: PhaseChange) => void;
  /** Keep running this long (virtual) after the start even when done (idle measurements). */
  minDurationMs?: number;
  /** A Prometheus alert fires from the start for this long (0 = no Prometheus). */
  alertFiringForMs?: number;
  /** Virtual offsets from the start at which to count API requests so far (see samples). */
  sampleAtMs?: number[];
  /** A third party deletes the lock annotation this often (virtual ms) until the wave ends; 0 = never. */
  wipeLockEveryMs?: number;
  /**
   * With agent.requireApproval: a simulated operator runs `kured-ts approve --all` this often (virtual
   * ms), approving every node then awaiting approval. 0 = nobody approves.
   */
  approveEveryMs?: number;
  /**
   * A simulated autoscaler (src/sim/autoscaler.ts) scans the nodes this often (virtual ms) and removes
   * those that look empty and carry no scale-down annotation; the run goes on for the agents'
   * --settle-time after the wave so that the end of the settle is seen. 0 = none.
   */
  autoscalerEveryMs?: number;
  /** A simulated admin runs `kured-ts reboot NODE --reason … [--now]` for these nodes at the start. */
  rebootRequests?: { node: string; now: boolean }[];
  /** With agent.fleetlockUrl: how the agents reach the FleetLock server (in memory: fleet-simulation.ts). */
  fleetLock?: FleetLockTuning;
  /** A simulated external worker holds each node after its drain (src/sim/hold-worker.ts); none without. */
  holdWorker?: HoldWorkerSettings;
  /**
   * A thief with the coordinator's token hijacks its Lease and gives turns from `fromMs` for `forMs`
   * (src/sim/coordinator-thief.ts), bypassing admission; none without.
   */
  coordinatorThief?: ThiefSettings;
  /** Another operator taking nodes out during the wave (src/sim/other-operator.ts); none without. */
  otherOperator?: OtherOperatorSettings;
}

/** API requests (HTTP requests served plus watches started) counted at a virtual time. */
export interface RequestSample {
  atMs: number;
  requests: number;
}

/** Per-node result. */
export interface NodeResult {
  name: string;
  neededReboot: boolean;
  reboots: number;
  /** Physical time of its cycle: drain (+ reboot delay) + shutdown + boot + agent pod start. */
  workMs: number;
  lockedAtMs?: number;
  releasedAtMs?: number;
  /** When its reboot became required (virtual ms since the start); absent when it never was. */
  requiredAtMs?: number;
  finalPhase: string;
}

/** The measured outcome of a run; the report is rendered from this. */
export interface SimulationResult {
  stop: StopReason;
  /** Bytes of every API answer (HTTP bodies and watch events) over the run. */
  responseBytes: number;
  /** Of which watch events (as the API server would stream them). */
  watchBytes: number;
  /** Turns the coordinators gave, lapsed, and leaderships taken. */
  coordinator: { granted: number; lapsed: number; leaderships: number; plans: number };
  /** Virtual ms from the start until every needed reboot completed and the lock was free. */
  makespanMs: number;
  /** Virtual ms from the first lock acquisition until the end. */
  rollingMs: number;
  /** First lock acquisition, virtual ms after the start. */
  firstLockMs: number;
  /**
   * max(sum of per-node physical work / concurrency, longest single node); a drain that led to no
   * reboot (a failed one, up to --drain-timeout) is work too: it held a slot.
   */
  lowerBoundMs: number;
  /** Slots handed to a node while one that had needed a reboot longer waited for it (fair queue: none). */
  outOfOrder: { atMs: number; node: string; passedOver: string }[];
  /** The longest a node waited from its reboot becoming required to taking a slot (virtual ms). */
  longestWaitMs: number;
  concurrency: number;
  nodes: NodeResult[];
  rebooted: number;
  needed: number;
  maxDown: number;
  maxHolders: number;
  /** Lock annotations deleted by the simulated third party (--wipe-lock-every). */
  lockWipes: number;
  /** Agent writes the admission policy admitted and denied; undefined when it was not enforced. */
  admission: { admitted: number; denied: number } | undefined;
  /** With zones: the most hosts of each zone down at once. */
  maxDownByZone: Record<string, number>;
  /**
   * With control-plane nodes (--control-plane): how many, when the first of them took a slot and when
   * the last worker did (virtual ms since the start).
   */
  controlPlane?: { nodes: number; firstLockMs: number | undefined; lastWorkerLockMs: number | undefined };
  /** Approvals the simulated operator gave (--approve-every). */
  approvals: number;
  /**
   * simulate --single-replica-workloads: the Deployments, and the seconds each had no ready replica
   * (those that had any); undefined without them.
   */
  singleReplicas?: { deployments: number; unavailableSeconds: Record<string, number> };
  /** Nodes that needed a reboot and got none, with the reason they were last blocked for. */
  blockedNodes: Record<string, string>;
  /** simulate --storage-pods: order-10 pods evicted, and how many while a lower order was on their node. */
  drainOrder: DrainOrderStats | undefined;
  /**
   * simulate --volumes-per-node: the volumes, and those still attached to a node when its host went
   * down (from the simulated attach state, not from any agent's word); undefined without volumes.
   */
  volumes?: VolumeStats | undefined;
  /** Nodes carrying the quarantine label at the end (their drain failed), by name. */
  quarantined: string[];
  /** Of those, the nodes quarantined reboot-loop (their need survived --max-reboots-per-need reboots). */
  rebootLoops: string[];
  /**
   * Why new cycles were halted at the end (--max-quarantined, as a node's status said; or the wave's
   * failure budget, as its halt says); undefined: not halted.
   */
  halted: string | undefined;
  /** The wave (--wave-start, --max-failures, --group-order, --bad-kernel); undefined without one. */
  wave?: WaveResult | undefined;
  /** The simulated autoscaler's removals (simulate --autoscaler); undefined without it. */
  autoscalerRemovals: Removal[] | undefined;
  /** What the simulated hold worker did (simulate --hold-worker); undefined without it. */
  holdWorker: HoldWorkerStats | undefined;
  /** What the coordinator thief wrote (simulate --coordinator-thief); undefined without it. */
  coordinatorThief: ThiefStats | undefined;
  /** What the other operator took out (simulate --other-operator); undefined without it. */
  otherOperator: OtherOperatorStats | undefined;
  /** Nodes whose reboot history records a successful reboot that changed the kernel. */
  kernelsUpdated: number;
  /** The drain's evictions: accepted, refused by a PDB, failed with a 5xx (the server's). */
  evictions: { accepted: number; refused: number; failed: number };
  /** Replicas (workload slots) whose pods were evicted more than once. */
  evictedMoreThanOnce: number;
  podEvictions: number;
  placementsOnPendingNodes: number;
  /** Blocking pods placed onto nodes that still needed a reboot (--blocking-churn). */
  blockingOnPendingNodes: number;
  /** Blocking jobs created by --blocking-churn. */
  churnJobs: number;
  /** Mean over rebooted nodes of reboot required → lock taken (virtual ms). */
  meanPrepMs: number;
  blockedMs: Record<string, number>;
  violations: Violation[];
  apiRequests: number;
  watches: number;
  kubeCalls: Record<string, number>;
  /**
   * What the run cost the API server by verb and resource (api-cost.ts): the agents' requests, those
   * of anyone else (the coordinator), and each node's agent's (by node name); `cycles`: the requests
   * of each node's agent from the moment its reboot became required to the end of the run (its
   * cycle, without the start-up every agent pays, idle or not, when the need came later).
   */
  cost: {
    agents: CostRow[];
    other: CostRow[];
    byNode: Record<string, CostRow[]>;
    cycles: Record<string, number>;
  };
  agentErrors: string[];
  samples: RequestSample[];
  /** Virtual elapsed ms of the run (>= makespan when minDurationMs is set). */
  elapsedMs: number;
  /** Per node, what it was doing when: for `simulate --timeline`. */
  timeline: Timeline;
  wallMs: number;
  tasks: number;
}
