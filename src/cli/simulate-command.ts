// `kured-ts simulate`: the command, its options and their parsers.
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { PdbSpec } from '../sim/cluster-spec.js';
import { duration as durationAtLeast, integer, share, unhealthyLimit, type Share } from '../config/values.js';
import { errorText } from '../text/error-text.js';
import { DEFAULT_SIMULATE_OPTIONS, runSimulate } from './simulate.js';

/** --timeline: a path ending in .svg or .html. */
export function timelinePath(value: string): string {
  if (!/\.(svg|html)$/i.test(value))
    throw new InvalidArgumentError('the file name must end in .svg or .html');
  return value;
}

// ---- command line --------------------------------------------------------------------------------

/** One of the flag table's parsers (config/values.ts) as a commander argument parser. */
function asOption<T>(parse: (value: string) => T): (value: string) => T {
  return (value) => {
    try {
      return parse(value);
    } catch (err) {
      throw new InvalidArgumentError(errorText(err));
    }
  };
}

/** An integer of at least `min`, as the agent's flags read one. */
const integerOption = (min = 1): ((value: string) => number) => asOption(integer(min));
/** A duration (not negative), as the agent's flags read one. */
const duration = asOption(durationAtLeast('non-negative'));

/** --max-unhealthy-nodes: as the agent's flag reads it. */
const simUnhealthyLimit = asOption((value): { count: number } | { percent: number } => {
  const limit = unhealthyLimit(value);
  if (limit === undefined) throw new Error('expected N or N%');
  return limit;
});

/** --blocking-churn RATE,DURATION: jobs per hour (a positive number) and how long each runs. */
export function blockingChurn(value: string): { perHour: number; durationMs: number } {
  const parts = value.split(',');
  const perHour = Number(parts[0]);
  if (parts.length !== 2 || !Number.isFinite(perHour) || perHour <= 0)
    throw new InvalidArgumentError(
      'expected RATE,DURATION: jobs per hour (> 0) and how long each runs (e.g. 30,20m)',
    );
  return { perHour, durationMs: duration(parts[1] ?? '') };
}

/** --unhealthy-nodes N,DURATION. */
export function unhealthyNodes(value: string): { nodes: number; durationMs: number } {
  const [count = '', span = ''] = value.split(',');
  if (value.split(',').length !== 2) throw new InvalidArgumentError('expected N,DURATION (e.g. 2,30m)');
  return { nodes: integerOption(1)(count), durationMs: duration(span) };
}

/** --concurrency N or N%: the agents' flag, and the number of slots it gives this cluster (its DaemonSet runs on every node). */
function concurrencyOf(flags: SimulateFlags): { concurrency: number; concurrencyPercent?: number } {
  const c = flags.concurrency;
  if ('count' in c) return { concurrency: c.count };
  return {
    concurrency: Math.max(1, Math.floor((c.percent * flags.nodes) / 100)),
    concurrencyPercent: c.percent,
  };
}

function needsReboot(value: string): 'all' | number {
  return value === 'all' ? 'all' : integerOption(0)(value);
}

/** `none`, `max-unavailable=N`, `min-available=N` (N an integer or a percentage). */
export function parsePdb(value: string): PdbSpec {
  if (value === 'none') return { kind: 'none' };
  const m = /^(max-unavailable|min-available)=(\d+%?)$/.exec(value);
  if (!m)
    throw new InvalidArgumentError(
      'expected none, max-unavailable=N or min-available=N (N may be a percentage)',
    );
  const raw = m[2] ?? '';
  const amount = raw.endsWith('%') ? raw : Number(raw);
  return { kind: m[1] === 'max-unavailable' ? 'maxUnavailable' : 'minAvailable', value: amount };
}

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
  concurrency: Share;
  controlPlane: number;
  period: number;
  rebootDelay: number;
  bootTime: number;
  podsPerNode: number;
  pdb: PdbSpec;
  blockingPod: number;
  alertFiringFor: number;
  preCordoned: number;
  taint: boolean;
  kuredPolling: boolean;
  coordinators: number;
  killCoordinatorAt?: number;
  lockTtl: number;
  wipeLockEvery: number;
  zones: number;
  groupConcurrency: number;
  maxUnhealthyNodes?: { count: number } | { percent: number };
  unhealthyNodes?: { nodes: number; durationMs: number };
  approveEvery: number;
  blockingChurn?: { perHour: number; durationMs: number };
  taintTiming: 'required' | 'unblocked';
  undrainable: number;
  storagePods: boolean;
  drainTimeout?: number;
  onDrainFailure: 'quarantine' | 'requeue';
  maxQuarantined?: { count: number } | { percent: number };
  autoscaler: boolean;
  autoscalerProtection: boolean;
  rebootNow?: string;
  settleTime?: number;
  seed: number;
  requiredOver: number;
  wallLimit: number;
  progress: boolean;
  timeline?: string;
}

