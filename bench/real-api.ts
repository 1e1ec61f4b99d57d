// `npm run bench:real`: DESIGN §13 measured on a real kube-apiserver. For each size N, a fresh etcd
// and kube-apiserver (the user's envtest binaries: KUBEBUILDER_ASSETS or setup-envtest's store), N
// Node objects of a cloud node's size, and in this one process one kured-ts agent per node (in agent
// worker threads: --workers, by default one per 1,000 nodes) plus the coordinator's two replicas,
// every node needing a reboot from the start. The server's own /metrics
// tell what a hand-off cost; a watch of the lock tells how long it took and in which order.
//   node dist/bench/real-api.js [--nodes 100,1000,5000] [--concurrency 10] [--handoffs 50]
//     [--boot 3s] [--reboot-delay 2s] [--start-spread 60s] [--identity agents|admin] [--max-wall 40m]
//     [--storm WAITERS,EVERY,FOR[,NODES] | --storm off] [--need-survives] [--workers auto|K]
// Each simulated host's need is cleared by its reboot (one cycle per node); --need-survives keeps it
// (every node reboots until quarantined reboot-loop: the rows say so).
// --nodes none runs the storm alone. The storm (default 20,1s,2m,100): real-api-storm.ts.
// --reboot-delay defaults to 2 s. It was set when the coordinator took a used turn back at once:
// on an empty node that write landed between the agent's read and its count of the reboot attempt,
// and the agent then waited a whole --period holding its slot. The coordinator now keeps a used turn
// until the cycle ends; the default stays so that runs remain comparable.
import { availableParallelism } from 'node:os';
import { shortDuration } from '../src/text/duration.js';
import type { WindowCost } from './real-api-metrics.js';
import type { AnswerSize } from './real-api-fleet.js';
import { runSize, type RunResult, type WindowResult } from './real-api-run.js';
import { checkAssets, findAssets } from './real-api-server.js';
import { runStorm, type StormResult } from './real-api-storm.js';
import { table } from './table.js';
import { quantile } from './quantile.js';

function arg(name: string, fallback: string): string {
  const argv = process.argv.slice(2);
  const i = argv.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (i < 0) return fallback;
  const given = argv[i] ?? '';
  return given.includes('=') ? given.slice(given.indexOf('=') + 1) : (argv[i + 1] ?? fallback);
}

/** "3s", "60s", "40m", "1500ms" or plain milliseconds. */
function ms(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text);
  if (!m) throw new Error(`not a duration: ${text}`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] ?? 'ms'] ?? 1;
  return Number(m[1]) * unit;
}

/**
 * The agent worker threads for N nodes: `--workers K`, or "auto": one per 1,000 nodes (at most 8),
 * so that no thread's event loop serves more than 1,000 agents.
 */
function workersFor(given: string, n: number): number {
  if (given === 'auto') return Math.min(8, Math.max(1, Math.ceil(n / 1000)));
  const k = Number(given);
  if (!Number.isInteger(k) || k < 1) throw new Error(`--workers: not a positive whole number: ${given}`);
  return k;
}

function seconds1(s: number | undefined): string {
  return s === undefined ? 'never' : `${s.toFixed(0)} s`;
}

/** "228 KB (9 KB gzip)". */
function kb(size: AnswerSize): string {
  const k = (bytes: number): string =>
    `${(bytes / 1000).toLocaleString('en-US', { maximumFractionDigits: 0 })} KB`;
  return `${k(size.bytes)} (${k(size.gzipBytes)} gzip)`;
}

const out = (text: string): void => {
  process.stdout.write(text + '\n');
};

function seconds(msValue: number): string {
  return Number.isNaN(msValue) ? '-' : `${(msValue / 1000).toFixed(2)} s`;
}

