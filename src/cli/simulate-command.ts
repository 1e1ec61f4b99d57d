// `kured-ts simulate`: the command and its options (their parsers: simulate-options.ts).
import { Option, type Command } from 'commander';
import type { PdbSpec } from '../sim/cluster-spec.js';
import { UsageError, type Config } from '../config/config.js';
import { FLAGS } from '../config/flags.js';
import { optionValues, parseGivenFlags } from '../config/parse.js';
import { EXIT_USAGE, addFlags } from './shared.js';
import { SIM_AGENT_FLAGS, SIM_SHOWN_DEFAULTS, simAgentOptions } from './simulate-agent-flags.js';
import { DEFAULT_SIMULATE_OPTIONS, runSimulate, type SimulateIo, type SimulateOptions } from './simulate.js';
import { runFleetSimulate } from './simulate-fleet.js';
import {
  THIEF_PRESET,
  blockingChurn,
  coordinatorThief,
  operatorsOf,
  otherOperator,
  duration,
  integerOption,
  needsReboot,
  parsePdb,
  share,
  timelinePath,
  unhealthyNodes,
} from './simulate-options.js';

function durationOption(flags: string, description: string, ms: number, shown: string): Option {
  return new Option(flags, description).argParser(duration).default(ms, shown);
}

/** What src/cli/cli.ts hands over: output and the exit code sink. */
export interface SimulateDeps {
  /** Writes text to stdout as is. */
  stdout(text: string): void;
  /** Writes text to stderr as is. */
  stderr(text: string): void;
  /** Is stdout a terminal (phase bars) or not (plain lines)? */
  isTTY: boolean;
  columns?: number;
  /** Receives the exit code. */
  exit(code: number): void;
}

interface SimulateFlags {
  nodes: number;
  needsReboot: 'all' | number;
  controlPlane: number;
  bootTime: number;
  podsPerNode: number;
  pdb: PdbSpec;
  blockingPod: number;
  alertFiringFor: number;
  preCordoned: number;
  badKernel: number;
  taint: boolean;
  kuredPolling: boolean;
  coordinators: number;
  killCoordinatorAt?: number;
  wipeLockEvery: number;
  coordinatorThief?: { fromMs: number; forMs: number; everyMs?: number };
  otherOperator?: { kind: 'karpenter' | 'autoscaler'; nodes: number };
  zones: number;
  unhealthyNodes?: { nodes: number; durationMs: number };
  approveEvery: number;
  blockingChurn?: { perHour: number; durationMs: number };
  undrainable: number;
  stuckSentinel: number;
  evictionErrors: number;
  loadBalancer: boolean;
  storagePods: boolean;
  volumesPerNode: number;
  volumeDetachTime: number;
  stuckVolume: number;
  singleReplicaWorkloads: number;
  autoscaler: boolean;
  holdWorker: number;
  rebootNow?: string;
  seed: number;
  requiredOver: number;
  wallLimit: number;
  progress: boolean;
  timeline?: string;
  clusters: number;
  fleetlockSlots: number;
}

/** The cluster: its size, the wave, the machines and the workloads. */
function addClusterOptions(cmd: Command): Command {
  const d = DEFAULT_SIMULATE_OPTIONS;
  return cmd
    .option('--nodes <n>', 'nodes in the simulated cluster', integerOption(), d.nodes)
    .option('--needs-reboot <all|n>', 'how many nodes need a reboot', needsReboot, d.needsReboot)
    .option(
      '--control-plane <n>',
      'the first n nodes are control-plane nodes, each with an etcd member (they go last, one at a time, with quorum)',
      integerOption(0),
      0,
    )
    .addOption(
      durationOption('--boot-time <duration>', 'time a node takes to come back Ready', d.bootTimeMs, '2m'),
    )
    .option(
      '--pods-per-node <n>',
      'workload pods per node (3 replicas per workload)',
      integerOption(0),
      d.podsPerNode,
    )
    .addOption(
      new Option('--pdb <spec>', 'PDB per workload: none, max-unavailable=N, min-available=N (N or N%)')
        .argParser(parsePdb)
        .default(d.pdb, 'max-unavailable=1'),
    );
}

