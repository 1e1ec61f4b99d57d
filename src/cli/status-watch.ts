// `kured-ts status --watch`: the first listing, then what changes as it changes, from a watch of the
// nodes and of the lock's DaemonSet (no polling). On a terminal the table is redrawn; into a pipe,
// as `kubectl get -w` does, only the rows that changed are printed (with the first table's column
// widths); -o json/yaml print the whole report again, one document per change.
//
// Both are followed by reflectors (src/kube/reflector.ts): a new watch from the last version seen
// after each ends, a fresh list after 410 Gone, back-off from 1 s to 30 s while they keep failing.
import type { Clock } from '../clock/clock.js';
import type { V1DaemonSet, V1Node } from '../kube/kube.js';
import { daemonSetListWatch, nodesListWatch } from '../kube/list-watch.js';
import { Reflector, latest, type ReflectorHandler } from '../kube/reflector.js';
import { silentLogger } from '../log/logger.js';
import { formatStreamed } from './output.js';
import { EXIT_FAILURE, EXIT_OK, commandSignal, describeApiError, type CommandIo } from './shared.js';
import { buildStatus, readStatusInputs, type StatusOptions, type StatusReport } from './status.js';
import { fleetLines, formatStatus, statusCells, statusHeader } from './status-table.js';
import { columnWidths, formatRow } from './table.js';

export interface WatchIo extends CommandIo {
  /** Redraw the whole table (a terminal) rather than print changed rows. */
  isTTY: boolean;
  /** [0, 1) for the back-off jitter. Default Math.random. */
  random?: () => number;
}

/** ANSI: cursor home, clear screen. */
const CLEAR = '\x1b[H\x1b[2J';

/** Prints each new report in the chosen form, only when something visible changed. */
class StatusPrinter {
  private last = '';
  private widths: number[] | undefined;
  private readonly rows = new Map<string, string>();
  private fleet = '';

  constructor(
    private readonly output: StatusOptions['output'],
    private readonly out: (line: string) => void,
    private readonly isTTY: boolean,
    private readonly clock: Clock,
  ) {}

  show(report: StatusReport): void {
    const key = JSON.stringify(report);
    if (key === this.last) return;
    this.last = key;
    const output = this.output;
    if (output === 'json' || output === 'yaml') this.out(formatStreamed(report, output));
    else if (this.isTTY) this.redraw(report, output);
    else this.changedRows(report, output);
  }

  private redraw(report: StatusReport, output: 'table' | 'wide'): void {
    const lines = formatStatus(report, output);
    lines.push('', `updated ${this.clock.now().toISOString()}; watching for changes (Ctrl-C to stop)`);
    lines[0] = CLEAR + (lines[0] ?? '');
    for (const line of lines) this.out(line);
  }

  private changedRows(report: StatusReport, output: 'table' | 'wide'): void {
    const fleet = fleetLines(report).join('\n');
    if (this.widths === undefined) {
      const cells = report.nodes.map((r) => statusCells(r, output));
      this.widths = columnWidths(statusHeader(output), cells);
      if (fleet !== '') this.out(fleet);
      this.out(formatRow(statusHeader(output), this.widths));
    } else if (fleet !== this.fleet) {
      this.out(fleet !== '' ? fleet : 'Fleet: not paused, lock readable');
    }
    this.fleet = fleet;
    const seen = new Set<string>();
    for (const r of report.nodes) {
      seen.add(r.node);
      const row = formatRow(statusCells(r, output), this.widths);
      if (this.rows.get(r.node) !== row) this.out(row);
      this.rows.set(r.node, row);
    }
    for (const name of [...this.rows.keys()].filter((n) => !seen.has(n))) {
      this.out(`${name}   (node deleted)`);
      this.rows.delete(name);
    }
  }
}

/** Runs `render` once after the current burst of synchronous events. */
function coalesce(render: () => void): () => void {
  let pending = false;
  return () => {
    if (pending) return;
    pending = true;
    queueMicrotask(() => {
      pending = false;
      render();
    });
  };
}

/** What a reflector of the nodes keeps for the table: each node by name, `changed` after each change. */
function nodeTable(nodes: Map<string, V1Node>, changed: () => void): ReflectorHandler<V1Node> {
  return {
    replace: (items) => {
      nodes.clear();
      for (const node of items) nodes.set(node.metadata?.name ?? '', node);
      changed();
    },
    apply: (type, node) => {
      const name = node.metadata?.name ?? '';
      if (type === 'DELETED') nodes.delete(name);
      else nodes.set(name, node);
      changed();
    },
  };
}

/**
 * `kured-ts status --watch`: runs until `io.signal` aborts (0), or the DaemonSet is deleted or the
 * first read fails (1, one line on stderr).
 */
export async function watchStatus(options: StatusOptions, io: WatchIo): Promise<number> {
  const err = io.err ?? io.out;
  const stop = new AbortController();
  const signal = io.signal ? AbortSignal.any([io.signal, stop.signal]) : stop.signal;
  const clock = io.clock;
  let inputs;
  try {
    inputs = await readStatusInputs(options, io.kube, AbortSignal.any([signal, commandSignal(io.timeoutMs)]));
  } catch (e: unknown) {
    err(describeApiError(e, 'read node status'));
    return EXIT_FAILURE;
  }
  let ds = inputs.ds;
  const nodes = new Map(inputs.nodes.map((n) => [n.metadata?.name ?? '', n]));
  const printer = new StatusPrinter(options.output, io.out, io.isTTY, clock);
  const render = (): void => {
    if (!signal.aborted)
      printer.show(buildStatus(options, { ds, nodes: [...nodes.values()] }, clock.now().getTime()));
  };
  render();
  const changed = coalesce(render);
  const follow = { clock, log: silentLogger, random: io.random ?? Math.random };
  const following = new Reflector(nodesListWatch(io.kube), follow).run(nodeTable(nodes, changed), signal);
  const ended = { deleted: false };
  const from = { items: [ds], resourceVersion: ds.metadata?.resourceVersion ?? '' };
  await new Reflector(daemonSetListWatch(io.kube, options.dsNamespace, options.dsName), {
    ...follow,
    relistEachRound: true,
  }).run(
    latest<V1DaemonSet>((latestDs) => {
      if (latestDs === undefined) {
        ended.deleted = true;
        stop.abort();
        return;
      }
      ds = latestDs;
      changed();
    }),
    signal,
    { from },
  );
  stop.abort();
  await following;
  if (ended.deleted && io.signal?.aborted !== true) {
    err(`DaemonSet ${options.dsNamespace}/${options.dsName} was deleted: nothing left to watch`);
    return EXIT_FAILURE;
  }
  return EXIT_OK;
}
