// One size of `npm run bench:real`: a fresh etcd and kube-apiserver, N nodes, N agents and two
// coordinators, every node needing a reboot from the start; the server's counters read at the
// start, when every agent has queued, and at the ends of the two measured windows.
import { readdirSync, readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { CensusTimings } from './census-timing.js';
import { LoopLag } from './loop-lag.js';
import { AdminClient } from './real-api-admin.js';
import { KuredFleet, Problems } from './real-api-agents.js';
import { ADVICE_ANNOTATION, coordinatorLeaseName } from '../src/queue/coordinator-lease.js';
import { DS_NAME, NS, answerSizes, nodeName, setUpCluster, type AnswerSize } from './real-api-fleet.js';
import { scrape, windowCost, type Snapshot, type WindowCost } from './real-api-metrics.js';
import { Observer, type HandOff, type QueueEvents } from './real-api-observer.js';
import { startRealApiServer } from './real-api-server.js';

export interface RunOptions {
  n: number;
  concurrency: number;
  /** Hand-offs measured (from the start when the whole wave is not measured; in the steady window). */
  handoffs: number;
  bootMs: number;
  /** The agents' --reboot-delay. */
  rebootDelayMs: number;
  /** The need survives every reboot (--need-survives): the reboot-loop case, as its own row. */
  needSurvives?: boolean;
  /** The agents start spread over this long (each agent's minute sentinel check notices the need). */
  startSpreadMs: number;
  identity: 'agents' | 'admin';
  /** Agent worker threads (bench/real-api-agent-worker.ts). */
  workers: number;
  assets: string;
  /** Give up after this long (the windows not reached are reported as such). */
  maxWallMs: number;
  /** Progress lines (stderr). */
  progress: (line: string) => void;
}

/** One measured window. */
export interface WindowResult {
  label: string;
  cost: WindowCost;
  handOffs: HandOff[];
  outOfOrder: string[];
  /** Of those, hand-offs that passed over a node whose turn had lapsed (queued last by design). */
  behindLapsed: number;
  maxHolders: number;
  violations: string[];
  rssMb: number;
  /** How late this process's event loops ran in the window (its timers, ms; every thread's): p99 and worst. */
  loopLateMs: { p99: number; max: number };
  /** The benchmark's threads: the agent workers and the main thread. */
  threads: number;
}

export interface RunResult {
  n: number;
  concurrency: number;
  /** 'whole wave' or 'first H hand-offs', from the start; undefined when not reached. */
  wave: WindowResult | undefined;
  /** From every agent queued to H hand-offs later; undefined when not reached. */
  steady: WindowResult | undefined;
  /** Agent worker threads the agents ran in. */
  workers: number;
  /** Seconds from the agents' start to the first turn on a Node and to the first slot taken. */
  firstTurnS: number | undefined;
  firstSlotS: number | undefined;
  /** The census's answer and the whole Node list, as sent at the start (plain and gzip). */
  answers: { census: AnswerSize; list: AnswerSize };
  nodeBytes: number;
  setUpS: number;
  runS: number;
  idleCpuPerSecond: number;
  apiserverRssMb: number;
  peakRssMb: number;
  /** This process's event-loop delay over the run (ms): how late its timers and I/O callbacks ran. */
  loopDelayMs: { p50: number; p99: number; max: number };
  /** The agents' fleet census over the run: its latency and the reads past their deadline. */
  census: CensusTimings;
  peakFds: number;
  fdLimit: string;
  reboots: number;
  maxDown: number;
  /** Turns seen on the Nodes, taken back before use, and waiting agents reporting 'pending' again. */
  queueEvents: QueueEvents;
  agentsStarted: number;
  turns: { granted: number; lapsed: number };
  problems: Problems;
  stoppedBy: string;
  /** Nodes holding a slot for over a minute when the run ended, with their agents' last lines. */
  stuck: string[];
}

/** The open-file limits of this process (soft / hard), as /proc/self/limits says. */
function fdLimit(): string {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'));
  const [soft, hard] = line?.split(/\s{2,}/).slice(1, 3) ?? [];
  return `${soft ?? '?'} / ${hard ?? '?'}`;
}

function openFds(): number {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return 0;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Marks {
  start: Snapshot;
  settled?: Snapshot;
  /** How many agents had queued when the steady window began. */
  queuedAtSettle?: number;
  waveEnd?: Snapshot;
  steadyEnd?: Snapshot;
}

/** The run's state as the wait loop sees it. */
class Watcher {
  peakRssMb = 0;
  peakFds = 0;
  private lastProgress = 0;
  /** The coordinator's advice on its Lease as last read (why no waiter may go, when none may). */
  private advice = '';

  private readonly observer: Observer;
  private readonly fleet: KuredFleet;
  private readonly problems: Problems;
  private readonly admin: AdminClient;

  constructor(
    private readonly o: RunOptions,
    run: { observer: Observer; fleet: KuredFleet; problems: Problems; admin: AdminClient },
  ) {
    ({ observer: this.observer, fleet: this.fleet, problems: this.problems, admin: this.admin } = run);
  }

  /** Reads the coordinator's advice (one GET of its Lease, the benchmark's own request) for the next progress line. */
  private readAdvice(): void {
    const path = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/${coordinatorLeaseName(DS_NAME)}`;
    this.admin
      .json<{ metadata?: { annotations?: Record<string, string> } }>({ method: 'GET', path }, [404])
      .then((lease) => {
        this.advice =
          lease === undefined
            ? '(no Lease yet)'
            : (lease.metadata?.annotations?.[ADVICE_ANNOTATION] ?? '(no advice)');
      })
      .catch((err: unknown) => {
        this.advice = `(lease not read: ${String(err).slice(0, 80)})`;
      });
  }

  /** The most frequent kind of warning so far, shortened. */
  private topWarning(): string {
    let top: [string, number] | undefined;
    for (const [kind, { count }] of this.problems.kinds)
      if (top === undefined || count > top[1]) top = [kind, count];
    return top === undefined ? '' : ` (most: ${top[1]}x ${top[0].slice(0, 100)})`;
  }

  sample(t0: number): void {
    this.peakRssMb = Math.max(this.peakRssMb, process.memoryUsage.rss() / 1e6);
    const now = Date.now();
    if (now - this.lastProgress < 15_000) return;
    this.lastProgress = now;
    this.peakFds = Math.max(this.peakFds, openFds());
    const { observer: ob, fleet } = this;
    this.o.progress(
      `N=${this.o.n} t=${((now - t0) / 1000).toFixed(0)}s agents started ${fleet.started}, queued ${ob.queued.size}, ` +
        `waiting ${ob.waiting()}, holders ${ob.holders.size}, hand-offs ${ob.handOffs.length}, reboots ${fleet.reboots}, ` +
        `first cycles done ${ob.cycled.size}, warnings ${this.problems.total}${this.topWarning()}, RSS ${this.peakRssMb.toFixed(0)} MB; ` +
        `coordinator's advice: ${this.advice.slice(0, 300)}`,
    );
    this.readAdvice();
  }
}

function windowOf(
  label: string,
  from: Snapshot,
  to: Snapshot | undefined,
  ctx: { observer: Observer; fleet: KuredFleet; idle: number; rssMb: number; lag: LoopLag; threads: number },
): WindowResult | undefined {
  if (to === undefined) return undefined;
  const inside = (at: number): boolean => at > from.atMs && at <= to.atMs;
  return {
    label,
    cost: windowCost(from, to, ctx.idle),
    loopLateMs: ctx.lag.within(from.atMs, to.atMs),
    threads: ctx.threads,
    handOffs: ctx.observer.handOffs.filter((h) => inside(h.atMs)),
    outOfOrder: ctx.observer.outOfOrder.filter((x) => inside(x.atMs)).map((x) => x.detail),
    behindLapsed: ctx.observer.outOfOrder.filter((x) => inside(x.atMs) && x.lapsed).length,
    maxHolders: ctx.observer.maxHolders,
    violations: [...ctx.observer.violations, ...ctx.fleet.violations],
    rssMb: ctx.rssMb,
  };
}

/** Runs one size and measures it; the server is stopped (and its directory removed) at the end. */
export async function runSize(o: RunOptions): Promise<RunResult> {
  const began = Date.now();
  const server = await startRealApiServer(o.assets);
  const admin = new AdminClient(server.url, server.token, server.ca);
  const problems = new Problems();
  const stop = new AbortController();
  const observer = new Observer(admin, o.concurrency, (m) => {
    problems.keep('bench', 'warn', m);
  });
  const lag = new LoopLag();
  const fleet = new KuredFleet({ ...o, kubeconfig: server.kubeconfig, admin, observer, problems, lag });
  try {
    o.progress(`N=${o.n}: kube-apiserver up at ${server.url}; creating ${o.n} nodes`);
    const nodeBytes = await setUpCluster(admin, o.n, () => new Date());
    const answers = await answerSizes(admin);
    const following = observer.start(stop.signal);
    while (!observer.ready) await sleep(100);
    const idleFrom = await scrape(admin, server.etcdPid);
    await sleep(10_000);
    const start = await scrape(admin, server.etcdPid);
    const idle = (start.cpuSeconds - idleFrom.cpuSeconds) / ((start.atMs - idleFrom.atMs) / 1000);
    const setUpS = (Date.now() - began) / 1000;
    o.progress(
      `N=${o.n}: ${o.n} nodes of ${nodeBytes} bytes in ${setUpS.toFixed(0)} s; idle CPU ${idle.toFixed(3)}/s; starting`,
    );
    fleet.startCoordinators();
    for (let i = 0; i < o.n; i++)
      fleet.later((o.startSpreadMs * i) / o.n, () => {
        fleet.startAgent(i);
      });
    const watcher = new Watcher(o, { observer, fleet, problems, admin });
    const loop = monitorEventLoopDelay({ resolution: 20 });
    loop.enable();
    lag.start();
    const marks = await measure(o, { observer, admin, etcdPid: server.etcdPid, start, watcher });
    const runS = (Date.now() - start.atMs) / 1000;
    loop.disable();
    lag.stop();
    const loopDelayMs = {
      p50: loop.percentile(50) / 1e6,
      p99: loop.percentile(99) / 1e6,
      max: loop.max / 1e6,
    };
    const stuck = await stuckStories(o.n, observer, fleet);
    fleet.stop();
    stop.abort();
    await following;
    const ctx = { observer, fleet, idle, rssMb: watcher.peakRssMb, lag, threads: o.workers + 1 };
    const whole = o.n - o.concurrency <= 2 * o.handoffs;
    return {
      n: o.n,
      concurrency: o.concurrency,
      wave: windowOf(whole ? 'whole wave' : `first ${o.handoffs} hand-offs`, start, marks.waveEnd, ctx),
      steady:
        marks.settled &&
        windowOf(
          `${o.handoffs} hand-offs, ${marks.queuedAtSettle === o.n ? 'all' : marks.queuedAtSettle} queued`,
          marks.settled,
          marks.steadyEnd,
          ctx,
        ),
      workers: o.workers,
      firstTurnS: secondsSince(start.atMs, observer.firstTurnAtMs),
      firstSlotS: secondsSince(start.atMs, observer.firstSlotAtMs),
      answers,
      nodeBytes,
      setUpS,
      runS,
      idleCpuPerSecond: idle,
      apiserverRssMb: (marks.steadyEnd ?? marks.waveEnd ?? start).rssBytes / 1e6,
      peakRssMb: watcher.peakRssMb,
      loopDelayMs,
      census: fleet.census,
      peakFds: watcher.peakFds,
      fdLimit: fdLimit(),
      reboots: fleet.reboots,
      maxDown: fleet.maxDown,
      queueEvents: { ...observer.queueEvents },
      agentsStarted: fleet.started,
      turns: fleet.turns(),
      problems,
      stuck,
      stoppedBy: stoppedBy(marks, o, observer.cycled.size >= o.n),
    };
  } finally {
    fleet.stop();
    stop.abort();
    admin.close();
    await server.stop();
  }
}

/** Nodes holding a slot for over a minute, and (three of) those never queued, with their agents' last lines. */
async function stuckStories(n: number, observer: Observer, fleet: KuredFleet): Promise<string[]> {
  const stuck: string[] = [];
  const story = async (i: number, what: string): Promise<void> => {
    stuck.push(
      `${nodeName(i)} ${what}; its agent's last lines:`,
      ...(await fleet.lastLines(i)).map((l) => `    ${l}`),
    );
  };
  const neverQueued: number[] = [];
  for (let i = 0; i < n; i++) {
    const since = observer.heldSince.get(nodeName(i));
    if (since !== undefined && Date.now() - since > 60_000)
      await story(i, `has held a slot for ${((Date.now() - since) / 1000).toFixed(0)} s`);
    if (!observer.queued.has(nodeName(i))) neverQueued.push(i);
  }
  for (const i of neverQueued.slice(0, 3)) await story(i, `never queued (one of ${neverQueued.length})`);
  return stuck;
}

function secondsSince(fromMs: number, atMs: number | undefined): number | undefined {
  return atMs === undefined ? undefined : (atMs - fromMs) / 1000;
}

function stoppedBy(marks: Marks, o: RunOptions, waveOver: boolean): string {
  if (marks.waveEnd !== undefined && marks.steadyEnd !== undefined) return 'both windows measured';
  if (waveOver)
    return marks.settled === undefined
      ? 'the wave ended before the queue filled'
      : `the wave ended fewer than ${o.handoffs} hand-offs after the queue filled`;
  return `wall limit ${o.maxWallMs / 60_000} min`;
}

/** Has the queue filled: every agent queued, or 98% and no newcomer for a minute (stragglers stuck)? */
function queueFilled(n: number, observer: Observer): () => boolean {
  let size = -1;
  let since = Date.now();
  return () => {
    const now = Date.now();
    if (observer.queued.size !== size) {
      size = observer.queued.size;
      since = now;
    }
    return size >= n || (size >= 0.98 * n && now - since >= 60_000);
  };
}

/** Waits for the marks: every agent queued, the wave's end, H hand-offs after the queue filled. */
async function measure(
  o: RunOptions,
  run: { observer: Observer; admin: AdminClient; etcdPid: number; start: Snapshot; watcher: Watcher },
): Promise<Marks> {
  const { observer, admin, etcdPid, start, watcher } = run;
  const marks: Marks = { start };
  const whole = o.n - o.concurrency <= 2 * o.handoffs;
  const deadline = start.atMs + o.maxWallMs;
  let settledAt = 0;
  const filled = queueFilled(o.n, observer);
  // Every node through its first cycle: no hand-off comes any more (the agents sleep a period).
  const over = (): boolean =>
    marks.waveEnd !== undefined && (marks.steadyEnd !== undefined || observer.cycled.size >= o.n);
  while (Date.now() < deadline && !over()) {
    watcher.sample(start.atMs);
    if (marks.settled === undefined && filled()) {
      marks.settled = await scrape(admin, etcdPid);
      marks.queuedAtSettle = observer.queued.size;
      settledAt = observer.handOffs.length;
      o.progress(
        `N=${o.n}: ${observer.queued.size} agents queued after ${((marks.settled.atMs - start.atMs) / 1000).toFixed(0)} s`,
      );
    }
    const waveDone = whole ? observer.cycled.size >= o.n : observer.handOffs.length >= o.handoffs;
    if (marks.waveEnd === undefined && waveDone) marks.waveEnd = await scrape(admin, etcdPid);
    if (
      marks.settled !== undefined &&
      marks.steadyEnd === undefined &&
      observer.handOffs.length >= settledAt + o.handoffs
    )
      marks.steadyEnd = await scrape(admin, etcdPid);
    await sleep(200);
  }
  return marks;
}
