// The fleet as the node about to take a slot judges it, from what no single token of ours can forge
// (DESIGN §12): which Nodes are not Ready (their kubelets and the node lifecycle controller write
// that), cordoned, quarantined, and the size of this node's group. It is read by that node only, at
// each hand-off, never by a waiter (DESIGN §13), and it decides: the coordinator's Lease may hold a
// node back earlier (its turn), never let one past these gates (docs/advisor.md).
//
// What it reads, each a Table of rows (node-table.ts: about 230 bytes a Node, compressed by the API
// server past 128 KB; 9 KB at 1,000 Nodes), from the API server's watch cache:
// - every Node: readiness and cordon (--count-unavailable, --max-unhealthy-nodes, --concurrency N%);
// - with --group-concurrency, the Nodes of this node's group (its size and its unhealthy nodes);
// - with --max-quarantined, the quarantined Nodes (by label).
// A read that fails fails the acquisition (the node waits, with the error as its reason): unknown is
// not "healthy". The workers ahead of a control-plane node (--control-plane-last, first come only)
// need the nodes' statuses: one list of the whole Nodes, for that node only.
import type { Clock } from '../clock/clock.js';
import { TimedReads } from './timed-reads.js';
import type { Kube } from '../kube/kube.js';
import type { NodeRow } from '../kube/kube.js';
import { QUARANTINE_LABEL } from '../node/quarantine.js';
import { fleetHealth, judgeNode } from './fleet-judge.js';

/** A read is reused this long by one agent's questions before it acquires (a pre-flight, a waiter's pass); an acquisition reads afresh. */
export const CENSUS_CACHE_MS = 10_000;

/** Why a node counts as unhealthy, from its row. */
type Unwell = 'not ready' | 'cordoned';

/** A node that is not Ready, or cordoned (by anyone: the caller leaves out its own cycles). */
interface UnwellNode {
  name: string;
  why: Unwell;
}

/**
 * How old a read an acquisition's first attempt may judge from: its pass's pre-flight's. Far below
 * what readiness itself lags (the node lifecycle controller marks a silent kubelet's node NotReady
 * after a 40 s grace period), so it hides no node the API server already shows down; the 10 s
 * reuse of CENSUS_CACHE_MS would.
 */
export const FRESH_CENSUS_MS = 2_000;

/** What the census found. */
export interface Census {
  /** The Nodes in all. */
  total: number;
  /** Every Node that is not Ready or is cordoned, sorted by name. */
  unhealthy: readonly UnwellNode[];
  /** With a group asked for: its Nodes (for its size and which of the unhealthy are in it). */
  group?: { name: string; members: ReadonlySet<string> };
  /** With quarantine asked for: the quarantined Nodes, sorted. */
  quarantined?: readonly string[];
  /** With the workers asked for: those still wanting their reboot or in their cycle, and the agents that have reported. */
  workers?: { count: number; names: string[]; reported: number };
}

/** What one acquisition asks of the census. */
export interface CensusAsk {
  /** This node's --group-label value, when its group's size or members matter. */
  group?: string;
  /** The quarantined nodes (--max-quarantined). */
  quarantine?: boolean;
  /** The workers ahead of the control plane (a control-plane node, first come). */
  workers?: boolean;
  /** The least number of Nodes there are: the lock DaemonSet's desiredNumberScheduled, when known. */
  atLeast?: number;
}

export interface FleetCensusOptions {
  kube: Kube;
  clock: Clock;
  /** This node: every whole read of the fleet (and of its group) must hold it. */
  nodeId: string;
  /** --group-label when --group-concurrency is set. */
  groupLabel: string | undefined;
}

/** Why a row is unhealthy; undefined when Ready and schedulable. */
function unwell(row: NodeRow): Unwell | undefined {
  if (!row.ready) return 'not ready';
  return row.unschedulable ? 'cordoned' : undefined;
}

