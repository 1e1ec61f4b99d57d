// `kured-ts simulate`: a whole cluster in one process with the real agents, then a report.
import { InvalidArgumentError, Option, type Command } from 'commander';
import { parseDuration } from '../config/values.js';
import { SIM_TAINT, type SimAgentSettings } from '../sim/agent-config.js';
import { ZONE_LABEL, type PdbSpec } from '../sim/cluster.js';
import { unhealthyLimit } from '../config/values.js';
import { startFakeApiServer } from '../sim/fake-api-server.js';
import { ProgressView, type ProgressOutput } from '../sim/progress.js';
import { formatReport, passed } from '../sim/report.js';
import { connectSimKube } from '../sim/sim-kube.js';
import {
  runSimulation,
  type AgentFactory,
  type SimulationOptions,
  type SimulationResult,
} from '../sim/simulation.js';
import { simAgentFactory } from '../sim/sim-agent.js';
import { errorText } from '../text/error-text.js';
import { writeFile } from 'node:fs/promises';
import { renderTimelineHtml, renderTimelineSvg } from '../sim/timeline-svg.js';

/** Everything `simulate` can be told. Durations in ms. */
export interface SimulateOptions {
  /** --nodes: default 10. */
  nodes: number;
  /** --needs-reboot: 'all' or how many nodes (the first ones). Default 'all'. */
  needsReboot: 'all' | number;
  /** --concurrency: default 1. */
  concurrency: number;
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
  /** --kured-polling: no watch wake-up; agents find a free lock only on their own next tick. */
  kuredPolling: boolean;
  /** --lock-ttl: the agents' lock TTL; 0 = never expires. Shorter than a node's downtime, it lapses. */
  lockTtlMs?: number;
  /** --wipe-lock-every: a third party deletes the lock annotation this often; 0 = never. */
  wipeLockEveryMs?: number;
  /** --zones: label the nodes topology.kubernetes.io/zone over this many zones; 0 = none. */
  zones?: number;
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
  /** --taint-timing: when the agents taint (default required; unblocked = kured's timing). */
  taintTiming?: 'required' | 'unblocked';
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
}

const DAY = 24 * 3_600_000;

/** Runs one simulation with these options; returns the result (for tests and the bench). */
export async function simulate(
  options: SimulateOptions,
  io: { createAgent?: AgentFactory; onPhase?: SimulationOptions['onPhase'] } = {},
): Promise<SimulationResult> {
  return runSimulation({ ...simulationOptions(options, io.createAgent), onPhase: io.onPhase });
}

/** The fleet policies the agents run with: zone groups, the health gate, approval. */
function fleetPolicy(options: SimulateOptions): Partial<SimAgentSettings> {
  const groups = options.groupConcurrency ?? 0;
  return {
    ...(groups > 0 ? { groups: { label: ZONE_LABEL, concurrency: groups } } : {}),
    maxUnhealthyNodes: options.maxUnhealthyNodes,
    requireApproval: (options.approveEveryMs ?? 0) > 0,
    taintTiming: options.taintTiming ?? 'required',
  };
}

/** --required-over, when given. */
function requiredOver(options: SimulateOptions): { requiredOverMs?: number } {
  return options.requiredOverMs === undefined ? {} : { requiredOverMs: options.requiredOverMs };
}

/** The full simulation settings behind these options (the bench adjusts them further). */
export function simulationOptions(options: SimulateOptions, createAgent?: AgentFactory): SimulationOptions {
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
      zones: options.zones ?? 0,
      ...(options.blockingChurn ? { blockingChurn: options.blockingChurn } : {}),
      ...(options.unhealthy ? { unhealthy: options.unhealthy } : {}),
      seed: options.seed,
    },
    agent: {
      concurrency: options.concurrency,
      periodMs: options.periodMs,
      rebootDelayMs: options.rebootDelayMs,
      taint: options.taint ? SIM_TAINT : '',
      blockOnPdb: true,
      drainTimeoutMs: 0,
      evictionRetryDelayMs: 5_000,
      prometheusUrl: '',
      lockTtlMs: options.lockTtlMs ?? 0,
      ...fleetPolicy(options),
    },
    wipeLockEveryMs: options.wipeLockEveryMs ?? 0,
    approveEveryMs: options.approveEveryMs ?? 0,
    createAgent: createAgent ?? simAgentFactory,
    startServer: (clock, admission) =>
      startFakeApiServer({ podDeletion: 'graceful', clock, ...(admission ? { admission } : {}) }),
    connect: connectSimKube,
    watchEvents: !options.kuredPolling,
    alertFiringForMs: options.alertFiringForMs,
    limitMs: 7 * DAY,
    wallLimitMs: options.wallLimitMs,
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
    onPhase: show
      ? (c) => {
          view.update(c);
        }
      : undefined,
  });
  if (show) view.finish(result.elapsedMs);
  const header = {
    nodes: options.nodes,
    needed,
    concurrency: options.concurrency,
    periodMs: options.periodMs,
    seed: options.seed,
    ...((options.groupConcurrency ?? 0) > 0 ? { groupConcurrency: options.groupConcurrency } : {}),
  };
  const report = formatReport(result, header);
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

