// The kured-ts side of `npm run bench:real`: one real agent per node, run in agent workers
// (bench/real-api-agent-worker.ts, node i in worker i mod K, each thread its own event loop and
// client), and the coordinator's two replicas in this thread, against the real server. The hosts
// are simulated here: the sentinel says a reboot is required until the node's first reboot clears
// the need (as the package manager's sentinel file is gone after the boot; with needSurvives it never
// is: the reboot-loop case), and a reboot stops the node's agent as a dying process would, then
// (after the boot time) the "kubelet" reports a new bootID, Ready, through /status and a fresh agent
// starts, as the DaemonSet's restarted pod would.
import { setMaxListeners } from 'node:events';
import { Worker } from 'node:worker_threads';
import { SystemClock } from '../src/clock/clock.js';
import type { Coordinator } from '../src/coordinator/coordinator.js';
import { createCoordinator } from '../src/coordinator/create-coordinator.js';
import { connectKube, type ClientNodeKube } from '../src/kube/client.js';
import type { Logger, LogFields } from '../src/log/logger.js';
import { CensusTimings } from './census-timing.js';
import type { LoopLag } from './loop-lag.js';
import type { AdminClient } from './real-api-admin.js';
import {
  COORDINATOR_USER,
  DS_NAME,
  LOCK_ANNOTATION,
  NS,
  bootId,
  nodeName,
  nodeStatus,
} from './real-api-fleet.js';
import type { Observer } from './real-api-observer.js';
import { RecentLines, agentConfig, type FromWorker, type ToWorker } from './real-api-worker-protocol.js';

/** Warnings and errors of every agent and coordinator, counted by kind, with the first of each kept. */
export class Problems {
  readonly kinds = new Map<string, { count: number; first: string }>();
  total = 0;
  /** The last lines (any level) of each coordinator (the agents' are their workers'). */
  private readonly recent = new RecentLines();
  /** The coordinators' first info and warning lines (leading, turns, step-downs): the start-up's story. */
  readonly coordinatorStory: string[] = [];

  logger(who: string): Logger {
    return {
      debug: (m, f) => {
        this.recent.add(who, 'debug', m, f);
      },
      info: (m, f) => {
        this.recent.add(who, 'info', m, f);
        this.tell(who, 'info', m, f);
      },
      warn: (m, f) => {
        this.keep(who, 'warn', m, f);
      },
      error: (m, f) => {
        this.keep(who, 'error', m, f);
      },
    };
  }

  /** Logs a warning or error of this thread, and counts it. */
  keep(who: string, level: string, message: string, fields: LogFields = {}): void {
    this.recent.add(who, level, message, fields);
    this.tell(who, level, message, fields);
    this.count(who, level, message, fields);
  }

  /** A coordinator's line, kept for the start-up's story (the first 40). */
  private tell(who: string, level: string, message: string, fields: LogFields = {}): void {
    if (!who.startsWith('coordinator') || this.coordinatorStory.length >= 40) return;
    this.coordinatorStory.push(
      `${new Date().toISOString()} ${who} ${level} ${message} ${JSON.stringify(fields)}`.slice(0, 300),
    );
  }

  /** Counts a warning or error (an agent worker's: the worker keeps its lines). */
  count(who: string, level: string, message: string, fields: LogFields = {}): void {
    this.total++;
    const detail =
      typeof fields.error === 'string'
        ? fields.error
        : typeof fields.reason === 'string'
          ? fields.reason
          : '';
    const key = `${level} ${message}: ${detail}`
      .replace(/ip-10-[\d-]+\.eu-west-1\.compute\.internal/g, '<node>')
      .replace(/\d+/g, 'N')
      .slice(0, 240);
    const known = this.kinds.get(key);
    if (known) known.count++;
    else
      this.kinds.set(key, {
        count: 1,
        first: `${who} ${level} ${message} ${JSON.stringify(fields)}`.slice(0, 600),
      });
  }
}

