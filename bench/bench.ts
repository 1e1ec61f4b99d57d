// `npm run bench`: what DESIGN promises, measured. Prints markdown tables.
//   node dist/bench/bench.js [--quick] [--full] [--only=makespan,taint,churn,fair,contention,chaos,cost,memory,scale]
//   --quick  small sizes only (a smoke run);  --full  also run every real agent for 200 nodes
import { DEFAULT_SIMULATE_OPTIONS, simulationOptions, type SimulateOptions } from '../src/cli/simulate.js';
import { runRollingModel } from './rolling-model.js';
import { runSimulation, type SimulationOptions, type SimulationResult } from '../src/sim/simulation.js';
import { PROBE_EVERY_MS, measureDrainingAgent, measureIdleAgent } from './agent-cost.js';
import { memoryFloors } from './memory-floors.js';
import { shortDuration } from '../src/text/duration.js';
import { ratio, table } from './table.js';
import type { FakeApiServer } from '../src/sim/fake-api-server.js';
import { seededRandom } from '../src/sim/random.js';
import { unqueuedAgentFactory } from '../src/sim/sim-agent.js';

const HOUR = 3_600_000;
const args = new Set(process.argv.slice(2));
const quick = args.has('--quick');
const full = args.has('--full');
const out = (text: string): void => {
  process.stdout.write(text + '\n');
};

function base(over: Partial<SimulateOptions>): SimulateOptions {
  return { ...DEFAULT_SIMULATE_OPTIONS, ...over };
}

async function sim(
  over: Partial<SimulateOptions>,
  tweak?: (o: SimulationOptions) => void,
): Promise<SimulationResult> {
  process.stderr.write(`bench: simulate ${JSON.stringify(over)}\n`);
  const options = simulationOptions(base(over));
  tweak?.(options);
  const r = await runSimulation(options);
  if (r.violations.length > 0)
    out(`  (!) ${r.violations.length} invariant violations in a run: ${JSON.stringify(over)}`);
  return r;
}

/** Mean per-node work of a real run (for the model), or the configured estimate. */
function meanWork(r: SimulationResult | undefined): number {
  const work = r?.nodes.filter((n) => n.reboots > 0).map((n) => n.workMs) ?? [];
  return work.length > 0 ? work.reduce((a, b) => a + b, 0) / work.length : 30_000 + 5_000 + 120_000 + 10_000;
}

function modelRatio(nodes: number, concurrency: number, workMs: number, wakeUp: 'watch' | 'poll'): number {
  const seeds = [1, 2, 3, 4, 5];
  const ratios = seeds.map((seed) => {
    const m = runRollingModel({
      nodes,
      concurrency,
      periodMs: HOUR,
      workMs,
      wakeUp,
      firstTickMaxMs: wakeUp === 'watch' ? 60_000 : HOUR,
      seed,
    });
    return m.rollingMs / m.lowerBoundMs;
  });
  return ratios.reduce((a, b) => a + b, 0) / ratios.length;
}

