// The wave as the node about to take a slot counts it, from what each node says of itself in its own
// labels (src/node/wave.ts, written by its own agent only) and the readiness its kubelet reports:
// who of this wave has gone, who has settled (back and Ready for --soak, or failed), who failed, and
// with --group-order sequential which groups are still busy or wait before this one. Read by that
// node only, never by a waiter (DESIGN §13), and never from the coordinator (DESIGN §12).
//
// Each read is a label-selected list of printed rows (node-table.ts, ~230 bytes a Node) read fresh
// (not from the watch cache), reused for CENSUS_CACHE_MS so that the PDB pre-flight and the
// acquisition after it share one:
// - the slow start: the wave's nodes out of their cycle (back, soaked or failed), those in their
//   cycle, those soaked: as many rows as nodes of the wave have gone, which stops growing once the
//   slow start is over (the asking node then reads none of it);
// - the budget: the wave's failed nodes (a few rows);
// - the group order: the wave's nodes of other groups in their cycle or back, and, one group at a
//   time, a waiting node of another group (one Node, `limit=1`) until one ranks before this node's
//   group or none is left: at most as many small reads as there are groups.
import type { Clock } from '../clock/clock.js';
import type { WaveSettings } from './settings.js';
import type { Kube, NodeRow } from '../kube/kube.js';
import { CYCLE_LABEL } from '../node/cycle.js';
import { QUARANTINE_LABEL } from '../node/quarantine.js';
import { WAVE_LABEL, WAVE_STATE_LABEL } from '../node/wave.js';
import { CENSUS_CACHE_MS } from './fleet-census.js';
import { TimedReads } from './timed-reads.js';

/** What one acquisition asks of its wave. */
export interface WaveAsk {
  wave: string;
  /** The slow start's counts (who has gone, who settled). */
  steps: boolean;
  /** The failed nodes (the budget, and the group order passes over them). */
  failed: boolean;
  /** --group-order sequential: this node's group and how groups rank. */
  order?: { label: string; group: string; before: (a: string, b: string) => boolean };
}

/** What it found (the asking node left out). */
export interface WaveCount {
  /** The nodes of the wave that took a slot and began their cycle (or are done with it). */
  entered: string[];
  /** Of those: soaked and Ready, or failed. */
  settled: string[];
  /** The wave's failed nodes. */
  failed: string[];
  /** With the order asked: the busy nodes of other groups, and a waiting node of a group before this one. */
  order?: { busy: string[]; earlier?: { group: string; node: string } };
}

/** Groups looked at, at most, for one that goes before this node's (a bound, not a limit of design). */
const MAX_GROUPS = 32;

/** `label=value` of the wave, plus `more`. */
function selector(wave: string, ...more: string[]): string {
  return [`${WAVE_LABEL}=${wave}`, ...more].join(',');
}

/** The selector of the nodes not in `group` (nor in `others`): the other groups, the unlabelled ones last. */
function outside(label: string, groups: readonly string[]): string {
  const named = groups.filter((g) => g !== '');
  const unlabelled = groups.includes('');
  // `notin` also selects the nodes without the label; `label` alone only those with it
  if (unlabelled) return named.length === 0 ? label : `${label},${label} notin (${named.join(',')})`;
  return named.length === 0 ? '' : `${label} notin (${named.join(',')})`;
}

export class WaveCensus {
  private readonly reads: TimedReads;

  constructor(private readonly o: { kube: Kube; clock: Clock; nodeId: string }) {
    this.reads = new TimedReads(o.clock, CENSUS_CACHE_MS);
  }

  /**
   * Forgets the reads older than `olderThanMs` (every read by default): the next question reads
   * them afresh (an acquisition's attempt, DaemonSetLock.acquire).
   */
  forget(olderThanMs = 0): void {
    this.reads.forget(olderThanMs);
  }

