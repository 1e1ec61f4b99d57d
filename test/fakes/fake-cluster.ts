// A one-node cluster in memory for agent tests: node, lock table, drain, host, and recorders.
// Agents are built over it with `deps()`; a fresh agent over the same FakeCluster is "the pod
// restarted". Crash injection: `crashAt` makes the n-th call of a cluster operation fail.
import type { AgentConfig, AgentDeps } from '../../src/agent/agent.js';
import type { Blocker, Verdict } from '../../src/blockers/blocker.js';
import { MemoryLogger } from '../../src/log/logger.js';
import type { AgentMetrics, EvictionResult, RebootResult } from '../../src/metrics/agent-metrics.js';
import type { Drainer, DrainResult } from '../../src/drain/drainer.js';
import type { EventReason, EventRecorder } from '../../src/events/events.js';
import type { Phase } from '../../src/node/status.js';
import type { Notifier, NotifyEvent } from '../../src/notify/notifier.js';
import type { Window } from '../../src/window/window.js';
import { testConfig } from './config.js';
import { FakeClock } from './fake-clock.js';
import { FakeLock, FakeLockTable } from './fake-lock.js';
import { FakeNode, bump, newNodeRecord, type NodeRecord } from './fake-node.js';

/** The agent's part of testConfig(), with kured-ts's chart taint so the taint steps run. */
export const AGENT_DEFAULTS: AgentConfig = testConfig({
  preferNoScheduleTaint: 'weave.works/kured-node-reboot',
});

/** Raised by a crashing fake: the process died at this step. */
class CrashError extends Error {
  override readonly name = 'CrashError';
}

export class FakeBlocker implements Blocker {
  verdict: Verdict | Error = { blocked: false };
  constructor(readonly name: string) {}
  check(): Promise<Verdict> {
    return this.verdict instanceof Error ? Promise.reject(this.verdict) : Promise.resolve(this.verdict);
  }
}

export class RecordingMetrics implements AgentMetrics {
  rebootRequired: boolean | undefined;
  phase: Phase | undefined;
  lockHeld: boolean | undefined;
  blocked: string | undefined = 'unset';
  /** kured_ts_lock_stalled_seconds' start as last set (undefined: not waiting). */
  lockStalledSince: number | undefined;
  /** The reboot need as last set (undefined: not required). */
  rebootNeed: { sinceMs: number; dueMs: number | undefined } | undefined;
  drains: number[] = [];
  reboots: number[] = [];
  phases: [string, number][] = [];
  evictions: Partial<Record<EvictionResult, number>> = {};
  results: RebootResult[] = [];
  sentinelErrors = 0;
  heartbeats = 0;
  lastHeartbeat: Date | undefined;
  setRebootRequired(required: boolean): void {
    this.rebootRequired = required;
  }
  setPhase(phase: Phase): void {
    this.phase = phase;
  }
  setRebootNeed(need: { sinceMs: number; dueMs: number | undefined } | undefined): void {
    this.rebootNeed = need;
  }
  setLockHeld(held: boolean): void {
    this.lockHeld = held;
  }
  setBlocked(blocker: string | undefined): void {
    this.blocked = blocker;
  }
  setLockStalledSince(monotonicMs: number | undefined): void {
    this.lockStalledSince = monotonicMs;
  }
  observePhase(phase: string, seconds: number): void {
    this.phases.push([phase, seconds]);
  }
  observeDrain(seconds: number): void {
    this.drains.push(seconds);
  }
  observeReboot(seconds: number): void {
    this.reboots.push(seconds);
  }
  countEvictions(result: EvictionResult, n: number): void {
    this.evictions[result] = (this.evictions[result] ?? 0) + n;
  }
  countReboot(result: RebootResult): void {
    this.results.push(result);
  }
  countSentinelError(): void {
    this.sentinelErrors++;
  }
  heartbeat(at: Date): void {
    this.heartbeats++;
    this.lastHeartbeat = at;
  }
}

export interface RecordedEvent {
  reason: EventReason;
  message: string;
  type: 'Normal' | 'Warning';
}