async function makespanTable(): Promise<void> {
  const sizes = quick ? [10] : [10, 50, 200];
  const rows: string[][] = [];
  for (const nodes of sizes)
    for (const concurrency of [1, 3]) {
      const real = nodes <= 50 || full;
      const watch = real ? await sim({ nodes, concurrency }) : undefined;
      const poll = real ? await sim({ nodes, concurrency, kuredPolling: true }) : undefined;
      const work = meanWork(watch);
      rows.push([
        String(nodes),
        String(concurrency),
        watch ? shortDuration(watch.lowerBoundMs) : shortDuration((nodes * work) / concurrency) + ' (est.)',
        watch
          ? `${shortDuration(watch.rollingMs)} (${ratio(watch.rollingMs, watch.lowerBoundMs)})`
          : 'not run',
        poll ? `${shortDuration(poll.rollingMs)} (${ratio(poll.rollingMs, poll.lowerBoundMs)})` : 'not run',
        modelRatio(nodes, concurrency, work, 'watch').toFixed(2),
        modelRatio(nodes, concurrency, work, 'poll').toFixed(2),
        watch ? `${(watch.wallMs / 1000).toFixed(0)} s` : '-',
      ]);
    }
  out(
    table(
      'Rolling reboot, period 1h: time from the first lock to the last release vs the lower bound',
      [
        'nodes',
        'C',
        'lower bound',
        'kured-ts (watch wake-up), sim',
        'kured polling model, sim',
        'model: kured-ts',
        'model: kured',
        'wall (kured-ts sim)',
      ],
      rows,
    ),
  );
  out(
    'Simulations run the real agents (same seed 1) with 4 pods per node, PDB max-unavailable=1, boot 2m. ' +
      '"kured polling" = the same agents with lock watch events withheld, so a waiting node acquires only on its ' +
      'own next jittered tick, as kured does. Models: discrete-event hand-off with the measured per-node work, ' +
      'mean of 5 seeds. Lower bound = sum of per-node drain+reboot+ready / C; with C=3 and 10 nodes the wave ' +
      'granularity alone (4 waves for 10/3) puts ~1.2 above it.\n',
  );
}

interface TaintScenario {
  name: string;
  needsReboot: number;
  /** Reboot-required appears on each of those nodes at a random moment within this long. */
  requiredOverMs: number;
}

/** Relative change from `off` to `on` (NaN when off is 0 and on is not). */
function rel(on: number, off: number): number {
  if (off === 0) return on === 0 ? 0 : Number.NaN;
  return (on - off) / off;
}

/** A relative change as a signed percentage. */
function signed(d: number): string {
  if (Number.isNaN(d)) return '+∞';
  return `${d > 0 ? '+' : d < 0 ? '−' : ''}${Math.abs(d * 100).toFixed(0)}%`;
}

/** min / median / max of the per-seed changes. */
function spread(changes: readonly number[]): string {
  const sorted = [...changes].sort((a, b) => (Number.isNaN(a) ? 1 : Number.isNaN(b) ? -1 : a - b));
  const median = sorted[Math.floor((sorted.length - 1) / 2)] ?? 0;
  return `${signed(sorted[0] ?? 0)} / ${signed(median)} / ${signed(sorted.at(-1) ?? 0)}`;
}

function medianOf(changes: readonly number[]): number {
  const sorted = [...changes].filter((c) => !Number.isNaN(c)).sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? 0;
}

/** One figure over seeds, kured's timing (off) against kured-ts's (on): the means, their change, the per-seed spread. */
function figure(pairs: readonly { on: number; off: number }[], show: (n: number) => string): string {
  const mean = (f: (p: { on: number; off: number }) => number): number =>
    pairs.reduce((a, p) => a + f(p), 0) / Math.max(1, pairs.length);
  const on = mean((p) => p.on);
  const off = mean((p) => p.off);
  return `${show(off)} → ${show(on)} (mean ${signed(rel(on, off))}; per seed ${spread(pairs.map((p) => rel(p.on, p.off)))})`;
}

const SEEDS = quick ? [1] : [1, 2, 3, 4, 5];

async function taintScenario(nodes: number, sc: TaintScenario): Promise<string[]> {
  const twice: { on: number; off: number }[] = [];
  const onto: { on: number; off: number }[] = [];
  const makespan: { on: number; off: number }[] = [];
  for (const seed of SEEDS) {
    const run = (taint: boolean): Promise<SimulationResult> =>
      sim({ nodes, seed, taint, podsPerNode: 6, needsReboot: sc.needsReboot }, (o) => {
        o.cluster.requiredOverMs = sc.requiredOverMs;
      });
    const on = await run(true);
    const off = await run(false);
    twice.push({ on: on.evictedMoreThanOnce, off: off.evictedMoreThanOnce });
    onto.push({ on: on.placementsOnPendingNodes, off: off.placementsOnPendingNodes });
    makespan.push({ on: on.makespanMs, off: off.makespanMs });
  }
  const count = (n: number): string => n.toFixed(1);
  return [sc.name, figure(twice, count), figure(onto, count), figure(makespan, shortDuration)];
}