function row(r: RunResult, w: WindowResult | undefined): string[] {
  if (w === undefined)
    return [
      String(r.n),
      String(r.concurrency),
      'not reached',
      ...Array<string>(11).fill('-'),
      `${r.peakRssMb.toFixed(0)} MB`,
    ];
  const h = w.handOffs.length;
  const per = (x: number): number => (h > 0 ? x / h : NaN);
  const latencies = w.handOffs.map((x) => x.latencyMs).sort((a, b) => a - b);
  return [
    String(r.n),
    String(r.concurrency),
    `${w.label} (${shortDuration(w.cost.seconds * 1000)})${saturation(w) === undefined ? '' : ', saturated'}`,
    String(h),
    per(w.cost.requests).toFixed(1),
    (per(w.cost.bytes) / 1e6).toFixed(3),
    per(w.cost.cpuSeconds).toFixed(3),
    (w.cost.requests / r.n).toFixed(2),
    (w.cost.bytes / r.n / 1e3).toFixed(1),
    String(w.cost.watchesOpen),
    `${seconds(quantile(latencies, 0.5))} / ${seconds(quantile(latencies, 0.99))}`,
    w.behindLapsed > 0
      ? `${w.outOfOrder.length} (${w.behindLapsed} behind a lapsed turn)`
      : String(w.outOfOrder.length),
    String(w.maxHolders),
    String(w.violations.length),
    `${w.rssMb.toFixed(0)} MB`,
  ];
}

const HEADER = [
  'N',
  'C',
  'window',
  'hand-offs',
  'requests/hand-off',
  'response MB/hand-off',
  'CPU s/hand-off',
  'requests/node',
  'response KB/node',
  'watches open',
  'hand-off p50 / p99',
  'out of order',
  'max holders',
  'violations',
  'RSS',
];

/** Requests per node and per hand-off by verb and resource, one column pair per size and window. */
function byKindTable(results: readonly RunResult[]): string {
  const windows = results.flatMap((r) => [
    { r, w: r.wave, name: `N=${r.n} from the start` },
    { r, w: r.steady, name: `N=${r.n} steady` },
  ]);
  const kinds = new Set<string>();
  for (const { w } of windows) for (const k of w?.cost.byKind.keys() ?? []) kinds.add(k);
  const rows = [...kinds].sort().map((k) => [
    k,
    ...windows.map(({ r, w }) => {
      const h = w?.handOffs.length ?? 0;
      const v = w?.cost.byKind.get(k) ?? 0;
      const kb = (w?.cost.bytesByKind.get(k) ?? 0) / 1e3;
      return h > 0 ? `${(v / h).toFixed(2)} (${(v / r.n).toFixed(2)}); ${(kb / h).toFixed(1)} KB` : '-';
    }),
  ]);
  return table(
    "Requests per hand-off (per node) by verb and resource, and their response KB per hand-off (the server's counters; its self-requests and the benchmark's own taken out; LIST nodes is the fleet gates' reads)",
    ['request', ...windows.map((x) => x.name)],
    rows,
  );
}

/**
 * The p99 lateness of the benchmark's timers past which a window measures the benchmark: its agents'
 * deadlines and waits ran that much late, whatever the API server did.
 */
const LATE_LOOP_MS = 250;

/** The cores of the machine (the share each process had of them says who was the bottleneck). */
const CORES = availableParallelism();

/**
 * Was the benchmark itself the bottleneck in `w`: one of its threads' event loops late (the agents'
 * deadlines and waits ran late whatever the API server did), its threads busy on as many cores as
 * they may use, or the machine's cores nearly all taken by it, kube-apiserver and etcd?
 */
