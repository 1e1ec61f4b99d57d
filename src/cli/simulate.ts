// `kured-ts simulate`: a whole cluster in one process with the real agents, then a report.
import type { VolumeSpec } from '../sim/cluster-spec.js';
import type { Config } from '../config/config.js';
import { SIM_AGENT_SEAMS, SIM_TAINT } from '../sim/agent-config.js';
import { ZONE_LABEL, type PdbSpec } from '../sim/cluster-spec.js';
import { startFakeApiServer } from '../sim/fake-api-server.js';
import { ProgressView, type ProgressOutput } from '../sim/progress.js';
import { formatCostReport, formatReport, passed } from '../sim/report.js';
import { connectSimKube } from '../sim/sim-kube.js';
import { flakyEvictions } from '../sim/flaky-evictions.js';
import type { HoldWorkerSettings } from '../sim/hold-worker.js';
import { defaultConfig } from '../config/parse.js';
import {
  runSimulation,
  type AgentFactory,
  type SimulationOptions,
  type SimulationResult,
} from '../sim/simulation.js';
import { simAgentFactory, unqueuedAgentFactory } from '../sim/sim-agent.js';
import { errorText } from '../text/error-text.js';
import { writeFile } from 'node:fs/promises';
import { renderTimelineHtml, renderTimelineSvg } from '../sim/timeline-svg.js';

