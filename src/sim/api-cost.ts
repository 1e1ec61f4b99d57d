// What a simulation cost the API server, by verb and resource, as kube-apiserver's own
// apiserver_request_total{verb,resource} counts it: get, list, watch, create, patch, update, delete
// of nodes, pods, pods/eviction, daemonsets, leases, events, poddisruptionbudgets. The table in
// bench/RESULTS.md comes from here (simulate's report and `npm run bench -- --only=cost`).
//
// Requests are counted where they arrive (the fake API server's record of each, with its caller's node
// claim: an agent's requests are its node's); the simulator's watches, delivered from the server's write
// feed instead of a streaming response (tracked-kube.ts), are counted where they start.
import type { RecordedRequest } from './fake-api-server.js';
import { parseRoute } from './fake-api/routes.js';

/** Requests and the bytes answered for one verb and resource. */
export interface CostRow {
  verb: string;
  resource: string;
  requests: number;
  /** Response bodies, and for watches the events streamed. */
  bytes: number;
}

/**
 * Who asked: one node's agent (by its node claim), every agent, or anyone else (the coordinator, the
 * simulated operators; and the agents too in a run without the admission policy, whose agents share
 * the admin's identity).
 */
export type Asker = { agent: string } | 'agents' | 'other';

/** A watch the simulator delivered from the write feed, as counted by tracked-kube.ts. */
export interface FeedWatchCost {
  /** The agent's node, or undefined for the coordinator and other clients. */
  owner: string | undefined;
  resource: string;
  watches: number;
  bytes: number;
}

/** The resource of a path as kube names it in its metrics: `pods`, `pods/eviction`, `nodes`. */
function resourceOf(path: string): string {
  const route = parseRoute(path);
  if (route === undefined) return path;
  return route.subresource === undefined ? route.def.name : `${route.def.name}/${route.subresource}`;
}

/** kube's verb for an HTTP request: watch and list are GETs of a collection, get one of an object. */
export function verbOf(request: Pick<RecordedRequest, 'method' | 'path' | 'query'>): {
  verb: string;
  resource: string;
} {
  const resource = resourceOf(request.path);
  switch (request.method) {
    case 'GET': {
      const watch = request.query.watch === 'true' || request.query.watch === '1';
      const object = parseRoute(request.path)?.name !== undefined;
      return { verb: watch ? 'watch' : object ? 'get' : 'list', resource };
    }
    case 'POST':
      return { verb: request.query.dryRun === 'All' ? 'create (dry run)' : 'create', resource };
    case 'PUT':
      return { verb: 'update', resource };
    default:
      return { verb: request.method.toLowerCase(), resource };
  }
}

/** Accumulates rows keyed by verb and resource. */
class Rows {
  private readonly rows = new Map<string, CostRow>();

  add(verb: string, resource: string, requests: number, bytes: number): void {
    const key = `${verb} ${resource}`;
    const row = this.rows.get(key) ?? { verb, resource, requests: 0, bytes: 0 };
    row.requests += requests;
    row.bytes += bytes;
    this.rows.set(key, row);
  }

  /** Most requests first. */
  list(): CostRow[] {
    return [...this.rows.values()].sort(
      (a, b) => b.requests - a.requests || b.bytes - a.bytes || a.verb.localeCompare(b.verb),
    );
  }
}

/** Does `asker` select this caller (a node claim, or none)? */
function selects(asker: Asker | undefined, node: string | undefined): boolean {
  if (asker === undefined) return true;
  if (asker === 'other') return node === undefined;
  if (asker === 'agents') return node !== undefined;
  return node === asker.agent;
}

/**
 * The cost table of `requests` and the feed's watches, of everyone (asker undefined), of one node's
 * agent, or of everyone else.
 */
export function costRows(
  requests: readonly Pick<RecordedRequest, 'method' | 'path' | 'query' | 'bytes' | 'node'>[],
  feedWatches: readonly FeedWatchCost[],
  asker?: Asker,
): CostRow[] {
  const rows = new Rows();
  for (const r of requests) {
    if (!selects(asker, r.node)) continue;
    const { verb, resource } = verbOf(r);
    rows.add(verb, resource, 1, r.bytes ?? 0);
  }
  for (const w of feedWatches) {
    if (selects(asker, w.owner)) rows.add('watch', w.resource, w.watches, w.bytes);
  }
  return rows.list();
}

/** The cost table of each node's agent, by node name, in one pass over the requests. */
export function costRowsByNode(
  requests: readonly Pick<RecordedRequest, 'method' | 'path' | 'query' | 'bytes' | 'node'>[],
  feedWatches: readonly FeedWatchCost[],
): Record<string, CostRow[]> {
  const byNode = new Map<string, Rows>();
  const rowsOf = (node: string): Rows => {
    let rows = byNode.get(node);
    if (rows === undefined) {
      rows = new Rows();
      byNode.set(node, rows);
    }
    return rows;
  };
  for (const r of requests) {
    if (r.node === undefined) continue;
    const { verb, resource } = verbOf(r);
    rowsOf(r.node).add(verb, resource, 1, r.bytes ?? 0);
  }
  for (const w of feedWatches)
    if (w.owner !== undefined) rowsOf(w.owner).add('watch', w.resource, w.watches, w.bytes);
  return Object.fromEntries(
    [...byNode].sort(([a], [b]) => a.localeCompare(b)).map(([node, rows]) => [node, rows.list()]),
  );
}

/** The sum of a table. */
export function costTotal(rows: readonly CostRow[]): { requests: number; bytes: number } {
  return rows.reduce((t, r) => ({ requests: t.requests + r.requests, bytes: t.bytes + r.bytes }), {
    requests: 0,
    bytes: 0,
  });
}

/** The table as lines of text, `per` dividing every figure (the nodes of the fleet: per node). */
export function formatCost(rows: readonly CostRow[], per: number, title: string): string[] {
  const total = costTotal(rows);
  const n = Math.max(1, per);
  const cell = (x: number): string => (x / n >= 10 ? (x / n).toFixed(0) : (x / n).toFixed(1));
  const kb = (bytes: number): string => cell(bytes / 1000);
  const lines = [
    `  ${title}`,
    `    ${'verb resource'.padEnd(40)}${'requests'.padStart(10)}${'KB'.padStart(10)}`,
  ];
  for (const r of rows) {
    lines.push(
      `    ${`${r.verb} ${r.resource}`.padEnd(40)}${cell(r.requests).padStart(10)}${kb(r.bytes).padStart(10)}`,
    );
  }
  lines.push(`    ${'all'.padEnd(40)}${cell(total.requests).padStart(10)}${kb(total.bytes).padStart(10)}`);
  return lines;
}