async function taintTable(): Promise<void> {
  const nodes = quick ? 10 : 20;
  const half = nodes / 2;
  const scenarios: TaintScenario[] = [
    { name: `all ${nodes} at t=0`, needsReboot: nodes, requiredOverMs: 0 },
    { name: `${half} of ${nodes} at t=0`, needsReboot: half, requiredOverMs: 0 },
    { name: `${half} of ${nodes} over 1h`, needsReboot: half, requiredOverMs: HOUR },
  ];
  const rows: string[][] = [];
  for (const sc of scenarios) rows.push(await taintScenario(nodes, sc));
  out(
    table(
      `Early PreferNoSchedule taint off → on (${nodes} nodes, 6 pods per node, C=1, ${SEEDS.length} seed(s); per seed: min / median / max of the change)`,
      [
        'nodes needing a reboot',
        'replicas evicted more than once',
        'pods placed on nodes still to reboot',
        'makespan',
      ],
      rows,
    ),
  );
  out(
    '"at t=0": reboot-required is there on those nodes (the first by name) from the start; "over 1h": it ' +
      'appears on each at a random moment within the first hour (one period). "Still to reboot" counts a ' +
      'placement onto a node whose reboot-required is already there; a later arrival shows up only as a ' +
      "replica evicted twice. Makespan = start to last release. Each cell: the means over the seeds, kured's " +
      'timing → the early taint, and the change of each seed (same seed on both sides).\n',
  );
}

interface ChurnPair {
  on: SimulationResult;
  off: SimulationResult;
}

/** kured issue #970's claims for the early taint, with the figure each one is about. */
const CLAIMS = [
  { what: 'reboot preparation (required → lock)', target: -0.4, of: (r: SimulationResult) => r.meanPrepMs },
  {
    what: 'blocking jobs placed on nodes needing a reboot',
    target: -0.65,
    of: (r: SimulationResult) => r.blockingOnPendingNodes,
  },
  { what: 'makespan', target: -0.3, of: (r: SimulationResult) => r.makespanMs },
] as const;

/**
 * kured issue #970's claim for the early taint (reboot preparation −40 %, blocking-pod conflicts
 * −65 %, rolling reboot −30 %), measured where it applies: blocking jobs that keep arriving, each
 * figure as the mean over 5 seeds with each seed's own change (min / median / max) beside it.
 */