/** What the world does to the wave: blocking pods, alerts, cordons, a third party on the lock. */
function addWorldOptions(cmd: Command): Command {
  return cmd
    .addOption(
      durationOption(
        '--blocking-pod <duration>',
        "a pod matching the agents' blocking selector runs this long on the first node (0s = none)",
        0,
        '0s',
      ),
    )
    .addOption(
      durationOption(
        '--alert-firing-for <duration>',
        'a Prometheus alert fires this long from the start (0s = none)',
        0,
        '0s',
      ),
    )
    .option('--pre-cordoned <n>', 'nodes cordoned by someone else before the start', integerOption(0), 0)
    .option(
      '--bad-kernel <n>',
      'the n-th node to reboot boots a bad kernel: it never comes back Ready (0 = none); see --max-failures',
      integerOption(0),
      0,
    )
    .option(
      '--undrainable <n>',
      'the first n nodes carry a pod stuck terminating (a finalizer nobody removes): their drain fails',
      integerOption(0),
      0,
    )
    .option(
      '--stuck-sentinel <n>',
      'the next n nodes (after the undrainable ones) need a reboot that survives every reboot: each ends quarantined reboot-loop after --max-reboots-per-need reboots',
      integerOption(0),
      0,
    )
    .option(
      '--eviction-errors <share>',
      "this share of evictions (N% or 0–1) is answered 500 'etcdserver: request timed out', half of them after the eviction was carried out (a flaky API server)",
      share,
      0,
    )
    .option(
      '--load-balancer',
      'the cluster has a Service of type LoadBalancer: each agent waits --lb-drain-wait (with --exclude-from-lb, the default) before its drain',
      false,
    )
    .option(
      '--storage-pods',
      'a storage daemon on every node with label kured-ts.dev/drain-order=10: evicted only after the other pods of its node are gone (checked as an invariant)',
      false,
    )
    .option(
      '--single-replica-workloads <n>',
      'Deployments of one replica (RollingUpdate) on nodes that need a reboot, each with a PDB of --pdb: the report counts the seconds one had no ready replica (see --single-replica)',
      integerOption(0),
      0,
    );
}

/** The nodes' CSI volumes and their detach (issue 54). */
function addVolumeOptions(cmd: Command): Command {
  return cmd
    .option(
      '--volumes-per-node <n>',
      'CSI volumes per node: the first n workload pods on each node have one, attached where their pod runs and detached --volume-detach-time after it goes; the report counts those still attached when a host went down',
      integerOption(0),
      0,
    )
    .addOption(
      durationOption(
        '--volume-detach-time <duration>',
        'how long a volume takes to detach from its node once its pod is gone (with --volumes-per-node)',
        20_000,
        '20s',
      ),
    )
    .option(
      '--stuck-volume <n>',
      'the first volume of each of the first n nodes never detaches (a stuck CSI driver): see --volume-detach-timeout',
      integerOption(0),
      0,
    );
}

/** The lock and its coordinator: the taint, kured's model, the coordinator replicas and what befalls them. */
function addLockOptions(cmd: Command): Command {
  return cmd
    .option('--no-taint', 'no early PreferNoSchedule taint (kured default)')
    .option(
      '--kured-polling',
      "model kured's lock: no watch wake-up when the lock frees, no fair queue",
      false,
    )
    .option(
      '--coordinators <n>',
      'replicas of kured-ts coordinator keeping the lock queue (0: none; the agents go first come)',
      integerOption(),
      2,
    )
    .addOption(
      new Option(
        '--kill-coordinator-at <duration>',
        'the leading coordinator dies without a word this long after the start (its standby takes over)',
      ).argParser(duration),
    )
    .addOption(
      durationOption(
        '--wipe-lock-every <duration>',
        'a third party deletes the lock annotation this often during the wave (0s = never)',
        0,
        '0s',
      ),
    )
    .addOption(
      new Option(
        '--coordinator-thief [from,for[,every]]',
        `a thief with the coordinator's token, from FROM into the run for FOR, every EVERY (10s) replaces its Lease with an endless one saying all is healthy and gives a turn to every waiting node (bypassing admission); counted in the report (bare: ${THIEF_PRESET})`,
      )
        .preset(THIEF_PRESET)
        .argParser(coordinatorThief),
    )
    .addOption(
      new Option(
        '--other-operator <kind:n>',
        'another operator (karpenter or autoscaler) takes N nodes out during the wave, one at a time, 20 min each, by its taint and without a cordon; the report checks that no slot is taken while theirs and the slots fill --concurrency',
      ).argParser(otherOperator),
    );
}