export function saturation(w: Pick<WindowResult, 'cost' | 'loopLateMs' | 'threads'>): string | undefined {
  const c = w.cost;
  const per = (cpu: number): number => cpu / Math.max(1, c.seconds);
  const bench = per(c.benchCpuSeconds);
  const all = bench + per(c.apiserverCpuSeconds) + per(c.etcdCpuSeconds);
  const usable = Math.min(w.threads, CORES);
  if (bench >= 0.85 * usable)
    return `the benchmark process used ${bench.toFixed(2)} of the ${usable} core${usable === 1 ? '' : 's'} its ${w.threads} thread${w.threads === 1 ? '' : 's'} may use`;
  if (w.loopLateMs.p99 >= LATE_LOOP_MS)
    return `the benchmark's event loops ran up to ${(w.loopLateMs.max / 1000).toFixed(1)} s late (p99 ${w.loopLateMs.p99.toFixed(0)} ms)`;
  if (all >= 0.85 * CORES) return `the three processes used ${all.toFixed(2)} of ${CORES} cores`;
  return undefined;
}

/** The server's other counters in a window, per hand-off. */
function windowNotes(w: WindowResult | undefined): string {
  const h = w?.handOffs.length ?? 0;
  if (w === undefined || h === 0) return 'not reached';
  const c = w.cost;
  const per = (cpu: number): string => (cpu / Math.max(1, c.seconds)).toFixed(2);
  const saturated = saturation(w);
  return (
    `CPU (cores) benchmark ${per(c.benchCpuSeconds)}, kube-apiserver ${per(c.apiserverCpuSeconds)}, etcd ${per(c.etcdCpuSeconds)} of ${CORES}, ` +
    `its event loop late p99/max ${w.loopLateMs.p99.toFixed(0)}/${w.loopLateMs.max.toFixed(0)} ms` +
    (saturated === undefined
      ? ' (not saturated); '
      : ` (SATURATED: ${saturated}; the row measures the machine, not kured-ts); `) +
    `etcd CPU ${(c.etcdCpuSeconds / h).toFixed(3)} s, watch event bytes ${(c.watchBytes / h / 1e6).toFixed(3)} MB, ` +
    `objects read by LISTs ${(c.listRead / h).toFixed(0)} (returned ${(c.listReturned / h).toFixed(1)}) per hand-off; ` +
    `${c.rejected} requests turned away (429) by API Priority and Fairness`
  );
}

function notes(r: RunResult): string {
  const q = r.queueEvents;
  const loop = r.loopDelayMs;
  const lines = [
    `N=${r.n}: set-up ${r.setUpS.toFixed(0)} s (nodes of ${r.nodeBytes} bytes as JSON), run ${r.runS.toFixed(0)} s (${r.stoppedBy}); ` +
      `${r.agentsStarted} agents started, ${r.reboots} reboots, at most ${r.maxDown} down; ` +
      `coordinators: turns given ${r.turns.granted}, lapsed ${r.turns.lapsed}; on the Nodes: turns ${q.turns}, taken back before use ${q.withdrawn}, ` +
      `waiting agents reporting 'pending' again ${q.pendingAgain}`,
    `  from the agents' start: the first turn on a Node after ${seconds1(r.firstTurnS)}, the first slot taken after ${seconds1(r.firstSlotS)}`,
    `  kube-apiserver: idle CPU ${r.idleCpuPerSecond.toFixed(3)} s/s (taken out), RSS ${r.apiserverRssMb.toFixed(0)} MB at the end`,
    `  from the start: ${windowNotes(r.wave)}`,
    `  steady: ${windowNotes(r.steady)}`,
    `  bench process: agents in ${r.workers} worker thread${r.workers === 1 ? '' : 's'}; main thread (coordinators, observer, hosts) event-loop delay p50/p99/max ${loop.p50.toFixed(0)}/${loop.p99.toFixed(0)}/${loop.max.toFixed(0)} ms, ` +
      `peak RSS ${r.peakRssMb.toFixed(0)} MB, peak open files ${r.peakFds} (limit soft/hard ${r.fdLimit})`,
    `  the agents' fleet census (every Node's row): ${r.census.toString()}`,
    `  answers at the start: the census (every Node's row, a Table) ${kb(r.answers.census)}; the list of every Node ${kb(r.answers.list)}`,
  ];
  const violations = new Set([...(r.wave?.violations ?? []), ...(r.steady?.violations ?? [])]);
  for (const v of [...violations].slice(0, 5)) lines.push(`  violation: ${v}`);
  for (const line of r.stuck.slice(0, 60)) lines.push(`  ${line}`);
  lines.push(
    `  the coordinators' first lines:`,
    ...r.problems.coordinatorStory.slice(0, 25).map((l) => `    ${l}`),
  );
  const order = [...(r.wave?.outOfOrder.slice(0, 3) ?? []), ...(r.steady?.outOfOrder.slice(0, 3) ?? [])];
  for (const x of order) lines.push(`  out of order: ${x}`);
  lines.push(`  warnings and errors logged: ${r.problems.total} (${r.problems.kinds.size} kinds)`);
  const kinds = [...r.problems.kinds.entries()].sort((a, b) => b[1].count - a[1].count).slice(0, 8);
  for (const [kind, { count, first }] of kinds) lines.push(`  ${count}x ${kind}\n      first: ${first}`);
  return lines.join('\n');
}