async function churnTable(): Promise<void> {
  const nodes = quick ? 10 : 20;
  const rates = quick ? [30] : [15, 30, 60];
  const rows: string[][] = [];
  const medians = CLAIMS.map(() => [] as { scenario: string; median: number }[]);
  let violations = 0;
  for (const needsReboot of [nodes, nodes / 2])
    for (const perHour of rates) {
      const over: Partial<SimulateOptions> = {
        nodes,
        needsReboot,
        podsPerNode: 2,
        blockingChurn: { perHour, durationMs: 20 * 60_000 },
      };
      const pairs: ChurnPair[] = [];
      for (const seed of SEEDS) {
        const on = await sim({ ...over, taintTiming: 'required', seed });
        const off = await sim({ ...over, taintTiming: 'unblocked', seed });
        violations += on.violations.length + off.violations.length;
        pairs.push({ on, off });
      }
      const scenario = `${needsReboot} of ${nodes}, ${perHour}/h`;
      const cells = CLAIMS.map((claim, i) => {
        const values = pairs.map((p) => ({ on: claim.of(p.on), off: claim.of(p.off) }));
        medians[i]?.push({ scenario, median: medianOf(values.map((v) => rel(v.on, v.off))) });
        return figure(values, i === 1 ? (n) => n.toFixed(1) : shortDuration);
      });
      rows.push([
        `${needsReboot} of ${nodes}`,
        `${perHour}/h`,
        ...cells,
        shortDuration(pairs[0]?.on.lowerBoundMs ?? 0),
      ]);
    }
  out(
    table(
      `Early taint under blocking-pod churn: kured's timing → kured-ts's (${nodes} nodes, C=1, period 1h, jobs of 20 min, ${SEEDS.length} seed(s); per seed: min / median / max of the change)`,
      [
        'nodes needing a reboot',
        'blocking jobs',
        'preparation (required → lock; target −40%)',
        'blocking jobs placed on nodes needing a reboot (target −65%)',
        'makespan (target −30%)',
        'lower bound',
      ],
      rows,
    ),
  );
  out(
    "kured's timing (--taint-timing unblocked): the taint goes on only once nothing blocks the node, as it " +
      'waits for the lock. kured-ts (required): as soon as the reboot is required, blocked or not. Jobs matching ' +
      'the blocking selector arrive at a Poisson rate and are placed by the simulated scheduler, which avoids ' +
      `cordoned nodes and prefers untainted ones (TaintToleration scoring). Invariant violations in all these runs: ${violations}.\n`,
  );
  out("Does the simulation meet kured #970's claims? Judged by the median seed of each scenario:\n");
  CLAIMS.forEach((claim, i) => {
    const list = medians[i] ?? [];
    const met = list.filter((m) => m.median <= claim.target);
    const best = [...list].sort((a, b) => a.median - b.median)[0];
    const verdict =
      met.length === 0
        ? `no: not in any of the ${list.length} scenarios`
        : `in ${met.length} of ${list.length} scenarios (${met.map((m) => m.scenario).join('; ')})`;
    out(
      `- ${claim.what} ${signed(claim.target)}: ${verdict}; the best median is ${signed(best?.median ?? 0)} (${best?.scenario ?? '-'}).`,
    );
  });
  out('');
}

/** The fair lock queue against whoever wakes first: need order, waiting and what it costs in requests. */
async function fairTable(): Promise<void> {
  const nodes = quick ? 10 : 20;
  const rows: string[][] = [];
  for (const fair of [true, false]) {
    const runs: SimulationResult[] = [];
    for (const seed of SEEDS)
      runs.push(
        await sim({ nodes, concurrency: 1, podsPerNode: 2, requiredOverMs: 10 * 60_000, seed }, (o) => {
          if (!fair) o.createAgent = unqueuedAgentFactory;
        }),
      );
    const outOfOrder = runs.map((r) => r.outOfOrder.length);
    const waits = runs.map((r) => r.longestWaitMs);
    const perAgent = runs.map((r) => r.apiRequests / nodes);
    const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    rows.push([
      fair ? 'fair queue (kured-ts)' : 'whoever wakes first (kured)',
      `${outOfOrder.reduce((a, b) => a + b, 0)} (per seed ${outOfOrder.join(', ')})`,
      `${shortDuration(mean(waits))} (max ${shortDuration(Math.max(...waits))})`,
      mean(perAgent).toFixed(1),
      String(runs.reduce((a, r) => a + r.violations.length, 0)),
    ]);
  }
  out(
    table(
      `Lock hand-offs in need order (${nodes} nodes, C=1, needs spread over 10 min, ${SEEDS.length} seed(s), virtual time)`,
      [
        'lock',
        'hand-offs out of need order (target 0)',
        'longest wait required → lock (mean over seeds)',
        'API requests per agent',
        'violations',
      ],
      rows,
    ),
  );
  out(
    'Out of need order: a slot went to a node while one whose reboot had been required longer was waiting for ' +
      "it. The queue costs one node list per waiter per hand-off (read from the API server's watch cache), none " +
      'while idle; an older waiter that does not take the slot within 30 s is passed over.\n',
  );
}