export class FakeCluster {
  readonly clock: FakeClock;
  readonly node: NodeRecord;
  readonly table: FakeLockTable;
  /** true / false / an error text for the sentinel. */
  sentinel: boolean | string = false;
  /** What the next drains return: ok, or the pods left. */
  drainFails = false;
  /** Does a reboot request change the bootID? (false: the host ignored it) */
  rebootWorks = true;
  /** The kernel the node runs after a reboot (status.nodeInfo.kernelVersion); default unchanged. */
  kernelAfterReboot: string | undefined;
  /** Conditions after a reboot; default Ready=True. */
  conditionsAfterReboot = [{ type: 'Ready', status: 'True' }];
  rebootError: Error | undefined;
  /** Runs during the reboot delay (the first sleep of rebootDelayMs): "someone else acts". */
  duringSleep: ((ms: number) => void) | undefined;
  windowOpen = true;
  readonly blockers: FakeBlocker[] = [];
  readonly events: RecordedEvent[] = [];
  readonly notifications: { event: NotifyEvent; message: string }[] = [];
  /** Every cluster operation, in order ("node.cordon", "lock.release", "drain", "reboot", ...). */
  readonly calls: string[] = [];
  /** Reboot requests that reached the host, with what was true right then. */
  readonly reboots: { cordoned: boolean; drained: boolean }[] = [];
  /** Invariant violations seen by the fakes (must stay empty). */
  readonly violations: string[] = [];
  /** Crash injection: the n-th operation (1-based) fails; `abort` aborts this controller first. */
  crashAt: number | undefined;
  /** Disturbance injection: runs right after the n-th operation (someone else acts at that point). */
  disturbAt: { step: number; act: () => void } | undefined;
  /**
   * Check at every step that no more nodes are out of service (this one cordoned or not Ready, plus
   * the other holders of a slot) than --concurrency allows.
   */
  checkOutOfService = false;
  /** A tick another agent of this node started meanwhile (a disturbance); the test awaits it. */
  concurrent: Promise<unknown> | undefined;
  /** Runs after each tick of the test's loop (another node's moves between ticks). */
  afterTick: (() => void) | undefined;
  /** Runs inside every notification, which waits for it (what happens while one is being sent). */
  onNotify: ((event: NotifyEvent) => Promise<void> | void) | undefined;
  crashController: AbortController | undefined;
  metrics = new RecordingMetrics();
  logger = new MemoryLogger();

  constructor(options: { concurrency?: number; start?: string; nodeId?: string } = {}) {
    this.clock = new FakeClock(options.start ?? '2026-01-05T10:00:00Z');
    this.node = newNodeRecord(options.nodeId ?? 'n1');
    this.table = new FakeLockTable(options.concurrency ?? 1, this.clock);
  }

  /** Counts one operation and crashes when told to. */
  readonly step = (op: string): void => {
    this.calls.push(op);
    this.checkStep(op);
    if (this.disturbAt?.step === this.calls.length) this.disturbAt.act();
    if (this.crashAt !== undefined && this.calls.length === this.crashAt) {
      this.crashAt = undefined;
      if (this.crashController) this.crashController.abort(new CrashError(`aborted at ${op}`));
      throw new CrashError(`crash at ${op}`);
    }
  };

  /** Whether the node is Ready. */
  ready(): boolean {
    return this.node.conditions.some((c) => c.type === 'Ready' && c.status === 'True');
  }

  /** Is the node in a reboot cycle (its label)? */
  inCycle(): boolean {
    return this.node.labels['kured-ts.dev/rebooting'] === 'true';
  }

  private checkStep(op: string): void {
    if (op === 'node.uncordon answered' && !this.ready()) this.violations.push('uncordoned while not Ready');
    if (!this.checkOutOfService) return;
    const others = this.table.holders().filter((h) => h !== this.node.name);
    const mine = this.node.unschedulable || !this.ready() ? 1 : 0;
    if (mine + others.length > this.table.concurrency) {
      this.violations.push(`more than ${this.table.concurrency} out of service after ${op}`);
    }
  }

  /** The host rebooted: new bootID, the sentinel is gone, conditions as configured. */
  boot(): void {
    const n = Number(this.node.bootID.replace(/\D/g, '')) || 1;
    this.node.bootID = `boot-${n + 1}`;
    this.node.conditions = structuredClone(this.conditionsAfterReboot);
    if (this.kernelAfterReboot !== undefined) this.node.kernelVersion = this.kernelAfterReboot;
    bump(this.node); // the kubelet reports the new boot: the Node changes
    this.sentinel = false;
  }

  /** Another actor uncordons the node (kubectl uncordon). */
  uncordonByOther(): void {
    this.node.unschedulable = false;
    this.node.unschedulableOwners = [];
    this.node.drained = false;
    bump(this.node);
  }

  /** kured cordoned the node and holds its slot in the lock (a migration from kured). */
  kuredTookSlot(): void {
    this.node.unschedulable = true;
    this.table.set(this.node.name, {
      nodeID: this.node.name,
      created: this.clock.now(),
      ttlMs: 0,
      metadata: { unschedulable: false },
    });
  }

  /** Another actor cordons the node (kubectl cordon: a write only when it was schedulable). */
  cordonByOther(): void {
    if (this.node.unschedulable) return;
    this.node.unschedulable = true;
    this.node.unschedulableOwners = ['kubectl-cordon'];
    bump(this.node);
  }