/** The label selector of a group: its value, or the nodes without the label for ''. */
export function groupSelector(label: string, group: string): string {
  return group === '' ? `!${label}` : `${label}=${group}`;
}

/** The fleet as one agent's acquisition sees it; see the file comment. */
export class FleetCensus {
  private readonly reads: TimedReads;

  constructor(private readonly o: FleetCensusOptions) {
    this.reads = new TimedReads(o.clock, CENSUS_CACHE_MS);
  }

  /** Forgets the reads older than `olderThanMs` (all by default): an acquisition's attempt, DaemonSetLock.acquire. */
  forget(olderThanMs = 0): void {
    this.reads.forget(olderThanMs);
  }

  /** The census for `ask` (each part read at most once per CENSUS_CACHE_MS). */
  async read(ask: CensusAsk, signal?: AbortSignal): Promise<Census> {
    const rows = await this.rows('all', {}, signal);
    this.whole(rows, 'the list of the Nodes', ask.atLeast);
    const census: Census = {
      total: rows.length,
      unhealthy: rows
        .flatMap((r) => {
          const why = unwell(r);
          return why === undefined ? [] : [{ name: r.name, why }];
        })
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    };
    const label = this.o.groupLabel;
    if (ask.group !== undefined && label !== undefined) {
      const selector = groupSelector(label, ask.group);
      const members = await this.rows(`group ${selector}`, { labelSelector: selector }, signal);
      this.whole(members, `the list of the Nodes of group ${JSON.stringify(ask.group)}`);
      census.group = { name: ask.group, members: new Set(members.map((r) => r.name)) };
      // a member seen unhealthy in its group's read counts even if the read of all missed it
      const known = new Set(census.unhealthy.map((n) => n.name));
      const more = members.flatMap((r) => {
        const why = unwell(r);
        return why === undefined || known.has(r.name) ? [] : [{ name: r.name, why }];
      });
      if (more.length > 0) census.unhealthy = [...census.unhealthy, ...more];
    }
    if (ask.quarantine === true) {
      const quarantined = await this.rows('quarantined', { labelSelector: QUARANTINE_LABEL }, signal);
      census.quarantined = quarantined.map((r) => r.name).sort();
    }
    if (ask.workers === true) census.workers = await this.workers(signal);
    return census;
  }

  /**
   * Throws unless `rows` can be the whole of what was asked: this node among them, no name twice, and
   * at least `atLeast` of them. A list that misses nodes would read as a fleet with fewer down.
   */
  private whole(rows: readonly NodeRow[], what: string, atLeast?: number): void {
    const names = new Set(rows.map((r) => r.name));
    if (!names.has(this.o.nodeId)) throw new Error(`${what} does not hold this node (${this.o.nodeId})`);
    if (names.size !== rows.length) throw new Error(`${what} names a Node twice`);
    if (atLeast !== undefined && rows.length < atLeast)
      throw new Error(`${what} holds ${rows.length} Nodes, fewer than the ${atLeast} the DaemonSet runs on`);
  }

  /** Rows of the Nodes `selector` selects, from the watch cache, reused for CENSUS_CACHE_MS. */
  private async rows(
    key: string,
    selector: { labelSelector?: string },
    signal?: AbortSignal,
  ): Promise<NodeRow[]> {
    return this.reads.get(key, () => this.o.kube.listNodeRows({ ...selector, resourceVersion: '0' }, signal));
  }

  /** The workers ahead of the control plane: one list of the whole Nodes (their statuses tell). */
  private workers(signal?: AbortSignal): Promise<{ count: number; names: string[]; reported: number }> {
    return this.reads.get('workers', async () => {
      const nodes = await this.o.kube.listNodes({ resourceVersion: '0' }, signal);
      const health = fleetHealth(
        nodes.map((n) => judgeNode(n)),
        nodes.length,
      );
      const ahead = health.workersAhead ?? { count: 0, names: [] };
      return { ...ahead, reported: health.reported ?? 0 };
    });
  }
}