/** The cluster: its size, the wave, the machines and the workloads. */
function addClusterOptions(cmd: Command): Command {
  const d = DEFAULT_SIMULATE_OPTIONS;
  return cmd
    .option('--nodes <n>', 'nodes in the simulated cluster', integerOption(), d.nodes)
    .option('--needs-reboot <all|n>', 'how many nodes need a reboot', needsReboot, d.needsReboot)
    .addOption(
      new Option('--concurrency <n|n%>', 'nodes that may reboot at once: N, or N% of the nodes')
        .argParser(asOption(share(1)))
        .default({ count: d.concurrency }, String(d.concurrency)),
    )
    .option(
      '--control-plane <n>',
      'the first n nodes are control-plane nodes, each with an etcd member (they go last, one at a time, with quorum)',
      integerOption(0),
      0,
    )
    .addOption(durationOption('--period <duration>', 'agent check period', d.periodMs, '1h'))
    .addOption(durationOption('--reboot-delay <duration>', 'wait after the drain before rebooting', 0, '0s'))
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
      '--undrainable <n>',
      'the first n nodes carry a pod stuck terminating (a finalizer nobody removes): their drain fails',
      integerOption(0),
      0,
    )
    .option(
      '--storage-pods',
      'a storage daemon on every node with label kured-ts.dev/drain-order=10: evicted only after the other pods of its node are gone (checked as an invariant)',
      false,
    )
    .addOption(
      new Option(
        '--drain-timeout <duration>',
        "the agents' --drain-timeout (default 0s: none; 5m with --undrainable)",
      ).argParser(duration),
    )
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
        '--lock-ttl <duration>',
        "the agents' --lock-ttl; shorter than --boot-time, it lapses while nodes are down (0s = never)",
        0,
        '0s',
      ),
    )
    .addOption(
      durationOption(
        '--wipe-lock-every <duration>',
        'a third party deletes the lock annotation this often during the wave (0s = never)',
        0,
        '0s',
      ),
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
      '--group-concurrency <n>',
      "at most n nodes per zone at once (the agents' --group-label is the zone; needs --zones)",
      integerOption(0),
      0,
    )
    .option(
      '--max-unhealthy-nodes <n|n%>',
      "the agents' health gate: no slot while more other nodes than this are unhealthy",
      simUnhealthyLimit,
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
    .addOption(
      new Option('--on-drain-failure <action>', "the agents' --on-drain-failure")
        .choices(['quarantine', 'requeue'])
        .default('quarantine'),
    )
    .option(
      '--max-quarantined <n|n%>',
      "the agents' cap: no new cycle while more other nodes than this are quarantined",
      simUnhealthyLimit,
    )
    .addOption(
      new Option('--taint-timing <when>', "the agents' --taint-timing (unblocked = kured's timing)")
        .choices(['required', 'unblocked'])
        .default('required'),
    )
    .option(
      '--autoscaler',
      'a simulated autoscaler removes nodes that look empty (no pod but DaemonSet pods) unless annotated against scale-down; counted by when in their cycle',
      false,
    )
    .option('--no-autoscaler-protection', "the agents' --autoscaler-protection=false")
    .option(
      '--reboot-now <node>',
      'a simulated admin runs `kured-ts reboot NODE --now` at the start (e.g. with --needs-reboot 0)',
    )
    .addOption(
      new Option('--settle-time <duration>', "the agents' --settle-time (default theirs: 10m)").argParser(
        duration,
      ),
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
      '--timeline <file>',
      'also draw the wave: one row per node, phases as coloured bars, slots and hosts down against the concurrency (.svg, or .html with the report)',
      timelinePath,
    );
}

/** Adds `simulate` to the program. */
export function registerSimulate(program: Command, deps: SimulateDeps): Command {
  const cmd = program
    .command('simulate')
    .description(
      'run a simulated cluster in this process with real kured-ts agents, then report (no cluster needed)',
    );
  return addRunOptions(addFleetOptions(addWorldOptions(addClusterOptions(cmd)))).action(
    async (flags: SimulateFlags, command: Command) => {
      if (flags.groupConcurrency > 0 && flags.zones === 0) {
        command.error('error: --group-concurrency needs --zones (the groups are the zones)', { exitCode: 2 });
      }
      const code = await runSimulate(
        {
          nodes: flags.nodes,
          needsReboot: flags.needsReboot,
          ...concurrencyOf(flags),
          controlPlane: flags.controlPlane,
          periodMs: flags.period,
          rebootDelayMs: flags.rebootDelay,
          bootTimeMs: flags.bootTime,
          podsPerNode: flags.podsPerNode,
          pdb: flags.pdb,
          blockingPodMs: flags.blockingPod,
          alertFiringForMs: flags.alertFiringFor,
          preCordoned: flags.preCordoned,
          taint: flags.taint,
          kuredPolling: flags.kuredPolling,
          coordinators: flags.coordinators,
          ...(flags.killCoordinatorAt === undefined
            ? {}
            : { killCoordinatorAtMs: [flags.killCoordinatorAt] }),
          lockTtlMs: flags.lockTtl,
          wipeLockEveryMs: flags.wipeLockEvery,
          zones: flags.zones,
          groupConcurrency: flags.groupConcurrency,
          maxUnhealthyNodes: flags.maxUnhealthyNodes,
          unhealthy: flags.unhealthyNodes,
          approveEveryMs: flags.approveEvery,
          ...(flags.blockingChurn ? { blockingChurn: flags.blockingChurn } : {}),
          taintTiming: flags.taintTiming,
          undrainable: flags.undrainable,
          ...(flags.storagePods ? { storagePods: true } : {}),
          ...(flags.drainTimeout === undefined ? {} : { drainTimeoutMs: flags.drainTimeout }),
          onDrainFailure: flags.onDrainFailure,
          ...(flags.maxQuarantined === undefined ? {} : { maxQuarantined: flags.maxQuarantined }),
          autoscaler: flags.autoscaler,
          autoscalerProtection: flags.autoscalerProtection,
          ...(flags.rebootNow === undefined ? {} : { rebootNow: flags.rebootNow }),
          ...(flags.settleTime === undefined ? {} : { settleTimeMs: flags.settleTime }),
          seed: flags.seed,
          requiredOverMs: flags.requiredOver,
          wallLimitMs: flags.wallLimit,
        },
        {
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
        },
      );
      deps.exit(code);
    },
  );
}
