// `npm run bench`: what DESIGN promises, measured. Prints markdown tables.
//   node dist/bench/bench.js [--quick] [--full] [--only=makespan,taint,churn,fair,contention,chaos,cost,requests,memory,scale,cel]
//   --quick  small sizes only (a smoke run);  --full  also run every real agent for 200 nodes
import { runRollingModel } from './rolling-model.js';
import { type SimulationResult } from '../src/sim/simulation.js';
import { PROBE_EVERY_MS, measureDrainingAgent, measureIdleAgent } from './agent-cost.js';
import { chartResources, coordinatorCostRows } from './coordinator-cost.js';
import { memoryFloors } from './memory-floors.js';
import { shortDuration } from '../src/text/duration.js';
import { ratio, table } from './table.js';
import type { FakeApiServer } from '../src/sim/fake-api-server.js';
import { seededRandom } from '../src/sim/random.js';
import { unqueuedAgentFactory } from '../src/sim/sim-agent.js';

import { HOUR, full, out, quick, sim } from './common.js';
import { churnTable, fairTable, taintTable } from './taint.js';
import { requestsTable } from './requests.js';
import { celBudgetTable } from './cel-budget.js';
import { costTotal } from '../src/sim/api-cost.js';

const args = new Set(process.argv.slice(2));

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