/** The agents' fleet policy: zones and group limits, the health gate, approval, taint timing. */
function addFleetOptions(cmd: Command): Command {
  return cmd
    .option(
      '--zones <n>',
      'label the nodes topology.kubernetes.io/zone over n zones (zone-a, zone-b, … round robin)',
      integerOption(0),
      0,
    )
    .option(
      '--unhealthy-nodes <n,duration>',
      'the last n nodes are NotReady from the start for this long (e.g. 2,30m)',
      unhealthyNodes,
    )
    .addOption(
      durationOption(
        '--approve-every <duration>',
        'agents run with --require-approval; a simulated operator runs approve --all this often (0s = off)',
        0,
        '0s',
      ),
    )
    .option(
      '--blocking-churn <rate,duration>',
      'blocking jobs keep arriving: RATE per hour (Poisson) over the cluster, each running DURATION once placed, e.g. 30,20m',
      blockingChurn,
    )
    .option(
      '--autoscaler',
      'a simulated autoscaler removes nodes that look empty (no pod but DaemonSet pods) unless annotated against scale-down; counted by when in their cycle',
      false,
    )
    .addOption(
      durationOption(
        '--hold-worker <duration>',
        "a simulated worker holds each node this long after its drain through the agents' --hold-after-drain-annotation (default sim.kured-ts.dev/firmware); 0s = off",
        0,
        '0s',
      ),
    )
    .option(
      '--reboot-now <node>',
      'a simulated admin runs `kured-ts reboot NODE --now` at the start (e.g. with --needs-reboot 0)',
    );
}

/** The run itself: seed, how needs arrive, wall limit, output. */
function addRunOptions(cmd: Command): Command {
  const d = DEFAULT_SIMULATE_OPTIONS;
  return cmd
    .option('--seed <n>', 'seed of every random choice', integerOption(0), d.seed)
    .addOption(
      durationOption(
        '--required-over <duration>',
        "each node's reboot becomes required at its own random moment within this (0s = all at the start)",
        0,
        '0s',
      ),
    )
    .addOption(
      durationOption(
        '--wall-limit <duration>',
        'real time the run may take; a run cut by it says how far it got (and no ratio)',
        d.wallLimitMs,
        '10m',
      ),
    )
    .option('--no-progress', 'no live progress, only the report')
    .option(
      '--clusters <n>',
      'simulate n clusters on one virtual time, each with its own API server and agents (a report each)',
      integerOption(1),
      1,
    )
    .option(
      '--fleetlock-slots <n>',
      'the clusters share one FleetLock server with n slots (the agents get --fleetlock-url); 0 = none',
      integerOption(0),
      0,
    )
    .option(
      '--timeline <file>',
      'also draw the wave: one row per node, phases as coloured bars, slots and hosts down against the concurrency (.svg, or .html with the report)',
      timelinePath,
    );
}

/** One cluster (runSimulate), or several sharing one FleetLock server (--clusters, --fleetlock-slots). */
function runnerOf(
  flags: SimulateFlags,
  command: Command,
): (options: SimulateOptions, io: SimulateIo) => Promise<number> {
  if (flags.clusters <= 1 && flags.fleetlockSlots === 0) return runSimulate;
  if (flags.timeline !== undefined) {
    command.error('error: --timeline draws one cluster: not with --clusters or --fleetlock-slots', {
      exitCode: 2,
    });
  }
  const fleet = { clusters: flags.clusters, slots: flags.fleetlockSlots };
  return (options, io) => runFleetSimulate(options, fleet, io);
}

/** --volumes-per-node, --volume-detach-time, --stuck-volume, when volumes are asked for. */
function volumesOf(flags: SimulateFlags): Pick<SimulateOptions, 'volumes'> {
  if (flags.volumesPerNode <= 0) return {};
  return {
    volumes: { perNode: flags.volumesPerNode, detachMs: flags.volumeDetachTime, stuck: flags.stuckVolume },
  };
}