/** The storm's rows: the agents' requests per minute by kind, quiet and under forged turns. */
function stormTable(r: StormResult): string {
  const o = r.options;
  const kinds = ['LIST nodes', 'GET leases', 'GET daemonsets', 'PATCH nodes', 'WATCH nodes'];
  const perMin = (c: WindowCost, k?: string): string => {
    const v = k === undefined ? c.requests : (c.byKind.get(k) ?? 0);
    return `${v} (${((v * 60) / c.seconds).toFixed(1)}/min)`;
  };
  const rows = [
    ['quiet: the waiters alone', r.quiet],
    [`storm: ${r.turnsWritten} turns forged (every ${o.everyMs / 1000} s on all ${o.waiters})`, r.storm],
  ] as const;
  return (
    table(
      `Forged-turn storm: ${o.n} nodes, one NotReady (no room at --concurrency 1), ${o.waiters} waiting agents as ${o.identity === 'agents' ? "the chart's ServiceAccount" : 'system:masters'}, windows of ${o.forMs / 1000} s; the agents' requests (the thief's writes and the benchmark's reads taken out). Target (issue 55): LIST nodes at most 10 per minute in all under the storm`,
      ['window', ...kinds, 'all requests', 'response MB'],
      rows.map(([label, c]) => [
        label,
        ...kinds.map((k) => perMin(c, k)),
        perMin(c),
        (c.bytes / 1e6).toFixed(2),
      ]),
    ) +
    `\nReboots while the node was NotReady: ${r.rebootsWhileDown} (must be 0). Node back Ready: a waiter held the slot ${r.takenAfterReturnMs === undefined ? 'not within 60 s' : `${(r.takenAfterReturnMs / 1000).toFixed(1)} s later`}. ` +
    `Thief: ${r.leaseWrites} Lease writes. Warnings and errors logged: ${r.problems.total}.`
  );
}

function stormArg(text: string): { waiters: number; everyMs: number; forMs: number; n: number } | undefined {
  if (text === 'off') return undefined;
  const [waiters = '20', every = '1s', during = '2m', n = '100'] = text.split(',');
  return { waiters: Number(waiters), everyMs: ms(every), forMs: ms(during), n: Number(n) };
}

for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    process.stderr.write(`bench:real: ${signal}, stopping the servers\n`);
    process.exit(130);
  });