/** Everything `simulate` can be told. Durations in ms. */
export interface SimulateOptions {
  /** --nodes: default 10. */
  nodes: number;
  /** --needs-reboot: 'all' or how many nodes (the first ones). Default 'all'. */
  needsReboot: 'all' | number;
  /** --concurrency: default 1; with a percentage, the slots it resolves to for the cluster. */
  concurrency: number;
  /** --concurrency N%: the agents run with the percentage (0 or absent: the number). */
  concurrencyPercent?: number;
  /** --control-plane: the first N nodes are control-plane nodes with an etcd member each. Default 0. */
  controlPlane?: number;
  /** --period: default 1h. */
  periodMs: number;
  /** --reboot-delay: default 0. */
  rebootDelayMs: number;
  /** --boot-time: NotReady → Ready with a new boot ID. Default 2m. */
  bootTimeMs: number;
  /** --pods-per-node: default 4 (workloads of 3 replicas). */
  podsPerNode: number;
  /** --pdb: `none`, `max-unavailable=N` or `min-available=N` (N may be a percentage). Default max-unavailable=1. */
  pdb: PdbSpec;
  /** --blocking-pod: a batch pod matching the blocking selector runs this long on the first node. 0 = none. */
  blockingPodMs: number;
  /** --alert-firing-for: a Prometheus alert fires from the start for this long. 0 = no Prometheus. */
  alertFiringForMs: number;
  /** --pre-cordoned: nodes cordoned by someone else before the start. Default 0. */
  preCordoned: number;
  /** --no-taint: no early PreferNoSchedule taint (kured's default). Default: taint on. */
  taint: boolean;
  /**
   * --kured-polling: kured's lock as it is: no watch wake-up (agents find a free lock only on their
   * own next tick) and no fair queue (whoever asks first takes a free slot).
   */
  kuredPolling: boolean;
  /**
   * --coordinators: replicas of `kured-ts coordinator` keeping the lock's queue (default 2; 0: none,
   * the agents then take free slots first come, as with no coordinator installed).
   */
  coordinators?: number;
  /** --kill-coordinator-at: the leading coordinator dies without a word at these offsets. */
  killCoordinatorAtMs?: number[];
  /** --lock-ttl: the agents' lock TTL; 0 = never expires. Shorter than a node's downtime, it lapses. */
  lockTtlMs?: number;
  /** --wipe-lock-every: a third party deletes the lock annotation this often; 0 = never. */
  wipeLockEveryMs?: number;
  /**
   * --coordinator-thief FROM,FOR: a thief with the coordinator's token hijacks its Lease and gives
   * every waiter a turn, from FROM into the run for FOR (src/sim/coordinator-thief.ts). Default none.
   */
  coordinatorThief?: { fromMs: number; forMs: number };
  /** --other-operator KIND:N: another operator takes N nodes out during the wave (src/sim/other-operator.ts). */
  otherOperator?: { kind: 'karpenter' | 'autoscaler'; nodes: number };
  /** --zones: label the nodes topology.kubernetes.io/zone over this many zones; 0 = none. */
  zones?: number;
  /** --bad-kernel: the n-th node to reboot never comes back Ready (0 or absent: none). */
  badKernel?: number;
  /** --group-concurrency: at most this many nodes per zone (the agents' --group-label is the zone). */
  groupConcurrency?: number;
  /** --max-unhealthy-nodes: the agents' health gate. */
  maxUnhealthyNodes?: { count: number } | { percent: number };
  /** --unhealthy-nodes N,DURATION: the last N nodes are NotReady for DURATION from the start. */
  unhealthy?: { nodes: number; durationMs: number };
  /** --approve-every: agents run with --require-approval; a simulated operator approves this often. */
  approveEveryMs?: number;
  /** --blocking-churn RATE,DURATION: blocking jobs per hour, each running DURATION. */
  blockingChurn?: { perHour: number; durationMs: number };
  /** --undrainable: the first N nodes carry a pod stuck terminating (a finalizer): their drain fails. */
  undrainable?: number;
  /** --stuck-sentinel: the next N nodes (after the undrainable ones) have a need that survives every reboot. */
  stuckSentinel?: number;
  /**
   * --storage-pods: one storage daemon per node with label kured-ts.dev/drain-order=10; the report
   * says how many were evicted while a lower-order pod was still on their node (an invariant: 0).
   */
  storagePods?: boolean;
  /**
   * --volumes-per-node, --volume-detach-time, --stuck-volume: CSI volumes on the nodes and their
   * detach (src/sim/volumes.ts); the report counts those attached when a host went down. Default none.
   */
  volumes?: VolumeSpec;
  /**
   * --single-replica-workloads N: N single-replica Deployments on nodes that need a reboot; the report
   * counts the seconds a Deployment had no ready replica (--single-replica restart: 0).
   */
  singleReplicaWorkloads?: number;
  /**
   * --eviction-errors: this share (0–1) of eviction requests, the PDB pre-flight's dry runs included,
   * is answered 500 `etcdserver: request timed out`, half of them after the eviction was carried out
   * (a flaky API server, issue 46). Default 0.
   */
  evictionErrors?: number;
  /**
   * --load-balancer: the cluster has a Service of type LoadBalancer, so each agent waits
   * --lb-drain-wait after labelling its node out of the load balancers, before its drain.
   */
  loadBalancer?: boolean;
  /** --drain-timeout: the agents' --drain-timeout. Default 0 (none); with --undrainable, 5m. */
  drainTimeoutMs?: number;
  /** --autoscaler: a simulated autoscaler removes empty-looking nodes without a scale-down annotation. */
  autoscaler?: boolean;
  /**
   * --hold-worker: a simulated external worker holds each node this long after its drain, through the
   * agents' first --hold-after-drain-annotation (SIM_HOLD_ANNOTATION when none is given); 0 = none.
   */
  holdWorkerMs?: number;
  /**
   * The agents' own settings where they differ from the agent's defaults (simulate's agent flags:
   * SIM_AGENT_FLAGS); the fields above win where both say (the simulator watches those).
   */
  agent?: Partial<Config>;
  /** --reboot-now: a simulated admin runs `kured-ts reboot NODE --now` for this node at the start. */
  rebootNow?: string;
  /** --seed: default 1. */
  seed: number;
  /** --required-over: each node's reboot becomes required at a random moment within this. 0 = all at the start. */
  requiredOverMs?: number;
  /** --wall-limit: real time the run may take before it is cut. Default 10m. */
  wallLimitMs: number;
}

export const DEFAULT_SIMULATE_OPTIONS: SimulateOptions = {
  nodes: 10,
  needsReboot: 'all',
  concurrency: 1,
  periodMs: 3_600_000,
  rebootDelayMs: 0,
  bootTimeMs: 120_000,
  podsPerNode: 4,
  pdb: { kind: 'maxUnavailable', value: 1 },
  blockingPodMs: 0,
  alertFiringForMs: 0,
  preCordoned: 0,
  taint: true,
  kuredPolling: false,
  seed: 1,
  wallLimitMs: 10 * 60_000,
};

