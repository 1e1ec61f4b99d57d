// The kured-ts side of `npm run bench:real`, all in this one process: one real agent per node
// (createAgent, as `kured-ts agent` builds it, minus its metrics listener) and the coordinator's two
// replicas, against the real server. The hosts are simulated: the sentinel says a reboot is required
// until the node's first reboot clears the need (as the package manager's sentinel file is gone
// after the boot; with needSurvives it never is: the reboot-loop case), and a reboot stops the
// node's agent as a dying process would, then (after the boot time) the "kubelet" reports a new
// bootID, Ready, through /status and a fresh agent starts, as the DaemonSet's restarted pod would.
import { setMaxListeners } from 'node:events';
import { NODE_NAME_EXTRA } from '../src/admission/agent-policy.js';
import { refreshRebootRequired } from '../src/agent/agent.js';
import { createAgent } from '../src/agent/create-agent.js';
import { SystemClock } from '../src/clock/clock.js';
import type { Config } from '../src/config/config.js';
import { defaultConfig } from '../src/config/parse.js';
import type { Coordinator } from '../src/coordinator/coordinator.js';
import { createCoordinator } from '../src/coordinator/create-coordinator.js';
import { connectKube, type ClientNodeKube } from '../src/kube/client.js';
import type { Logger, LogFields } from '../src/log/logger.js';
import { noMetrics } from '../src/metrics/agent-metrics.js';
import type { Sentinel } from '../src/sentinel/sentinel.js';
import { CensusTimedKube, CensusTimings } from './census-timing.js';
import type { AdminClient } from './real-api-admin.js';
import {
  AGENT_USER,
  COORDINATOR_USER,
  DS_NAME,
  LOCK_ANNOTATION,
  NS,
  bootId,
  nodeName,
  nodeStatus,
} from './real-api-fleet.js';
import type { Observer } from './real-api-observer.js';

const TAINT = 'weave.works/kured-node-reboot';

/** Warnings and errors of every agent and coordinator, counted by kind, with the first of each kept. */
export class Problems {
  readonly kinds = new Map<string, { count: number; first: string }>();
  total = 0;
  /** The last lines (any level) of each agent and coordinator, for a stuck node's story. */
  private readonly recent = new Map<string, string[]>();

  logger(who: string): Logger {
    return {
      debug: (m, f) => {
        this.remember(who, 'debug', m, f);
      },
      info: (m, f) => {
        this.remember(who, 'info', m, f);
      },
      warn: (m, f) => {
        this.keep(who, 'warn', m, f);
      },
      error: (m, f) => {
        this.keep(who, 'error', m, f);
      },
    };
  }

  /** The last lines `who` logged. */
  lastLines(who: string): readonly string[] {
    return this.recent.get(who) ?? [];
  }

  private remember(who: string, level: string, message: string, fields: LogFields = {}): void {
    let lines = this.recent.get(who);
    if (lines === undefined) this.recent.set(who, (lines = []));
    lines.push(`${new Date().toISOString()} ${level} ${message} ${JSON.stringify(fields)}`.slice(0, 400));
    if (lines.length > 12) lines.shift();
  }

  keep(who: string, level: string, message: string, fields: LogFields = {}): void {
    this.remember(who, level, message, fields);
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
  admin: AdminClient;
  observer: Observer;
  problems: Problems;
}

interface Running {
  abort: AbortController;
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
  private readonly agents = new Map<number, Running>();
  private readonly coordinators: {
    coordinator: Coordinator;
    abort: AbortController;
    kube: ClientNodeKube;
  }[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;
  private readonly clock = new SystemClock();
  /** Every agent's fleet census, timed (census-timing.ts). */
  readonly census = new CensusTimings();
  /** One client (one set of connections) shared by every agent, as ClientNodeKube.impersonating allows. */
  private readonly shared: ClientNodeKube;

  constructor(private readonly o: FleetOptions) {
    this.shared = connectKube({ kubeconfig: o.kubeconfig });
  }

  /** Starts the two coordinator replicas, each on its own connections. */
  startCoordinators(): void {
    for (let i = 0; i < 2; i++) {
      const own = connectKube({ kubeconfig: this.o.kubeconfig });
      const kube = this.o.identity === 'agents' ? own.impersonating({ user: COORDINATOR_USER }) : own;
      const abort = new AbortController();
      setMaxListeners(Infinity, abort.signal);
      // the agents' own Config, so the replicas keep the budget the agents keep
      const coordinator = createCoordinator(this.config(''), {
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

  /** The agents' configuration: the defaults, with the lock, budget and host of this run. */
  private config(node: string): Config {
    return {
      ...defaultConfig(),
      nodeId: node,
      dsName: DS_NAME,
      dsNamespace: NS,
      lockAnnotation: LOCK_ANNOTATION,
      concurrency: this.o.concurrency,
      hostExec: 'direct',
      metricsPort: 0,
      preferNoScheduleTaint: TAINT,
      periodMs: 3_600_000,
      blockOnPdb: true,
      drainDelayMs: 0,
      rebootDelayMs: this.o.rebootDelayMs,
      lockReleaseDelayMs: 0,
      kubeconfig: '',
    };
  }

  /** Starts (or restarts after a boot) the agent of node `i`. */
  startAgent(i: number): void {
    if (this.stopped) return;
    const name = nodeName(i);
    const abort = new AbortController();
    setMaxListeners(Infinity, abort.signal);
    this.agents.set(i, { abort });
    this.started++;
    const client =
      this.o.identity === 'agents'
        ? this.shared.impersonating({ user: AGENT_USER, extra: { [NODE_NAME_EXTRA]: name } })
        : this.shared;
    const kube = new CensusTimedKube(client, this.census);
    const logger = this.o.problems.logger(name);
    // the host's package manager clears the need at the boot, unless it survives (--need-survives)
    const required = this.o.needSurvives === true || !this.boots.has(i);
    const sentinel: Sentinel = { rebootRequired: () => Promise.resolve({ required }) };
    const rebooter = {
      reboot: (): Promise<void> => {
        this.reboot(i);
        return Promise.resolve();
      },
    };
    const agent = createAgent(this.config(name), { kube, clock: this.clock, logger, sentinel, rebooter });
    agent.run(abort.signal).catch((err: unknown) => {
      if (!abort.signal.aborted) this.o.problems.keep(name, 'crash', 'agent crashed', { error: String(err) });
    });
    void refreshRebootRequired({
      sentinel,
      metrics: noMetrics,
      clock: this.clock,
      logger,
      signal: abort.signal,
      onRequired: () => {
        agent.wake();
      },
    });
  }

  /** The host goes down: its agent dies at once; it boots `bootMs` later with a new bootID. */
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
    setImmediate(() => {
      this.agents.get(i)?.abort.abort(new Error('host down'));
      this.agents.delete(i);
    });
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

  /** Stops every agent and coordinator and closes their connections. */
  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    for (const a of this.agents.values()) a.abort.abort(new Error('benchmark over'));
    this.agents.clear();
    for (const c of this.coordinators) c.abort.abort(new Error('benchmark over'));
    setTimeout(() => {
      this.shared.close();
      for (const c of this.coordinators) c.kube.close();
    }, 2_000).unref();
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
