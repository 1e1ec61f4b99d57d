// `kured-ts status --watch`: the first listing, then what changes as it changes, from a watch of the
// nodes and of the lock's DaemonSet (no polling). On a terminal the table is redrawn; into a pipe,
// as `kubectl get -w` does, only the rows that changed are printed (with the first table's column
// widths); -o json/yaml print the whole report again, one document per change.
//
// A watch that ends is followed by a fresh list (a node deleted while no watch was open disappears)
// and a new watch; watches that keep failing back off from 1 s to 30 s, as the agent's lock watch.
import type { Clock } from '../clock/clock.js';
import type { V1Node } from '../kube/kube.js';
import { backoffMs } from '../kube/retry.js';
import {
  LockWatch,
  WATCH_BASE_BACKOFF_MS,
  WATCH_HEALTHY_MS,
  WATCH_MAX_BACKOFF_MS,
} from '../lock/lock-watch.js';
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
export class StatusPrinter {
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

interface NodeFollow {
  io: WatchIo;
  nodes: Map<string, V1Node>;
  changed: () => void;
  signal: AbortSignal;
  clock: Clock;
  random: () => number;
}

/** One watch of the nodes until it ends; false when it failed or ended before WATCH_HEALTHY_MS. */
async function watchNodesOnce(f: NodeFollow): Promise<boolean> {
  const started = f.clock.now().getTime();
  let failed = false;
  try {
    await f.io.kube.watchNodes(
      (event) => {
        const name = event.object.metadata?.name ?? '';
        if (event.type === 'ERROR') failed = true;
        else if (event.type === 'DELETED') f.nodes.delete(name);
        else if (event.type !== 'BOOKMARK') f.nodes.set(name, event.object);
        f.changed();
      },
      { signal: f.signal },
    );
  } catch {
    failed = true;
  }
  return !failed && f.clock.now().getTime() - started >= WATCH_HEALTHY_MS;
}

/** A fresh list of the nodes replaces what the watch built; false when it failed. */
async function relist(f: NodeFollow): Promise<boolean> {
  try {
    const list = await f.io.kube.listNodes({}, AbortSignal.any([f.signal, commandSignal(f.io.timeoutMs)]));
    f.nodes.clear();
    for (const node of list) f.nodes.set(node.metadata?.name ?? '', node);
    f.changed();
    return true;
  } catch {
    return false;
  }
}

/** Watches the nodes until the signal aborts: watch, re-list, back off while they keep failing. */
async function followNodes(f: NodeFollow): Promise<void> {
  let failures = 0;
  const stopped = (): boolean => f.signal.aborted;
  while (!stopped()) {
    const healthy = await watchNodesOnce(f);
    if (stopped()) return;
    const listed = await relist(f);
    failures = healthy && listed ? 0 : failures + 1;
    if (failures > 0) {
      const ms = backoffMs(failures, WATCH_BASE_BACKOFF_MS, WATCH_MAX_BACKOFF_MS, f.random);
      await f.clock.sleep(ms, f.signal).catch(() => undefined);
    }
  }
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
  const random = io.random ?? Math.random;
  const lockWatch = new LockWatch({
    kube: io.kube,
    namespace: options.dsNamespace,
    name: options.dsName,
    clock,
    log: silentLogger,
    random,
  });
  const following = followNodes({ io, nodes, changed, signal, clock, random });
  const end = await lockWatch.follow(
    ds,
    (latest) => {
      ds = latest;
      changed();
    },
    signal,
  );
  stop.abort();
  await following;
  if (end === 'deleted' && io.signal?.aborted !== true) {
    err(`DaemonSet ${options.dsNamespace}/${options.dsName} was deleted: nothing left to watch`);
    return EXIT_FAILURE;
  }
  return EXIT_OK;
}