async function contentionTable(): Promise<void> {
  const nodes = quick ? 20 : 200;
  const rows: string[][] = [];
  for (const kuredPolling of [false, true]) {
    const r = await sim({
      nodes,
      concurrency: 3,
      podsPerNode: 0,
      pdb: { kind: 'none' },
      bootTimeMs: 1_000,
      kuredPolling,
    });
    rows.push([
      kuredPolling ? 'kured polling model' : 'kured-ts (watch)',
      String(nodes),
      shortDuration(r.rollingMs),
      shortDuration(r.lowerBoundMs),
      String(r.apiRequests),
      (r.apiRequests / nodes).toFixed(0),
      String(r.watches),
      `${(r.wallMs / 1000).toFixed(0)} s`,
    ]);
  }
  out(
    table(
      'Lock contention: every agent needs the lock once, concurrency 3, empty nodes, 1 s boot',
      [
        'agents',
        'nodes',
        'time to hand the lock around once',
        'lower bound',
        'API requests',
        'per node',
        'watches',
        'wall',
      ],
      rows,
    ),
  );
  if (nodes < 200) out(`(${nodes} agents with --quick; the full run uses 200.)\n`);
}

/** The same wave with a fraction of the API's answers replaced by 429 or 500 (virtual time). */
async function chaosRun(nodes: number, method: string | undefined): Promise<SimulationResult> {
  return sim({ nodes, concurrency: 2, podsPerNode: 5 }, (o) => {
    const start = o.startServer;
    o.startServer = async (clock, admission) => {
      const server = (await start(clock, admission)) as FakeApiServer;
      if (method !== 'none') {
        server.chaos({
          fraction: 0.2,
          statuses: [429, 500],
          random: seededRandom(11),
          ...(method === undefined ? {} : { method }),
        });
      }
      return server;
    };
  });
}

async function chaosTable(): Promise<void> {
  const nodes = quick ? 6 : 20;
  const calm = await chaosRun(nodes, 'none');
  const rows: string[][] = [];
  for (const [label, method] of [
    ['every GET (reads)', 'GET'],
    ['every request (reads and writes)', undefined],
  ] as const) {
    const r = await chaosRun(nodes, method);
    rows.push([
      label,
      shortDuration(calm.rollingMs),
      shortDuration(r.rollingMs),
      ratio(r.rollingMs, calm.rollingMs),
      '<= 1.50',
      String(r.rebooted),
      String(r.violations.length),
    ]);
  }
  out(
    table(
      `A wave under API errors: ${nodes} nodes, concurrency 2, 5 pods each; 20% of the answers 429 or 500 (virtual time)`,
      ['errors on', 'wave without', 'wave with', 'ratio', 'target', 'rebooted', 'violations'],
      rows,
    ),
  );
  out(
    'Reads (GET, LIST) are retried inside the call (6 attempts, jittered backoff, Retry-After honoured); a failed write ends the tick, and the next tick comes after the error backoff.\n',
  );
}