/** The tables over every size, and how the figures are counted. */
function printSummary(results: readonly RunResult[]): void {
  out(
    table(
      'From the start: the whole wave when it has at most 2x --handoffs hand-offs, else the first --handoffs',
      HEADER,
      results.map((r) => row(r, r.wave)),
    ),
  );
  out(
    table(
      'Steady: from the moment every agent has queued (or 98% and no newcomer for a minute) to --handoffs hand-offs later',
      HEADER,
      results.map((r) => row(r, r.steady)),
    ),
  );
  out(byKindTable(results));
  out(
    'Requests: apiserver_request_total (a watch counted when it starts), less apiserver_selfrequest_total and the ' +
      "benchmark's own (node set-up, the simulated kubelets' /status writes, its two watches). Response bytes: " +
      'apiserver_response_sizes_sum plus apiserver_watch_events_sizes_sum (every event to every watcher, the ' +
      "server's own Node informer included), less the benchmark's own. CPU: kube-apiserver's process_cpu_seconds_total " +
      'less its idle rate before the agents started. Hand-off: a slot released until the next node is named by ' +
      'the lock (from when that node began waiting, if later). Out of order: a slot taken while a node waiting ' +
      'since earlier (status annotation requiredSince) held none.',
  );
}

async function main(): Promise<void> {
  const assets = findAssets(process.env);
  const check = checkAssets(assets);
  if (check.skip !== undefined || assets === undefined) {
    out(
      `real kube-apiserver benchmark skipped: ${check.skip ?? 'no assets'}; get the envtest binaries with "go run sigs.k8s.io/controller-runtime/tools/setup-envtest@latest use 1.32 -p path" and set KUBEBUILDER_ASSETS to the directory it prints`,
    );
    return;
  }
  const nodesArg = arg('nodes', '100,1000,5000');
  const sizes = nodesArg === 'none' ? [] : nodesArg.split(',').map(Number);
  const storm = stormArg(arg('storm', '20,1s,2m,100'));
  const concurrency = Number(arg('concurrency', '10'));
  const handoffs = Number(arg('handoffs', '50'));
  const identity = arg('identity', 'agents') === 'admin' ? 'admin' : 'agents';
  const common = {
    concurrency,
    handoffs,
    bootMs: ms(arg('boot', '3s')),
    rebootDelayMs: ms(arg('reboot-delay', '2s')),
    startSpreadMs: ms(arg('start-spread', '60s')),
    identity,
    workersArg: arg('workers', 'auto'),
    assets,
    maxWallMs: ms(arg('max-wall', '40m')),
    needSurvives: process.argv.includes('--need-survives'),
    progress: (line: string) => process.stderr.write(`bench:real ${line}\n`),
  } as const;
  const started = Date.now();
  out(`# kured-ts on a real kube-apiserver ${check.version ?? ''} (${assets})\n`);
  out(
    `Agents act as ${identity === 'agents' ? `the chart's ServiceAccount (impersonated, with their node claim) over one shared set of connections per agent worker` : 'system:masters over one shared set of connections per agent worker'}; ` +
      `the coordinators each on their own connections. Boot ${common.bootMs / 1000} s, --reboot-delay ${common.rebootDelayMs / 1000} s, agents started over ${common.startSpreadMs / 1000} s, every node needs a reboot${common.needSurvives ? ', and the need survives every reboot (--need-survives: the reboot-loop case)' : ', cleared by its reboot'}.\n`,
  );
  const results: RunResult[] = [];
  for (const n of sizes) {
    const r = await runSize({ ...common, n, workers: workersFor(common.workersArg, n) });
    results.push(r);
    out(
      table(`N=${n} (wall ${((Date.now() - started) / 1000).toFixed(0)} s so far)`, HEADER, [
        row(r, r.wave),
        row(r, r.steady),
      ]),
    );
    out(notes(r) + '\n');
    out(byKindTable([r]));
  }
  if (results.length > 0) printSummary(results);
  if (storm !== undefined) {
    const r = await runStorm({ ...storm, identity, assets, progress: common.progress });
    out(stormTable(r));
    for (const [kind, { count, first }] of [...r.problems.kinds.entries()].slice(0, 5))
      out(`  ${count}x ${kind}\n      first: ${first}`);
  }
  out(`(total wall time ${((Date.now() - started) / 1000).toFixed(0)} s)`);
}

await main();