async function contentionTable(): Promise<void> {
  const nodes = quick ? 20 : 200;
  const rows: string[][] = [];
  const runs: [string, boolean, boolean][] = [
    ['kured-ts (coordinated queue)', false, true],
    ['kured-ts (watch, no queue)', false, false],
    ['kured polling model', true, false],
  ];
  for (const [name, kuredPolling, fair] of runs) {
    const over = { nodes, concurrency: 3, podsPerNode: 0, bootTimeMs: 1_000, kuredPolling };
    const r = await sim({ ...over, pdb: { kind: 'none' } }, (o) => {
      if (!fair) {
        o.createAgent = unqueuedAgentFactory;
        o.coordinators = 0;
      }
    });
    rows.push([
      name,
      String(nodes),
      shortDuration(r.rollingMs),
      shortDuration(r.lowerBoundMs),
      String(r.apiRequests),
      (r.apiRequests / nodes).toFixed(0),
      (r.responseBytes / nodes / 1024).toFixed(0),
      String(r.watches),
      String(r.outOfOrder.length),
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
        'response KB per node',
        'watches',
        'out of need order',
        'wall',
      ],
      rows,
    ),
  );
  out(
    'The coordinated queue: the coordinator names the next node for each freed slot and only that node wakes ' +
      '(each waiter follows its own Node); without a queue every waiter follows the lock and a freed slot wakes ' +
      'them all. Before the coordinator (2026-11-24) the fair queue had every woken waiter list the nodes: 236 ' +
      'requests per node and 29m36s here.\n',
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
  const perHour = (n: number): string => ((n * 3_600_000) / idleMs).toFixed(0);
  // --period 1h as in production, and 5s: an idle pass every few seconds must cost no request either
  for (const period of ['1h', '5s']) {
    const cost = await measureIdleAgent('dist/cli.js', 10_000, idleMs, period);
    if (!cost.ok)
      rows.push([`idle agent process, --period ${period}`, `not measured: ${cost.note}`, '-', '-']);
    else
      rows.push(
        [
          `idle agent RSS, --period ${period} (node dist/cli.js agent, the esbuild bundle)`,
          `${cost.rssMb.toFixed(1)} MB (peak ${cost.peakRssMb.toFixed(1)} MB)`,
          '<= 64 MB',
          'kured (Go): not measured here (no Go toolchain, no registry access)',
        ],
        [
          `idle CPU, --period ${period}, over ${cost.idleWindowS} s from 10 s after start (utime+stime from /proc, 10 ms ticks; probes answered)`,
          `${cost.idleCpuPct.toFixed(3)} % of a core (start-up, first 10 s: ${cost.startCpuS.toFixed(2)} s)`,
          '<= 0.1 %',
          'before: 0.67 % (prom-client sampled the event loop every 10 ms); 0.22-0.25 % at --period 5s before issue 42',
        ],
        [
          `API requests while idle, --period ${period}, with the chart's probes (/readyz and /healthz every ${PROBE_EVERY_MS / 1000} s: ${cost.probes} sent, ${cost.probesOk} answered 200)`,
          `${cost.idleRequests} in ${cost.idleWindowS} s = ${perHour(cost.idleRequests)} per node per hour (${cost.startRequests} at start-up: its Node's GET and watch)`,
          '0',
          'before: 360 per node per hour (a GET per /readyz probe); 720 at --period 5s before issue 42 (a GET of its Node per period)',
        ],
      );
  }
  process.stderr.write('bench: agent process draining 100 pods\n');
  const drain = await measureDrainingAgent('dist/cli.js', 100);
  rows.push(
    drain.ok
      ? [
          `agent RSS through a drain of 100 pods (lock, cordon, ${drain.evicted} evicted, up to its reboot command, ${drain.drainS.toFixed(1)} s)`,
          `peak ${drain.peakRssMb.toFixed(1)} MB`,
          `<= ${String(chartResources().requests.memory)} (the chart's memory request; limit ${String(chartResources().limits.memory)})`,
          'idle peak above',
        ]
      : ['agent draining 100 pods', `not measured: ${drain.note}`, '-', '-'],
  );
  rows.push(...(await coordinatorCostRows(quick)));
  const idle = await sim({ nodes: 10, needsReboot: 0 }, (o) => {
    o.minDurationMs = 25 * HOUR;
    o.sampleAtMs = [HOUR, 25 * HOUR];
  });
  const [s1, s25] = idle.samples;
  const perNodeHour = s1 && s25 ? (s25.requests - s1.requests) / 10 / 24 : NaN;
  const agentsIdle = costTotal(idle.cost.agents).requests / 10 / 25;
  rows.push([
    "API requests per node per hour, no reboot needed (sim, 10 nodes, 25 h): the agents' (start-up and their Node's watch, renewed every 4-8 h)",
    agentsIdle.toFixed(2),
    '0 per period',
    `everything, hours 1-25: ${perNodeHour.toFixed(2)} (the coordinator's Lease, renewed every 10 s by the leader and read by the standby)`,
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
    "API requests per node per hour, no reboot needed, with --max-unhealthy-nodes 1 (sim, 10 nodes, 25 h): the agents'",
    (costTotal(idleGated.cost.agents).requests / 10 / 25).toFixed(2),
    '0 per period',
    `without the gate: ${agentsIdle.toFixed(2)}; everything, hours 1-25: ${g1 && g25 ? ((g25.requests - g1.requests) / 10 / 24).toFixed(2) : 'NaN'}`,
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

/** One row of the scale table: a rolling reboot of `nodes` real agents, every node needing it at t=0. */
async function scaleRow(nodes: number, concurrency: number, queued: boolean): Promise<string[]> {
  const r = await sim({ nodes, concurrency, podsPerNode: 2 }, (o) => {
    o.cluster.replicasPerWorkload = 2;
    o.wallLimitMs = 30 * 60_000;
    if (!queued) {
      o.createAgent = unqueuedAgentFactory;
      o.coordinators = 0;
    }
  });
  return [
    queued ? 'coordinated queue' : 'no queue (kured)',
    String(nodes),
    String(concurrency),
    `${shortDuration(r.rollingMs)} (${ratio(r.rollingMs, r.lowerBoundMs)})`,
    shortDuration(r.lowerBoundMs),
    `${r.rebooted}/${r.needed}`,
    (r.apiRequests / nodes).toFixed(0),
    (r.responseBytes / nodes / 1024).toFixed(0),
    (r.watchBytes / nodes / 1024).toFixed(0),
    (r.watches / nodes).toFixed(2),
    String(r.outOfOrder.length),
    String(r.maxDown),
    String(r.violations.length),
    `${(r.wallMs / 1000).toFixed(0)} s`,
  ];
}

async function scaleTable(): Promise<void> {
  const big = quick ? 200 : 1000;
  const rows: string[][] = [];
  const runs: [number, number, boolean][] = [
    [100, 10, true],
    [big, 10, true],
    [big, 10, false],
  ];
  if (full) runs.push([big, 1, true]);
  for (const [nodes, concurrency, queued] of runs) rows.push(await scaleRow(nodes, concurrency, queued));
  out(
    table(
      'Scale: a rolling reboot of real agents, every node needing it at t=0 (2 pods per node, PDB max-unavailable=1)',
      [
        'lock queue',
        'nodes',
        'C',
        'rolling reboot (vs lower bound)',
        'lower bound',
        'rebooted',
        'API requests per node',
        'response KB per node',
        'of which watch events',
        'watches per node',
        'out of need order',
        'max down',
        'violations',
        'wall',
      ],
      rows,
    ),
  );
  out(
    'Response bytes: every answer the fake API server serialized plus every watch event delivered, as a real ' +
      "API server would stream it. The simulated workloads' PodDisruptionBudgets all live in one namespace, so " +
      "the PDB pre-flight (a list of the PDBs of its pods' namespaces) is the one read whose size grows with " +
      'the fleet here; in clusters whose namespaces do not grow with the node count it does not.\n',
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
  requests: requestsTable,
  memory: memoryTable,
  scale: scaleTable,
  cel: celBudgetTable,
};

const only = [...args]
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
const started = Date.now();
out(`# kured-ts benchmarks${quick ? ' (--quick)' : ''}\n`);
for (const [name, run] of Object.entries(TABLES)) if (only === undefined || only.includes(name)) await run();
out(`(total wall time ${((Date.now() - started) / 1000).toFixed(0)} s)`);