async function costTable(): Promise<void> {
  const rows: string[][] = [];
  process.stderr.write('bench: idle agent process\n');
  // The start-up pass runs at once (a few requests); V8's one-off memory-reducing GC of the start-up
  // heap follows about 8 s in (two mark-compacts, ~20 ms of CPU). The idle window starts after both.
  const idleMs = quick ? 15_000 : 60_000;
  const cost = await measureIdleAgent('dist/cli.js', 10_000, idleMs);
  const perHour = (n: number): string => ((n * 3_600_000) / idleMs).toFixed(0);
  if (!cost.ok) rows.push(['idle agent process', `not measured: ${cost.note}`, '-', '-']);
  else
    rows.push(
      [
        'idle agent RSS (node dist/cli.js agent, the esbuild bundle)',
        `${cost.rssMb.toFixed(1)} MB (peak ${cost.peakRssMb.toFixed(1)} MB)`,
        '<= 64 MB',
        'kured (Go): not measured here (no Go toolchain, no registry access)',
      ],
      [
        `idle CPU over ${cost.idleWindowS} s from 10 s after start (utime+stime from /proc, 10 ms ticks; probes answered)`,
        `${cost.idleCpuPct.toFixed(3)} % of a core (start-up, first 10 s: ${cost.startCpuS.toFixed(2)} s)`,
        '<= 0.1 %',
        'before: 0.67 % (prom-client sampled the event loop every 10 ms)',
      ],
      [
        `API requests while idle, with the chart's probes (/readyz and /healthz every ${PROBE_EVERY_MS / 1000} s: ${cost.probes} sent, ${cost.probesOk} answered 200)`,
        `${cost.idleRequests} in ${cost.idleWindowS} s = ${perHour(cost.idleRequests)} per node per hour (${cost.startRequests} at start-up)`,
        '0',
        'before: 360 per node per hour (a GET per /readyz probe)',
      ],
    );
  process.stderr.write('bench: agent process draining 100 pods\n');
  const drain = await measureDrainingAgent('dist/cli.js', 100);
  rows.push(
    drain.ok
      ? [
          `agent RSS through a drain of 100 pods (lock, cordon, ${drain.evicted} evicted, up to its reboot command, ${drain.drainS.toFixed(1)} s)`,
          `peak ${drain.peakRssMb.toFixed(1)} MB`,
          "<= 96 MiB (the chart's memory request; limit 192 MiB)",
          'idle peak above',
        ]
      : ['agent draining 100 pods', `not measured: ${drain.note}`, '-', '-'],
  );
  const idle = await sim({ nodes: 10, needsReboot: 0 }, (o) => {
    o.minDurationMs = 25 * HOUR;
    o.sampleAtMs = [HOUR, 25 * HOUR];
  });
  const [s1, s25] = idle.samples;
  const perNodeHour = s1 && s25 ? (s25.requests - s1.requests) / 10 / 24 : NaN;
  rows.push([
    'API requests per node per hour, no reboot needed (sim, 10 nodes, hours 1-25)',
    perNodeHour.toFixed(2),
    '0',
    '-',
  ]);
  // One node reboots in a 3-node cluster (a single node could not drain: its pods have nowhere to
  // go); the same cluster left idle for as long is subtracted.
  const one = await sim({ nodes: 3, needsReboot: 1 });
  const still = await sim({ nodes: 3, needsReboot: 0 }, (o) => {
    o.minDurationMs = one.makespanMs;
  });
  rows.push([
    'API requests for one full reboot cycle (3-node cluster, one reboots, minus the same cluster idle)',
    String(one.apiRequests - still.apiRequests),
    '-',
    '-',
  ]);
  const wave = await sim({ nodes: 10 });
  rows.push([
    'API requests per node in a 10-node rolling reboot (C=1, incl. waiting)',
    (wave.apiRequests / 10).toFixed(0),
    '-',
    '-',
  ]);
  // The health gate (--max-unhealthy-nodes): one node list (watch cache) per decision that gets past
  // the window and the other blockers, never on an idle tick.
  const gate = { maxUnhealthyNodes: { count: 1 } };
  const idleGated = await sim({ nodes: 10, needsReboot: 0, ...gate }, (o) => {
    o.minDurationMs = 25 * HOUR;
    o.sampleAtMs = [HOUR, 25 * HOUR];
  });
  const [g1, g25] = idleGated.samples;
  rows.push([
    'API requests per node per hour, no reboot needed, with --max-unhealthy-nodes 1 (sim, 10 nodes, hours 1-25)',
    g1 && g25 ? ((g25.requests - g1.requests) / 10 / 24).toFixed(2) : 'NaN',
    '0',
    `without the gate: ${perNodeHour.toFixed(2)}`,
  ]);
  const waveGated = await sim({ nodes: 10, ...gate });
  const lists = waveGated.kubeCalls.listNodes ?? 0;
  rows.push([
    `API requests per node in a 10-node rolling reboot (C=1) with --max-unhealthy-nodes 1 (${lists} node lists, ${(lists / 10).toFixed(1)} per node)`,
    (waveGated.apiRequests / 10).toFixed(0),
    'one list per decision',
    `without the gate: ${(wave.apiRequests / 10).toFixed(0)}`,
  ]);
  const drainMin = 10;
  const blocked = await sim(
    { nodes: 2, needsReboot: 1, podsPerNode: 3, pdb: { kind: 'minAvailable', value: '100%' } },
    (o) => {
      o.agent.blockOnPdb = false;
      o.agent.drainTimeoutMs = drainMin * 60_000;
      o.limitMs = 70_000 + drainMin * 60_000;
    },
  );
  const pods = Math.ceil((2 * 3) / 2);
  rows.push([
    `eviction requests per pod per minute, drain blocked by a PDB (${blocked.evictions.refused} refused in ${drainMin} min, ~${pods} pods)`,
    (blocked.evictions.refused / pods / drainMin).toFixed(1),
    '<= 12 (1 per 5 s retry delay)',
    'kured: a tight loop',
  ]);
  out(table('Agent cost', ['measure', 'value', 'target', 'comparison'], rows));
}

