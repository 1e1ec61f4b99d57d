// What the benchmark's main thread and its agent workers (bench/real-api-agent-worker.ts) say to
// each other (issue 59 item 2). The agents run in worker threads, each with its own event loop and
// its own client, so that 5,000 agents are not one loop's backlog; the simulated hosts (reboots,
// boots, the violation checks), the coordinators and the observer stay in the main thread.
import type { Config } from '../src/config/config.js';
import { defaultConfig } from '../src/config/parse.js';
import type { LogFields } from '../src/log/logger.js';
import { DS_NAME, LOCK_ANNOTATION, NS } from './real-api-fleet.js';

/** How a worker's agents are configured (its workerData). */
export interface WorkerSettings {
  kubeconfig: string;
  identity: 'agents' | 'admin';
  concurrency: number;
  rebootDelayMs: number;
}

export type ToWorker =
  /** Start (or restart after its boot) the agent of node `i`; `required`: its sentinel says so. */
  | { kind: 'start'; i: number; required: boolean }
  /** Answer with the last lines of `node`'s agent. */
  | { kind: 'lastLines'; node: string; id: number }
  | { kind: 'stop' };

export type FromWorker =
  /** Node `i`'s agent asked its host to reboot (the worker has stopped that agent). */
  | { kind: 'reboot'; i: number }
  | { kind: 'started' }
  | { kind: 'problem'; who: string; level: string; message: string; fields: LogFields }
  /** One fleet census read: answered after `ms`, or not answered (timeout or other error). */
  | { kind: 'census'; ms?: number; failure?: 'timeout' | 'error' }
  /** The worker's event loop lateness since its last report (bench/loop-lag.ts). */
  | { kind: 'lag'; samples: { atMs: number; lateMs: number }[] }
  | { kind: 'lines'; id: number; lines: readonly string[] };

/** `fields` as a structured clone can carry them (what a logger was given may hold anything). */
export function cloneable(fields: LogFields): LogFields {
  try {
    return JSON.parse(JSON.stringify(fields)) as LogFields;
  } catch {
    return { fields: Object.keys(fields).join(', '), note: 'not serialisable' };
  }
}

const TAINT = 'weave.works/kured-node-reboot';

/** The agents' (and the coordinators') configuration: the defaults, with the lock, budget and host of this run. */
export function agentConfig(node: string, s: Pick<WorkerSettings, 'concurrency' | 'rebootDelayMs'>): Config {
  return {
    ...defaultConfig(),
    nodeId: node,
    dsName: DS_NAME,
    dsNamespace: NS,
    lockAnnotation: LOCK_ANNOTATION,
    concurrency: { count: s.concurrency },
    hostExec: 'direct',
    metricsPort: 0,
    preferNoScheduleTaint: TAINT,
    periodMs: 3_600_000,
    blockOnPdb: true,
    drainDelayMs: 0,
    rebootDelayMs: s.rebootDelayMs,
    lockReleaseDelayMs: 0,
    kubeconfig: '',
  };
}

/** The last lines (any level) each agent or coordinator logged, for a stuck node's story. */
export class RecentLines {
  private readonly lines = new Map<string, string[]>();

  add(who: string, level: string, message: string, fields: LogFields = {}): void {
    let lines = this.lines.get(who);
    if (lines === undefined) this.lines.set(who, (lines = []));
    lines.push(`${new Date().toISOString()} ${level} ${message} ${JSON.stringify(fields)}`.slice(0, 400));
    if (lines.length > 12) lines.shift();
  }

  of(who: string): readonly string[] {
    return this.lines.get(who) ?? [];
  }
}
