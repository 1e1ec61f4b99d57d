// A discrete-event model of a rolling reboot's lock hand-off: how long a wave takes when every node's
// own work is fixed, for an agent that wakes when the lock frees (kured-ts, watch) and for one that
// notices only on its next jittered tick (kured: rebootAsRequired polls every --period).
// Used by the benchmark for cluster sizes where running every real agent would be slow, and to
// check the real simulation against. No I/O, no clocks: a pure function of its inputs and seed.
import { forkRandom } from '../src/sim/random.js';

export interface RollingModelInput {
  nodes: number;
  concurrency: number;
  periodMs: number;
  /** Per-node work while holding the lock (drain + reboot delay + shutdown + boot + agent start). */
  workMs: number;
  /** 'watch': waiters wake on release, spread over up to 1 s by the lock (HERD_SPREAD_MS); 'poll': next tick only. */
  wakeUp: 'watch' | 'poll';
  /**
   * First lock attempt within this long of the start. kured-ts: its start-up pass (taint, repair,
   * a held slot's cycle) runs at once, and only the first lock attempt is jittered within
   * min(period, 1m); kured: its first tick comes after a jittered period.
   */
  firstTickMaxMs: number;
  seed: number;
}

export interface RollingModelResult {
  /** First lock → last release. */
  rollingMs: number;
  /** nodes * work / concurrency. */
  lowerBoundMs: number;
  /** Start → last release. */
  makespanMs: number;
}

interface Ev {
  at: number;
  seq: number;
  node: number;
  kind: 'tick' | 'release';
}

/** Runs the model to the end of the wave. */
export function runRollingModel(input: RollingModelInput): RollingModelResult {
  return new RollingModel(input).run();
}

class RollingModel {
  private readonly random: () => number;
  private readonly events: Ev[] = [];
  private seq = 0;
  private readonly waiting = new Set<number>();
  private readonly done = new Set<number>();
  private free: number;
  private firstLock = Infinity;
  private last = 0;

  constructor(private readonly input: RollingModelInput) {
    this.random = forkRandom(input.seed, `model-${input.wakeUp}`);
    this.free = input.concurrency;
  }

  run(): RollingModelResult {
    const { input } = this;
    for (let n = 0; n < input.nodes; n++) this.push(this.random() * input.firstTickMaxMs, n, 'tick');
    while (this.events.length > 0 && this.done.size < input.nodes) {
      this.events.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const ev = this.events.shift() as Ev;
      if (ev.kind === 'release') this.release(ev);
      else this.tick(ev);
    }
    return {
      rollingMs: this.last - (Number.isFinite(this.firstLock) ? this.firstLock : 0),
      lowerBoundMs: (input.nodes * input.workMs) / input.concurrency,
      makespanMs: this.last,
    };
  }

  private push(at: number, node: number, kind: Ev['kind']): void {
    this.events.push({ at, seq: this.seq++, node, kind });
  }

  private release(ev: Ev): void {
    this.free++;
    this.done.add(ev.node);
    this.last = ev.at;
    if (this.input.wakeUp !== 'watch') return;
    const spread = 1000; // DaemonSetLock's HERD_SPREAD_MS (the agent adds no pause of its own)
    for (const w of this.waiting) this.push(ev.at + this.random() * spread, w, 'tick');
  }

  private tick(ev: Ev): void {
    if (this.done.has(ev.node) || holding(this.events, ev.node)) return;
    if (this.free > 0) {
      this.free--;
      this.waiting.delete(ev.node);
      this.firstLock = Math.min(this.firstLock, ev.at);
      dropTicks(this.events, ev.node);
      this.push(ev.at + this.input.workMs, ev.node, 'release');
      return;
    }
    this.waiting.add(ev.node);
    if (this.input.wakeUp === 'poll' || !hasTick(this.events, ev.node))
      this.push(ev.at + this.input.periodMs * (0.5 + this.random()), ev.node, 'tick');
  }
}

function holding(events: Ev[], node: number): boolean {
  return events.some((e) => e.node === node && e.kind === 'release');
}

function hasTick(events: Ev[], node: number): boolean {
  return events.some((e) => e.node === node && e.kind === 'tick');
}

function dropTicks(events: Ev[], node: number): void {
  for (let i = events.length - 1; i >= 0; i--)
    if (events[i]?.node === node && events[i]?.kind === 'tick') events.splice(i, 1);
}