async function memoryTable(): Promise<void> {
  process.stderr.write('bench: memory floors\n');
  const floors = await memoryFloors(process.cwd());
  const base = floors.find((f) => f.probe === 'node')?.rssMb ?? 0;
  const rows = floors.map((f) => [
    f.probe,
    f.loads,
    `${f.rssMb.toFixed(1)} MB`,
    f.probe === 'node' ? '-' : `+${(f.rssMb - base).toFixed(1)} MB`,
  ]);
  out(
    table(
      "Where the idle agent's memory goes: each piece bundled alone, its own process, RSS after 1.5 s",
      ['probe', 'loads', 'RSS', 'over Node alone'],
      rows,
    ),
  );
  out(
    "The pieces share Node's own modules (http, tls, crypto, streams), so their increments overlap and do not " +
      "add up to the agent's RSS. Before this release the agent also loaded client-node's generated API classes " +
      "(+20 MB) and axios (+14 MB); Node's fetch would cost +11 MB.\n",
  );
}

async function scaleTable(): Promise<void> {
  const nodes = quick ? 100 : 1000;
  const rows: string[][] = [];
  for (const concurrency of [1, 10]) {
    const r = await sim({ nodes, concurrency, podsPerNode: 2 }, (o) => {
      o.cluster.replicasPerWorkload = 2;
      o.wallLimitMs = 30 * 60_000;
    });
    rows.push([
      String(nodes),
      String(concurrency),
      `${shortDuration(r.rollingMs)} (${ratio(r.rollingMs, r.lowerBoundMs)})`,
      shortDuration(r.lowerBoundMs),
      (r.apiRequests / nodes).toFixed(0),
      (r.watches / nodes).toFixed(2),
      String(r.maxDown),
      String(r.violations.length),
      `${(r.wallMs / 1000).toFixed(0)} s`,
    ]);
  }
  out(
    table(
      `Scale: a rolling reboot of ${nodes} real agents (2 pods per node, PDB max-unavailable=1)`,
      [
        'nodes',
        'C',
        'rolling reboot (vs lower bound)',
        'lower bound',
        'API requests per node',
        'watches per node',
        'max down',
        'violations',
        'wall',
      ],
      rows,
    ),
  );
}

const TABLES: Record<string, () => Promise<void>> = {
  makespan: makespanTable,
  taint: taintTable,
  churn: churnTable,
  fair: fairTable,
  contention: contentionTable,
  chaos: chaosTable,
  cost: costTable,
  memory: memoryTable,
  scale: scaleTable,
};

const only = [...args]
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
const started = Date.now();
out(`# kured-ts benchmarks${quick ? ' (--quick)' : ''}\n`);
for (const [name, run] of Object.entries(TABLES)) if (only === undefined || only.includes(name)) await run();
out(`(total wall time ${((Date.now() - started) / 1000).toFixed(0)} s)`);