/** Where simulate writes and what it runs. */
export interface SimulateIo {
  out: ProgressOutput;
  /** Error lines (stderr); default out. */
  err?: (text: string) => void;
  /** --timeline: write the wave's picture here (.svg, or .html with the report). */
  timeline?: string;
  /** Default fs/promises writeFile. */
  writeFile?: (path: string, text: string) => Promise<void>;
  /** Default: the production agent (createAgent). */
  createAgent?: AgentFactory;
  /** Default: show progress. */
  progress?: boolean;
  /** The agents' client of the fake API server. Default over HTTP (connectSimKube). */
  connect?: SimulationOptions['connect'];
}

const DAY = 24 * 3_600_000;

/** Runs one simulation with these options; returns the result (for tests and the bench). */
export async function simulate(
  options: SimulateOptions,
  io: Pick<SimulateIo, 'createAgent' | 'connect'> & { onPhase?: SimulationOptions['onPhase'] } = {},
): Promise<SimulationResult> {
  const connect = io.connect === undefined ? {} : { connect: io.connect };
  return runSimulation({ ...simulationOptions(options, io.createAgent), ...connect, onPhase: io.onPhase });
}

/** --group-concurrency and --group-order sequential: the groups are the zones. */
function zoneGroups(options: SimulateOptions): Pick<Config, 'groupLabel' | 'groupConcurrency'> {
  const count = options.groupConcurrency ?? 0;
  // a number given to the simulation, else the agents' own (a share of each zone)
  const groups = count > 0 ? { count } : options.agent?.groupConcurrency;
  const zoned = groups !== undefined || options.agent?.groupOrder?.kind === 'sequential';
  return { groupLabel: zoned ? ZONE_LABEL : (options.agent?.groupLabel ?? ''), groupConcurrency: groups };
}

/**
 * The agents' Config, built here in one step: the agent's defaults (an empty command line's), the
 * agent flags the run was given, then what the simulation sets (the slots, the zones as groups, the
 * health gate, approval when the simulated operator approves) and its seams.
 */
function agentConfigOf(options: SimulateOptions): Config {
  const percent = options.concurrencyPercent ?? 0;
  return {
    ...defaultConfig(),
    ...options.agent,
    nodeId: '',
    periodMs: options.periodMs,
    rebootDelayMs: options.rebootDelayMs,
    drainTimeoutMs: drainTimeoutOf(options),
    // a percentage: the lock resolves it for the fleet
    concurrency: percent > 0 ? { percent } : { count: options.concurrency },
    lockTtlMs: options.lockTtlMs ?? 0,
    ...zoneGroups(options),
    maxUnhealthyNodes: options.maxUnhealthyNodes,
    requireApproval: (options.approveEveryMs ?? 0) > 0,
    preferNoScheduleTaint: options.taint ? SIM_TAINT : '',
    blockOnPdb: true,
    evictionRetryDelayMs: 5_000,
    prometheusUrl: '',
    ...SIM_AGENT_SEAMS,
  };
}

/** The annotation the simulated hold worker sets when the run gives no --hold-after-drain-annotation. */
export const SIM_HOLD_ANNOTATION = 'sim.kured-ts.dev/firmware';

/**
 * --hold-worker: the worker's settings, and the options with the agents holding on its annotation
 * (theirs when given, else SIM_HOLD_ANNOTATION); the options as they are without it.
 */
function withHoldWorker(options: SimulateOptions): {
  options: SimulateOptions;
  worker: { holdWorker?: HoldWorkerSettings };
} {
  const holdMs = options.holdWorkerMs ?? 0;
  if (holdMs <= 0) return { options, worker: {} };
  const keys = options.agent?.holdAfterDrainAnnotations ?? [];
  const key = keys[0] ?? SIM_HOLD_ANNOTATION;
  const timeoutMs = options.agent?.holdTimeoutMs ?? defaultConfig().holdTimeoutMs;
  const agent = { ...options.agent, holdAfterDrainAnnotations: keys.length > 0 ? keys : [key] };
  return { options: { ...options, agent }, worker: { holdWorker: { key, holdMs, timeoutMs } } };
}

/** How often the simulated autoscaler scans (the cluster autoscaler's default --scan-interval). */
const AUTOSCALER_SCAN_MS = 10_000;