export interface FleetOptions {
  n: number;
  concurrency: number;
  /** From the reboot request until the node reports its new bootID and its agent starts again. */
  bootMs: number;
  /** --reboot-delay of the agents (the brief's default 0). */
  rebootDelayMs: number;
  /** The need survives the reboot (a sentinel that stays): every node reboots until quarantined reboot-loop. */
  needSurvives?: boolean;
  /** Admin kubeconfig file. */
  kubeconfig: string;
  /** 'agents': each agent impersonates the chart's ServiceAccount with its node claim; 'admin': no. */
  identity: 'agents' | 'admin';
  /** Agent worker threads (node i runs in worker i mod workers). */
  workers: number;
  admin: AdminClient;
  observer: Observer;
  problems: Problems;
  /** Where the workers' event-loop lateness goes (with this thread's). */
  lag?: LoopLag;
}

/** One agent worker, and the answers to its outstanding questions. */
interface AgentWorker {
  worker: Worker;
  asked: Map<number, (lines: readonly string[]) => void>;
}

/** The agents and coordinators of one run. */
export class KuredFleet {
  /** Reboots requested, per node. */
  readonly boots = new Map<number, number>();
  reboots = 0;
  /** Nodes down now (reboot requested, not yet booted), and the most at once. */
  readonly down = new Set<number>();
  maxDown = 0;
  readonly violations: string[] = [];
  started = 0;
  private readonly workers: AgentWorker[] = [];
  private readonly coordinators: {
    coordinator: Coordinator;
    abort: AbortController;
    kube: ClientNodeKube;
  }[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;
  private asked = 0;
  private readonly clock = new SystemClock();
  /** Every agent's fleet census, timed (census-timing.ts). */
  readonly census = new CensusTimings();

  constructor(private readonly o: FleetOptions) {
    for (let w = 0; w < Math.max(1, o.workers); w++) {
      const worker = new Worker(new URL('./real-api-agent-worker.js', import.meta.url), {
        workerData: {
          kubeconfig: o.kubeconfig,
          identity: o.identity,
          concurrency: o.concurrency,
          rebootDelayMs: o.rebootDelayMs,
        },
      });
      const one: AgentWorker = { worker, asked: new Map() };
      worker.on('message', (m: FromWorker) => {
        this.heard(one, m);
      });
      worker.on('error', (err) => {
        if (!this.stopped)
          o.problems.keep(`worker-${w}`, 'crash', 'agent worker crashed', { error: String(err) });
      });
      this.workers.push(one);
    }
  }

  private heard(from: AgentWorker, m: FromWorker): void {
    switch (m.kind) {
      case 'reboot':
        this.reboot(m.i);
        return;
      case 'started':
        this.started++;
        return;
      case 'problem':
        this.o.problems.count(m.who, m.level, m.message, m.fields);
        return;
      case 'census':
        if (m.ms !== undefined) this.census.answered(m.ms);
        else this.census.failed(m.failure ?? 'error');
        return;
      case 'lag':
        this.o.lag?.add(m.samples);
        return;
      case 'lines':
        from.asked.get(m.id)?.(m.lines);
        from.asked.delete(m.id);
    }
  }

  private workerOf(i: number): AgentWorker {
    const w = this.workers[i % this.workers.length];
    if (w === undefined) throw new Error('no agent worker');
    return w;
  }

  private tell(i: number, m: ToWorker): void {
    this.workerOf(i).worker.postMessage(m);
  }

  /** Starts the two coordinator replicas, each on its own connections. */
  startCoordinators(): void {
    for (let i = 0; i < 2; i++) {
      const own = connectKube({ kubeconfig: this.o.kubeconfig });
      const kube = this.o.identity === 'agents' ? own.impersonating({ user: COORDINATOR_USER }) : own;
      const abort = new AbortController();
      setMaxListeners(Infinity, abort.signal);
      // the agents' own Config, so the replicas keep the budget the agents keep
      const coordinator = createCoordinator(agentConfig('', this.o), {
        kube,
        identity: `coordinator-${i}`,
        clock: this.clock,
        log: this.o.problems.logger(`coordinator-${i}`),
        random: Math.random,
      });
      this.coordinators.push({ coordinator, abort, kube: own });
      coordinator.run(abort.signal).catch((err: unknown) => {
        if (!abort.signal.aborted)
          this.o.problems.keep(`coordinator-${i}`, 'crash', 'coordinator crashed', { error: String(err) });
      });
    }
  }

  /** Starts (or restarts after a boot) the agent of node `i`, in its worker. */
  startAgent(i: number): void {
    if (this.stopped) return;
    // the host's package manager clears the need at the boot, unless it survives (--need-survives)
    this.tell(i, { kind: 'start', i, required: this.o.needSurvives === true || !this.boots.has(i) });
  }

  /** The last lines node `i`'s agent logged (its worker keeps them). */
  lastLines(i: number): Promise<readonly string[]> {
    const w = this.workerOf(i);
    const id = ++this.asked;
    return new Promise((resolve) => {
      w.asked.set(id, resolve);
      w.worker.postMessage({ kind: 'lastLines', node: nodeName(i), id } satisfies ToWorker);
      setTimeout(() => {
        if (w.asked.delete(id)) resolve(['(its worker did not answer)']);
      }, 5_000).unref();
    });
  }

  /** The host went down (its worker stopped its agent); it boots `bootMs` later with a new bootID. */
  private reboot(i: number): void {
    const name = nodeName(i);
    const boot = (this.boots.get(i) ?? 1) + 1;
    this.boots.set(i, boot);
    this.reboots++;
    this.down.add(i);
    this.maxDown = Math.max(this.maxDown, this.down.size);
    if (this.down.size > this.o.concurrency)
      this.violations.push(`${this.down.size} nodes down at once, concurrency ${this.o.concurrency}`);
    this.o.observer.noteReboot(name);
    void this.checkHeld(name);
    this.later(this.o.bootMs, async () => {
      await this.o.admin.json({
        method: 'PATCH',
        path: `/api/v1/nodes/${name}/status`,
        contentType: 'application/merge-patch+json',
        body: { status: nodeStatus(i, bootId(i, boot), new Date()) },
      });
      this.down.delete(i);
      this.startAgent(i);
    });
  }

  /** A reboot of a node the lock does not name (confirmed by a fresh read) is a violation. */
  private async checkHeld(name: string): Promise<void> {
    if (this.o.observer.holders.has(name)) return;
    const ds = await this.o.admin.json<{ metadata?: { annotations?: Record<string, string> } }>({
      method: 'GET',
      path: `/apis/apps/v1/namespaces/${NS}/daemonsets/${DS_NAME}`,
    });
    const text = ds?.metadata?.annotations?.[LOCK_ANNOTATION] ?? '';
    if (!text.includes(`"nodeID":"${name}"`)) this.violations.push(`${name} rebooted without a slot`);
  }

  /** Runs `act` after `ms` unless stopped; a failure is a problem of the simulated host. */
  later(ms: number, act: () => Promise<void> | void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (this.stopped) return;
      Promise.resolve(act()).catch((err: unknown) => {
        this.o.problems.keep('bench', 'error', 'simulated host failed', { error: String(err) });
      });
    }, ms);
    this.timers.add(timer);
  }

  /** Stops every agent, worker and coordinator and closes their connections. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    for (const w of this.workers) w.worker.postMessage({ kind: 'stop' } satisfies ToWorker);
    for (const c of this.coordinators) c.abort.abort(new Error('benchmark over'));
    setTimeout(() => {
      for (const c of this.coordinators) c.kube.close();
      for (const w of this.workers) void w.worker.terminate();
    }, 3_000).unref();
  }

  leaderships(): number {
    return this.coordinators.reduce((sum, c) => sum + c.coordinator.stats.leaderships, 0);
  }

  turns(): { granted: number; lapsed: number } {
    let granted = 0;
    let lapsed = 0;
    for (const { coordinator } of this.coordinators) {
      granted += coordinator.stats.granted;
      lapsed += coordinator.stats.lapsed;
    }
    return { granted, lapsed };
  }
}
