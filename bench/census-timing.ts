// The fleet census as the benchmark's agents meet it (issue 59 item 2): how long each takes to read
// every Node's printed row (the census of a node about to take a slot), and how many did not answer
// within the client's deadline. A decorator on the agents' shared client, so that a row can say
// whether the census grows with N toward its deadline (a cliff) or the machine is what is slow.
import { ForwardingKube } from '../src/kube/forwarding-kube.js';
import { isTimeout } from '../src/kube/errors.js';
import type { Kube, ListOptions, NodeRow } from '../src/kube/kube.js';
import { quantile } from './quantile.js';

/** Where a timed census read is told. */
export interface CensusSink {
  answered(ms: number): void;
  failed(failure: 'timeout' | 'error'): void;
}

/** Every census read of a run: durations of those answered, and those that were not. */
export class CensusTimings implements CensusSink {
  readonly answeredMs: number[] = [];
  timeouts = 0;
  errors = 0;

  answered(ms: number): void {
    this.answeredMs.push(ms);
  }

  failed(failure: 'timeout' | 'error'): void {
    if (failure === 'timeout') this.timeouts++;
    else this.errors++;
  }

  /** "412 reads, p50/p99/max 35/240/1,180 ms, 0 past the deadline, 0 other errors". */
  toString(): string {
    const max = this.answeredMs.reduce((m, x) => Math.max(m, x), 0);
    const ms = (x: number): string => (Number.isNaN(x) ? '-' : x.toFixed(0));
    return (
      `${this.answeredMs.length + this.timeouts + this.errors} reads, p50/p99/max ` +
      `${ms(quantile(this.answeredMs, 0.5))}/${ms(quantile(this.answeredMs, 0.99))}/${ms(max)} ms, ` +
      `${this.timeouts} past the deadline, ${this.errors} other errors`
    );
  }
}

/** A client whose whole-fleet row lists (no selector: the census) are timed into `timings`. */
export class CensusTimedKube extends ForwardingKube {
  constructor(
    inner: Kube,
    private readonly timings: CensusSink,
  ) {
    super(inner, true);
  }

  override async listNodeRows(options?: ListOptions, signal?: AbortSignal): Promise<NodeRow[]> {
    const census = options?.labelSelector === undefined && options?.fieldSelector === undefined;
    if (!census) return super.listNodeRows(options, signal);
    const start = performance.now();
    try {
      const rows = await super.listNodeRows(options, signal);
      this.timings.answered(performance.now() - start);
      return rows;
    } catch (err) {
      this.timings.failed(isTimeout(err) ? 'timeout' : 'error');
      throw err;
    }
  }
}