/** The simulated autoscaler (--autoscaler) and admin (--reboot-now). */
function operators(
  options: SimulateOptions,
): Pick<SimulationOptions, 'autoscalerEveryMs' | 'rebootRequests'> {
  return {
    autoscalerEveryMs: options.autoscaler === true ? AUTOSCALER_SCAN_MS : 0,
    ...(options.rebootNow === undefined ? {} : { rebootRequests: [{ node: options.rebootNow, now: true }] }),
  };
}

/** The drain timeout for undrainable nodes unless given: a drain that cannot end must end somewhere. */
const UNDRAINABLE_DRAIN_TIMEOUT_MS = 5 * 60_000;

/** --undrainable and --stuck-sentinel, at most the nodes that need a reboot. */
function undrainable(
  options: SimulateOptions,
  needed: number,
): { undrainable: number; stuckSentinel?: number } {
  const stuck = Math.min(options.stuckSentinel ?? 0, needed);
  return {
    undrainable: Math.min(options.undrainable ?? 0, needed),
    ...(stuck > 0 ? { stuckSentinel: stuck } : {}),
  };
}

function drainTimeoutOf(options: SimulateOptions): number {
  return options.drainTimeoutMs ?? ((options.undrainable ?? 0) > 0 ? UNDRAINABLE_DRAIN_TIMEOUT_MS : 0);
}

/** --required-over, when given. */
function requiredOver(options: SimulateOptions): { requiredOverMs?: number } {
  return options.requiredOverMs === undefined ? {} : { requiredOverMs: options.requiredOverMs };
}

/** The production agent; under --kured-polling, kured's lock order too (no fair queue). */
function defaultAgent(options: SimulateOptions): AgentFactory {
  return options.kuredPolling ? unqueuedAgentFactory : simAgentFactory;
}

/** The coordinator replicas (none under --kured-polling: kured has no queue), and a thief of its token. */
function coordinatorOptions(
  options: SimulateOptions,
): Pick<SimulationOptions, 'coordinators' | 'killCoordinatorAtMs' | 'coordinatorThief' | 'otherOperator'> {
  return {
    coordinators: options.kuredPolling ? 0 : (options.coordinators ?? 2),
    ...(options.killCoordinatorAtMs ? { killCoordinatorAtMs: options.killCoordinatorAtMs } : {}),
    ...(options.coordinatorThief ? { coordinatorThief: options.coordinatorThief } : {}),
    ...(options.otherOperator ? { otherOperator: options.otherOperator } : {}),
  };
}

/** What the cluster is made of beyond its size: control-plane nodes, blocking churn, unhealthy nodes. */
function worldOf(
  options: SimulateOptions,
): Pick<
  SimulationOptions['cluster'],
  'controlPlane' | 'blockingChurn' | 'unhealthy' | 'badKernel' | 'singleReplicaWorkloads'
> {
  return {
    ...((options.singleReplicaWorkloads ?? 0) > 0
      ? { singleReplicaWorkloads: options.singleReplicaWorkloads }
      : {}),
    ...((options.controlPlane ?? 0) > 0 ? { controlPlane: options.controlPlane } : {}),
    ...(options.blockingChurn ? { blockingChurn: options.blockingChurn } : {}),
    ...(options.unhealthy ? { unhealthy: options.unhealthy } : {}),
    ...((options.badKernel ?? 0) > 0 ? { badKernel: options.badKernel } : {}),
  };
}

