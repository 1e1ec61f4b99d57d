// Virtual time for the simulator: a discrete-event scheduler that runs one actor at a time.
//
// Why discrete events and not an accelerated wall clock: a rolling reboot of 50 nodes at period 1h
// spans many simulated hours and must take seconds of wall time and give the same answer for the
// same seed. An accelerated clock (x1000) would still race real HTTP latency against virtual time
// and make the order of lock acquisitions depend on the machine's load.
//
// How time advances while HTTP requests to the fake API server are in flight: it does not.
// Every task (a sleeper waking up, a watch event being delivered, a simulated kubelet acting) runs
// alone; the scheduler then waits until the process is quiescent: no tracked request in flight
// (every Kube call of an agent is tracked, see tracked-kube.ts) and two macrotask turns without new
// activity, i.e. every agent and actor is parked on a virtual sleep, a virtual watch or nothing.
// Only then does it take the next task, in (time, sequence) order, and jump the clock to it.
// API calls therefore take zero virtual time, and because exactly one actor runs at a time and
// requests are serialized in call order, a run is a pure function of the seed.
import { abortReason, type Clock } from '../clock/clock.js';

interface Task {
  at: number;
  seq: number;
  run: () => void;
}

/** Why run() stopped. */
export type StopReason = 'done' | 'idle' | 'time-limit' | 'wall-limit';

/** A Clock bound to one actor; kill() freezes it like a process killed with SIGKILL. */
export interface ActorClock extends Clock {
  /** From now on sleeps never resolve and pending ones are dropped. */
  kill(): void;
  readonly killed: boolean;
}

export class VirtualTime {
  private t: number;
  private seq = 0;
  private queue: Task[] = [];
  private inFlight = 0;
  private readonly labels = new Map<number, string>();
  private nextLabel = 0;
  private activity = 0;
  private drained: (() => void) | undefined;
  /** Tasks executed so far (a measure of simulation work). */
  tasksRun = 0;

  constructor(start: Date) {
    this.t = start.getTime();
  }

  /** Virtual now in ms since the epoch. */
  nowMs(): number {
    return this.t;
  }

  /** Runs `fn` at virtual time `at` (not before now). Returns a cancel function. */
  schedule(at: number, fn: () => void): () => void {
    const task: Task = { at: Math.max(at, this.t), seq: this.seq++, run: fn };
    this.push(task);
    return () => {
      task.run = noop;
    };
  }

  /** Runs `fn` after `ms` of virtual time. */
  after(ms: number, fn: () => void): () => void {
    return this.schedule(this.t + Math.max(0, ms), fn);
  }

  /** A Clock for one actor (an agent process, a controller). */
  clock(): ActorClock {
    return new VirtualClock(this);
  }

  /** Marks real asynchronous work (an HTTP request) as in flight until the promise settles. */
  track<T>(work: () => Promise<T>, label = 'work'): Promise<T> {
    this.inFlight++;
    this.activity++;
    const id = this.nextLabel++;
    this.labels.set(id, label);
    const done = (): void => {
      this.labels.delete(id);
      this.inFlight--;
      this.activity++;
      if (this.inFlight === 0 && this.drained) {
        const d = this.drained;
        this.drained = undefined;
        d();
      }
    };
    let p: Promise<T>;
    try {
      p = work();
    } catch (err) {
      done();
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    return p.finally(done);
  }

  /** Number of scheduled tasks (live or cancelled). */
  get pending(): number {
    return this.queue.length;
  }

  /**
   * Runs tasks until `done()` holds, nothing is left to run, `untilMs` (virtual) passes or
   * `wallLimitMs` of real time (read from `wallNow`) passes. `done` is checked whenever the process
   * is quiescent.
   */
  async run(
    done: () => boolean,
    untilMs: number,
    wallLimitMs = Infinity,
    wallNow: () => number = Date.now,
  ): Promise<StopReason> {
    const wallStart = wallNow();
    for (;;) {
      await this.quiesce();
      if (done()) return 'done';
      if (wallNow() - wallStart > wallLimitMs) return 'wall-limit';
      const task = this.pop();
      if (!task) return 'idle';
      if (task.at > untilMs) {
        this.push(task);
        return 'time-limit';
      }
      this.t = Math.max(this.t, task.at);
      this.tasksRun++;
      task.run();
    }
  }

  /**
   * Waits until no tracked work is in flight and two macrotask turns pass without activity.
   * Tracked work that takes longer than `stuckMs` of real time is a bug (a request the server never
   * answers): it fails the run instead of hanging it.
   */
  async quiesce(stuckMs = 60_000): Promise<void> {
    for (;;) {
      await macrotask();
      if (this.inFlight > 0) {
        await this.drainedOrStuck(stuckMs);
        continue;
      }
      const seen = this.activity;
      await macrotask();
      if (this.inFlight === 0 && seen === this.activity) return;
    }
  }

  private async drainedOrStuck(stuckMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(
          new Error(
            `simulation stuck: tracked work unanswered for ${stuckMs} ms: ${[...this.labels.values()].join(', ')}`,
          ),
        );
      }, stuckMs);
    });
    try {
      await Promise.race([new Promise<void>((resolve) => (this.drained = resolve)), stuck]);
    } finally {
      clearTimeout(timer);
    }
  }

  private push(task: Task): void {
    // Binary heap on (at, seq).
    const q = this.queue;
    q.push(task);
    let i = q.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(q[i] as Task, q[parent] as Task)) break;
      swap(q, i, parent);
      i = parent;
    }
  }

  private pop(): Task | undefined {
    const q = this.queue;
    const top = q[0];
    const last = q.pop();
    if (!top || !last || q.length === 0) return top;
    q[0] = last;
    siftDown(q, 0);
    return top;
  }
}

function siftDown(q: Task[], start: number): void {
  let i = start;
  for (;;) {
    const l = 2 * i + 1;
    const r = l + 1;
    let m = i;
    if (l < q.length && before(q[l] as Task, q[m] as Task)) m = l;
    if (r < q.length && before(q[r] as Task, q[m] as Task)) m = r;
    if (m === i) return;
    swap(q, i, m);
    i = m;
  }
}

function before(a: Task, b: Task): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

function swap(q: Task[], i: number, j: number): void {
  const x = q[i] as Task;
  q[i] = q[j] as Task;
  q[j] = x;
}

function noop(): void {
  // a cancelled task
}

function macrotask(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

class VirtualClock implements ActorClock {
  private dead = false;
  private readonly cancels = new Set<() => void>();

  constructor(private readonly time: VirtualTime) {}

  get killed(): boolean {
    return this.dead;
  }

  now(): Date {
    return new Date(this.time.nowMs());
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.dead) return;
      if (signal?.aborted) {
        reject(abortReason(signal));
        return;
      }
      const onAbort = (): void => {
        cancel();
        this.cancels.delete(cancel);
        if (!this.dead) reject(abortReason(signal));
      };
      const cancel = this.time.after(ms, () => {
        this.cancels.delete(cancel);
        signal?.removeEventListener('abort', onAbort);
        if (!this.dead) resolve();
      });
      this.cancels.add(cancel);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  kill(): void {
    this.dead = true;
    for (const cancel of this.cancels) cancel();
    this.cancels.clear();
  }
}