/** The simulation's options: the world's flags beside the agents' own config. */
function simulateOptionsOf(
  flags: SimulateFlags,
  agent: { config: Config; given: ReadonlySet<string> },
): SimulateOptions {
  return {
    nodes: flags.nodes,
    needsReboot: flags.needsReboot,
    ...simAgentOptions(agent.config, agent.given, flags.nodes),
    controlPlane: flags.controlPlane,
    bootTimeMs: flags.bootTime,
    podsPerNode: flags.podsPerNode,
    pdb: flags.pdb,
    blockingPodMs: flags.blockingPod,
    alertFiringForMs: flags.alertFiringFor,
    preCordoned: flags.preCordoned,
    ...(flags.badKernel > 0 ? { badKernel: flags.badKernel } : {}),
    taint: flags.taint,
    kuredPolling: flags.kuredPolling,
    coordinators: flags.coordinators,
    ...(flags.killCoordinatorAt === undefined ? {} : { killCoordinatorAtMs: [flags.killCoordinatorAt] }),
    wipeLockEveryMs: flags.wipeLockEvery,
    ...operatorsOf(flags),
    zones: flags.zones,
    unhealthy: flags.unhealthyNodes,
    approveEveryMs: flags.approveEvery,
    ...(flags.blockingChurn ? { blockingChurn: flags.blockingChurn } : {}),
    undrainable: flags.undrainable,
    stuckSentinel: flags.stuckSentinel,
    ...(flags.evictionErrors > 0 ? { evictionErrors: flags.evictionErrors } : {}),
    ...(flags.storagePods ? { storagePods: true } : {}),
    ...volumesOf(flags),
    ...(flags.singleReplicaWorkloads > 0 ? { singleReplicaWorkloads: flags.singleReplicaWorkloads } : {}),
    ...(flags.loadBalancer ? { loadBalancer: true } : {}),
    autoscaler: flags.autoscaler,
    holdWorkerMs: flags.holdWorker,
    ...(flags.rebootNow === undefined ? {} : { rebootNow: flags.rebootNow }),
    seed: flags.seed,
    requiredOverMs: flags.requiredOver,
    wallLimitMs: flags.wallLimit,
  };
}

/** Adds `simulate` to the program. */
export function registerSimulate(program: Command, deps: SimulateDeps): Command {
  const cmd = program
    .command('simulate')
    .description(
      "run a simulated cluster in this process with real kured-ts agents, then report (no cluster needed); the agents' flags below are the agent's own (no KURED_* variable is read)",
    );
  const agentFlags = FLAGS.filter((f) => (SIM_AGENT_FLAGS as readonly string[]).includes(f.name));
  addFlags(cmd, agentFlags, SIM_SHOWN_DEFAULTS);
  return addRunOptions(
    addFleetOptions(addLockOptions(addVolumeOptions(addWorldOptions(addClusterOptions(cmd))))),
  ).action(async (flags: SimulateFlags & Record<string, unknown>, command: Command) => {
    // the agents' flags through the agent's own table (its parsers, defaults and messages); no env
    let agent: { config: Config; given: ReadonlySet<string> };
    try {
      agent = parseGivenFlags(SIM_AGENT_FLAGS, optionValues(flags, agentFlags), {});
    } catch (err: unknown) {
      if (!(err instanceof UsageError)) throw err;
      command.error(`error: ${err.message}`, { exitCode: EXIT_USAGE });
    }
    if (agent.config.groupConcurrency !== undefined && flags.zones === 0) {
      command.error('error: --group-concurrency needs --zones (the groups are the zones)', {
        exitCode: EXIT_USAGE,
      });
    }
    if (agent.config.groupOrder.kind === 'sequential' && flags.zones === 0) {
      command.error('error: --group-order sequential needs --zones (the groups are the zones)', {
        exitCode: EXIT_USAGE,
      });
    }
    const run = runnerOf(flags, command);
    const code = await run(simulateOptionsOf(flags, agent), {
      out: {
        write: (text) => {
          deps.stdout(text);
        },
        isTTY: deps.isTTY,
        columns: deps.columns,
      },
      err: (text) => {
        deps.stderr(text);
      },
      progress: flags.progress,
      timeline: flags.timeline,
    });
    deps.exit(code);
  });
}