  eventReasons(): EventReason[] {
    return this.events.map((e) => e.reason);
  }

  phases(): Phase[] {
    return this.node.statuses.map((s) => s.phase);
  }

  /** Whether the cluster has a Service of type LoadBalancer (the wait before the drain). */
  loadBalancers = false;

  deps(overrides: Partial<AgentDeps> = {}): AgentDeps {
    const node = new FakeNode(this.node, this.step);
    const lock = new FakeLock(this.table, this.node.name, this.step);
    return {
      sentinel: {
        rebootRequired: () => {
          this.step('sentinel');
          const s = this.sentinel;
          return Promise.resolve(typeof s === 'string' ? { required: false, error: s } : { required: s });
        },
      },
      blockers: this.blockers,
      lock,
      node,
      drainer: this.drainer(),
      loadBalancers: {
        presence: () =>
          Promise.resolve(
            this.loadBalancers
              ? { present: true, reason: 'Service default/web is of type LoadBalancer' }
              : { present: false, reason: 'no Service of type LoadBalancer' },
          ),
      },
      events: this.recorder(),
      rebooter: {
        reboot: () => {
          this.step('reboot');
          return this.reboot();
        },
      },
      notifier: this.notifier(),
      metrics: this.metrics,
      window: this.window(),
      clock: this.sleepHook(),
      logger: this.logger,
      random: () => 0.5,
      ...overrides,
    };
  }

  private reboot(): Promise<void> {
    this.reboots.push({ cordoned: this.node.unschedulable, drained: this.node.drained });
    if (!this.node.unschedulable) this.violations.push('reboot of an uncordoned node');
    if (!this.node.drained && !this.drainFails) this.violations.push('reboot of an undrained node');
    // a slot, or a cycle in progress without one, which still counts against --concurrency
    if (this.table.slots.get(this.node.name) === undefined && !this.inCycle())
      this.violations.push('reboot without the lock');
    if (this.rebootError) return Promise.reject(this.rebootError);
    if (this.rebootWorks) this.boot();
    return Promise.resolve();
  }

  private drainer(): Drainer {
    return {
      drain: (_signal, hooks): Promise<DrainResult> => {
        this.step('drain');
        const count = (outcome: 'evicted' | 'refused', n: number): void => {
          for (let i = 0; i < n; i++) hooks?.onEviction?.(outcome);
        };
        if (!this.node.unschedulable) this.violations.push('drain of an uncordoned node');
        const base = { evicted: [], skipped: [], waited: [], deleted: [], durationMs: 2000 };
        if (this.drainFails) {
          count('refused', 3);
          const pending = [{ pod: 'default/web-1', reason: 'PDB refused', pdb: 'web' }];
          return Promise.resolve({
            ...base,
            ok: false,
            pending,
            requests: { evicted: 0, refused: 3, failed: 0 },
          });
        }
        this.node.drained = true;
        count('evicted', 2);
        return Promise.resolve({
          ...base,
          ok: true,
          pending: [],
          requests: { evicted: 2, refused: 0, failed: 0 },
        });
      },
    };
  }

  private recorder(): EventRecorder {
    return {
      record: (reason, message, type = 'Normal') => {
        this.events.push({ reason, message, type });
        return Promise.resolve();
      },
    };
  }

  private notifier(): Notifier {
    return {
      notify: async (event, _node, message) => {
        this.notifications.push({ event, message });
        await this.onNotify?.(event);
      },
    };
  }

  private window(): Window {
    return {
      contains: () => this.windowOpen,
      describe: () => 'mon-fri 02:00-04:00 UTC',
      next: () => ({ inside: this.windowOpen, change: new Date('2026-01-06T02:00:00Z') }),
    };
  }

  /** The cluster clock, with `duringSleep` run at the start of each sleep (once). */
  private sleepHook(): FakeClock {
    const clock = this.clock;
    const hooked = Object.create(clock) as FakeClock;
    hooked.sleep = (ms: number, signal?: AbortSignal): Promise<void> => {
      const hook = this.duringSleep;
      this.duringSleep = undefined;
      const p = clock.sleep(ms, signal);
      hook?.(ms);
      return p;
    };
    return hooked;
  }
}

/** Runs one tick to its end, moving virtual time through its sleeps. */
export async function settle<T>(clock: FakeClock, work: Promise<T>): Promise<T> {
  const state = { done: false };
  const tracked = work.finally(() => {
    state.done = true;
  });
  for (let i = 0; !state.done; i++) {
    if (i > 10_000) throw new Error('work did not settle');
    await clock.advanceUntilIdle();
  }
  return tracked;
}