  async read(ask: WaveAsk, signal?: AbortSignal): Promise<WaveCount> {
    const failed =
      ask.failed || ask.steps || ask.order !== undefined ? await this.failed(ask.wave, signal) : [];
    const count: WaveCount = { entered: [], settled: [], failed };
    if (ask.steps) {
      const [out, inCycle, soaked] = await Promise.all([
        this.rows(selector(ask.wave, `${WAVE_STATE_LABEL} in (back,soaked,failed)`), signal),
        this.rows(selector(ask.wave, `${CYCLE_LABEL}=true`), signal),
        this.rows(selector(ask.wave, `${WAVE_STATE_LABEL}=soaked`), signal),
      ]);
      count.entered = this.names([...out, ...inCycle]);
      count.settled = this.names([...soaked.filter((r) => r.ready), ...failed.map((name) => ({ name }))]);
    }
    if (ask.order !== undefined) count.order = await this.order(ask.wave, ask.order, failed, signal);
    return count;
  }

  /** The wave's failed nodes. */
  private async failed(wave: string, signal?: AbortSignal): Promise<string[]> {
    return this.names(await this.rows(selector(wave, `${WAVE_STATE_LABEL}=failed`), signal));
  }

  /** The busy nodes of the other groups, and a waiting node of a group that ranks before this one. */
  private async order(
    wave: string,
    order: NonNullable<WaveAsk['order']>,
    failed: readonly string[],
    signal?: AbortSignal,
  ): Promise<NonNullable<WaveCount['order']>> {
    const others = outside(order.label, [order.group]);
    const [cycling, back] = await Promise.all([
      this.rows(selector(wave, `${CYCLE_LABEL}=true`, others), signal),
      this.rows(selector(wave, `${WAVE_STATE_LABEL}=back`, others), signal),
    ]);
    // a failed node does not hold its group: the budget, not the order, stops a wave on failures
    const gone = new Set(failed);
    const busy = this.names([...cycling, ...back]).filter((n) => !gone.has(n));
    const earlier = await this.earlier(wave, order, signal);
    return { busy, ...(earlier === undefined ? {} : { earlier }) };
  }

  /**
   * A waiting node of the wave (not quarantined: a group whose last nodes are quarantined is done) in
   * a group that ranks before this node's: one Node at a time, each read leaving out the groups seen.
   */
  private async earlier(
    wave: string,
    order: NonNullable<WaveAsk['order']>,
    signal?: AbortSignal,
  ): Promise<{ group: string; node: string } | undefined> {
    const seen = [order.group];
    for (let i = 0; i < MAX_GROUPS; i++) {
      const labelSelector = selector(
        wave,
        `${WAVE_STATE_LABEL}=waiting`,
        `!${QUARANTINE_LABEL}`,
        outside(order.label, seen),
      );
      const page = await this.o.kube.listNodesPage({ labelSelector, limit: 1 }, signal);
      const node = page.items[0];
      if (node === undefined) return undefined;
      const group = node.metadata?.labels?.[order.label] ?? '';
      if (order.before(group, order.group)) return { group, node: node.metadata?.name ?? '' };
      if (seen.includes(group)) return undefined; // a server that ignores the selector: stop
      seen.push(group);
    }
    return undefined;
  }

  /** The names of `rows`, this node's left out, each once, sorted. */
  private names(rows: readonly Pick<NodeRow, 'name'>[]): string[] {
    return [...new Set(rows.map((r) => r.name).filter((n) => n !== '' && n !== this.o.nodeId))].sort();
  }

  /** Rows of the Nodes `labelSelector` selects, read fresh, reused for CENSUS_CACHE_MS. */
  private rows(labelSelector: string, signal?: AbortSignal): Promise<NodeRow[]> {
    return this.reads.get(labelSelector, () => this.o.kube.listNodeRows({ labelSelector }, signal));
  }
}

/** The wave's gates as configured, and the census that counts them (the lock's). */
export interface WaveGateOptions extends WaveSettings {
  census: WaveCensus;
}