/** --timeline: a path ending in .svg or .html. */
export function timelinePath(value: string): string {
  if (!/\.(svg|html)$/i.test(value))
    throw new InvalidArgumentError('the file name must end in .svg or .html');
  return value;
}

// ---- command line --------------------------------------------------------------------------------

function positiveInt(name: string, min = 1): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min)
      throw new InvalidArgumentError(`${name} must be an integer >= ${min}`);
    return n;
  };
}

function duration(value: string): number {
  let ms: number;
  try {
    ms = parseDuration(value);
  } catch (err) {
    throw new InvalidArgumentError(errorText(err));
  }
  if (ms < 0) throw new InvalidArgumentError('must not be negative');
  return ms;
}

/** --max-unhealthy-nodes: as the agent's flag reads it. */
function simUnhealthyLimit(value: string): { count: number } | { percent: number } {
  try {
    const limit = unhealthyLimit(value);
    if (limit === undefined) throw new Error('expected N or N%');
    return limit;
  } catch (err) {
    throw new InvalidArgumentError(errorText(err));
  }
}

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
  return { nodes: positiveInt('--unhealthy-nodes', 1)(count), durationMs: duration(span) };
}

function needsReboot(value: string): 'all' | number {
  return value === 'all' ? 'all' : positiveInt('--needs-reboot', 0)(value);
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
  concurrency: number;
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
  lockTtl: number;
  wipeLockEvery: number;
  zones: number;
  groupConcurrency: number;
  maxUnhealthyNodes?: { count: number } | { percent: number };
  unhealthyNodes?: { nodes: number; durationMs: number };
  approveEvery: number;
  blockingChurn?: { perHour: number; durationMs: number };
  taintTiming: 'required' | 'unblocked';
  seed: number;
  requiredOver: number;
  wallLimit: number;
  progress: boolean;
  timeline?: string;
}

/** Adds `simulate` to the program. */
export function registerSimulate(program: Command, deps: SimulateDeps): Command {
  const d = DEFAULT_SIMULATE_OPTIONS;
  return program
    .command('simulate')
    .description(
      'run a simulated cluster in this process with real kured-ts agents, then report (no cluster needed)',
    )
    .option('--nodes <n>', 'nodes in the simulated cluster', positiveInt('--nodes'), d.nodes)
    .option('--needs-reboot <all|n>', 'how many nodes need a reboot', needsReboot, d.needsReboot)
    .option('--concurrency <n>', 'nodes that may reboot at once', positiveInt('--concurrency'), d.concurrency)
    .addOption(durationOption('--period <duration>', 'agent check period', d.periodMs, '1h'))
    .addOption(durationOption('--reboot-delay <duration>', 'wait after the drain before rebooting', 0, '0s'))
    .addOption(
      durationOption('--boot-time <duration>', 'time a node takes to come back Ready', d.bootTimeMs, '2m'),
    )
    .option(
      '--pods-per-node <n>',
      'workload pods per node (3 replicas per workload)',
      positiveInt('--pods-per-node', 0),
      d.podsPerNode,
    )
    .addOption(
      new Option('--pdb <spec>', 'PDB per workload: none, max-unavailable=N, min-available=N (N or N%)')
        .argParser(parsePdb)
        .default(d.pdb, 'max-unavailable=1'),
    )
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
    .option(
      '--pre-cordoned <n>',
      'nodes cordoned by someone else before the start',
      positiveInt('--pre-cordoned', 0),
      0,
    )
    .option('--no-taint', 'no early PreferNoSchedule taint (kured default)')
    .option('--kured-polling', "model kured's polling: no watch wake-up when the lock frees", false)
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
    )
    .option(
      '--zones <n>',
      'label the nodes topology.kubernetes.io/zone over n zones (zone-a, zone-b, … round robin)',
      positiveInt('--zones', 0),
      0,
    )
    .option(
      '--group-concurrency <n>',
      "at most n nodes per zone at once (the agents' --group-label is the zone; needs --zones)",
      positiveInt('--group-concurrency', 0),
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
      new Option('--taint-timing <when>', "the agents' --taint-timing (unblocked = kured's timing)")
        .choices(['required', 'unblocked'])
        .default('required'),
    )
    .option('--seed <n>', 'seed of every random choice', positiveInt('--seed', 0), d.seed)
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
    )
    .action(async (flags: SimulateFlags, command: Command) => {
      if (flags.groupConcurrency > 0 && flags.zones === 0) {
        command.error('error: --group-concurrency needs --zones (the groups are the zones)', { exitCode: 2 });
      }
      const code = await runSimulate(
        {
          nodes: flags.nodes,
          needsReboot: flags.needsReboot,
          concurrency: flags.concurrency,
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
          lockTtlMs: flags.lockTtl,
          wipeLockEveryMs: flags.wipeLockEvery,
          zones: flags.zones,
          groupConcurrency: flags.groupConcurrency,
          maxUnhealthyNodes: flags.maxUnhealthyNodes,
          unhealthy: flags.unhealthyNodes,
          approveEveryMs: flags.approveEvery,
          ...(flags.blockingChurn ? { blockingChurn: flags.blockingChurn } : {}),
          taintTiming: flags.taintTiming,
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
    });
}