/** The full simulation settings behind these options (the bench adjusts them further). */
export function simulationOptions(given: SimulateOptions, createAgent?: AgentFactory): SimulationOptions {
  const { options, worker } = withHoldWorker(given);
  const needed = options.needsReboot === 'all' ? options.nodes : Math.min(options.needsReboot, options.nodes);
  return {
    cluster: {
      nodes: options.nodes,
      needsReboot: needed,
      podsPerNode: options.podsPerNode,
      replicasPerWorkload: 3,
      pdb: options.pdb,
      preCordoned: Math.min(options.preCordoned, needed),
      shutdownMs: 5_000,
      bootTimeMs: options.bootTimeMs,
      ...requiredOver(options),
      podStartMs: 10_000,
      graceSeconds: 30,
      blockingPods: { nodes: 1, durationMs: options.blockingPodMs },
      ...undrainable(options, needed),
      ...(options.storagePods === true ? { storagePods: true } : {}),
      ...(options.volumes === undefined ? {} : { volumes: options.volumes }),
      zones: options.zones ?? 0,
      ...worldOf(options),
      seed: options.seed,
    },
    agent: agentConfigOf(options),
    slots: options.concurrency,
    wipeLockEveryMs: options.wipeLockEveryMs ?? 0,
    approveEveryMs: options.approveEveryMs ?? 0,
    ...operators(options),
    ...worker,
    ...coordinatorOptions(options),
    createAgent: createAgent ?? defaultAgent(options),
    startServer: async (clock, admission) => {
      const server = await startFakeApiServer({
        podDeletion: 'graceful',
        clock,
        ...(admission ? { admission } : {}),
      });
      const share = options.evictionErrors ?? 0;
      if (share > 0) server.chaos(flakyEvictions(share, options.seed));
      if (options.loadBalancer === true) server.create('services', LOAD_BALANCER_SERVICE);
      return server;
    },
    connect: connectSimKube,
    watchEvents: !options.kuredPolling,
    alertFiringForMs: options.alertFiringForMs,
    limitMs: 7 * DAY,
    wallLimitMs: options.wallLimitMs,
  };
}

/** simulate --load-balancer: one Service of type LoadBalancer in front of the workloads. */
const LOAD_BALANCER_SERVICE = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', namespace: 'default' },
  spec: { type: 'LoadBalancer', selector: { app: 'web' }, ports: [{ port: 80 }] },
};

/** What the report's first line says of the run. */
function reportHeader(options: SimulateOptions, needed: number): Parameters<typeof formatReport>[1] {
  return {
    nodes: options.nodes,
    needed,
    concurrency: options.concurrency,
    periodMs: options.periodMs,
    seed: options.seed,
    ...((options.groupConcurrency ?? 0) > 0 ? { groupConcurrency: options.groupConcurrency } : {}),
    ...(options.agent?.groupOrder?.kind === 'sequential' ? { sequential: true } : {}),
  };
}

/** `kured-ts simulate`: progress, report; 0 when every reboot happened and no invariant broke. */
export async function runSimulate(options: SimulateOptions, io: SimulateIo): Promise<number> {
  const needed = options.needsReboot === 'all' ? options.nodes : Math.min(options.needsReboot, options.nodes);
  const names = Array.from({ length: options.nodes }, (_, i) => i);
  const width = Math.max(2, String(options.nodes).length);
  const view = new ProgressView(
    io.out,
    names.map((i) => `node-${String(i + 1).padStart(width, '0')}`),
  );
  const show = io.progress ?? true;
  const result = await simulate(options, {
    createAgent: io.createAgent,
    connect: io.connect,
    onPhase: show
      ? (c) => {
          view.update(c);
        }
      : undefined,
  });
  if (show) view.finish(result.elapsedMs);
  const header = reportHeader(options, needed);
  const report = [...formatReport(result, header), ...formatCostReport(result)];
  io.out.write(report.join('\n') + '\n');
  const wrote =
    io.timeline === undefined ? true : await writeTimeline(io.timeline, result, { header, report, io });
  return wrote && passed(result) ? 0 : 1;
}

/** Writes the picture of the wave; false (and one line) when the file cannot be written. */
async function writeTimeline(
  path: string,
  result: SimulationResult,
  context: { header: { nodes: number; concurrency: number; seed: number }; report: string[]; io: SimulateIo },
): Promise<boolean> {
  const { header, report, io } = context;
  const title = `kured-ts simulate: ${header.nodes} nodes, concurrency ${header.concurrency}, seed ${header.seed}`;
  const text = path.endsWith('.html')
    ? renderTimelineHtml(result.timeline, title, report)
    : renderTimelineSvg(result.timeline, title);
  try {
    await (io.writeFile ?? ((p: string, t: string) => writeFile(p, t, 'utf8')))(path, text);
  } catch (err) {
    const line = `cannot write the timeline to ${path}: ${errorText(err)}\n`;
    if (io.err) io.err(line);
    else io.out.write(line);
    return false;
  }
  io.out.write(`timeline written to ${path}\n`);
  return true;
}
