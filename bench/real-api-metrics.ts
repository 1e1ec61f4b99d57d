// What kube-apiserver's own /metrics says about a window of the benchmark: requests by verb and
// resource, response bytes (answers and watch events), its CPU seconds and the watches open. The
// server's self-requests (apiserver_selfrequest_total) and the benchmark's own traffic (counted by
// AdminClient) are taken out, so what remains is what the agents and coordinators cost.
import { readFileSync } from 'node:fs';
import type { AdminClient, OwnTraffic } from './real-api-admin.js';

/** One scrape, reduced to what the benchmark reports. */
export interface Snapshot {
  atMs: number;
  /** Completed resource requests by "VERB resource[/subresource]" (WATCH counted when it ends). */
  requests: Map<string, number>;
  /** The server's requests to itself, same keys. */
  self: Map<string, number>;
  /** Watches open now, by resource. */
  watching: Map<string, number>;
  /** apiserver_response_sizes_sum over resource requests (watches report 0 here). */
  responseBytes: number;
  /** The same by "VERB resource[/subresource]". */
  bytesByKind: Map<string, number>;
  /** apiserver_watch_events_sizes_sum: every event sent to every watcher. */
  watchBytes: number;
  watchEvents: number;
  /** Objects read (from the watch cache or etcd) to serve LISTs, and returned by them. */
  listRead: number;
  listReturned: number;
  /** Requests API Priority and Fairness turned away (429). */
  rejected: number;
  cpuSeconds: number;
  rssBytes: number;
  /** etcd's CPU seconds from /proc (utime + stime). */
  etcdCpuSeconds: number;
  /** This benchmark process's CPU seconds (its agents, coordinators and observer): is it the bottleneck? */
  benchCpuSeconds: number;
  own: OwnTraffic;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? ([^ ]+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

function labelsOf(text: string | undefined): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const m of (text ?? '').matchAll(LABEL)) labels[m[1] ?? ''] = m[2] ?? '';
  return labels;
}

function keyOf(l: Record<string, string>): string {
  const sub = l.subresource === undefined || l.subresource === '' ? '' : `/${l.subresource}`;
  return `${l.verb ?? ''} ${l.resource ?? ''}${sub}`;
}

function add(map: Map<string, number>, key: string, value: number): void {
  map.set(key, (map.get(key) ?? 0) + value);
}

/** utime + stime of `pid` in seconds (0 when it cannot be read). */
function procCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

type Collect = (s: Snapshot, l: Record<string, string>, value: number) => void;

const COLLECT: Record<string, Collect> = {
  apiserver_request_total: (s, l, v) => {
    if (l.resource !== '') add(s.requests, keyOf(l), v);
  },
  apiserver_selfrequest_total: (s, l, v) => {
    if (l.resource !== '') add(s.self, keyOf(l), v);
  },
  apiserver_longrunning_requests: (s, l, v) => {
    if (l.verb === 'WATCH') add(s.watching, l.resource ?? '', v);
  },
  apiserver_response_sizes_sum: (s, l, v) => {
    if (l.resource === '') return;
    s.responseBytes += v;
    add(s.bytesByKind, keyOf(l), v);
  },
  apiserver_watch_events_sizes_sum: (s, _l, v) => {
    s.watchBytes += v;
  },
  apiserver_watch_events_total: (s, _l, v) => {
    s.watchEvents += v;
  },
  apiserver_flowcontrol_rejected_requests_total: (s, _l, v) => {
    s.rejected += v;
  },
  apiserver_cache_list_fetched_objects_total: (s, _l, v) => {
    s.listRead += v;
  },
  apiserver_storage_list_fetched_objects_total: (s, _l, v) => {
    s.listRead += v;
  },
  apiserver_cache_list_returned_objects_total: (s, _l, v) => {
    s.listReturned += v;
  },
  apiserver_storage_list_returned_objects_total: (s, _l, v) => {
    s.listReturned += v;
  },
  process_cpu_seconds_total: (s, _l, v) => {
    s.cpuSeconds = v;
  },
  process_resident_memory_bytes: (s, _l, v) => {
    s.rssBytes = v;
  },
};

/** Reads the Prometheus text of /metrics into a Snapshot. */
function parseMetrics(text: string, atMs: number, own: OwnTraffic, etcdCpuSeconds: number): Snapshot {
  const s: Snapshot = {
    atMs,
    requests: new Map(),
    self: new Map(),
    watching: new Map(),
    responseBytes: 0,
    bytesByKind: new Map(),
    watchBytes: 0,
    watchEvents: 0,
    listRead: 0,
    listReturned: 0,
    rejected: 0,
    cpuSeconds: 0,
    rssBytes: 0,
    etcdCpuSeconds,
    benchCpuSeconds: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
    own,
  };
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    const collect = m ? COLLECT[m[1] ?? ''] : undefined;
    if (m && collect) collect(s, labelsOf(m[2]), Number(m[3]));
  }
  return s;
}

export async function scrape(admin: AdminClient, etcdPid: number): Promise<Snapshot> {
  const own = admin.ownSoFar();
  const text = await admin.metrics();
  return parseMetrics(text, Date.now(), own, procCpuSeconds(etcdPid));
}

/** What a window between two snapshots cost, the benchmark's own traffic and self-requests taken out. */
export interface WindowCost {
  seconds: number;
  /** Requests (watches counted when they start) by "VERB resource". */
  byKind: Map<string, number>;
  /**
   * Response bytes by "VERB resource" (the server's counter: compressed bytes where it compressed;
   * the benchmark's own answers included, which it makes few of).
   */
  bytesByKind: Map<string, number>;
  requests: number;
  /** Response bytes plus watch event bytes. */
  bytes: number;
  watchBytes: number;
  /** Objects the server read to answer LISTs, and returned (the benchmark's own lists included). */
  listRead: number;
  listReturned: number;
  /** Requests turned away by API Priority and Fairness (429), the benchmark's own included. */
  rejected: number;
  cpuSeconds: number;
  etcdCpuSeconds: number;
  /** Watches open at the end (all clients, the server's own informers and the observer's included). */
  watchesOpen: number;
  /** kube-apiserver's CPU seconds with its idle share, and this benchmark process's (their shares of the machine). */
  apiserverCpuSeconds: number;
  benchCpuSeconds: number;
}

function total(map: ReadonlyMap<string, number>): number {
  let sum = 0;
  for (const v of map.values()) sum += v;
  return sum;
}

/**
 * Requests between `a` and `b` by kind: completed ones, plus watches opened and still open; the
 * server's self-requests and the benchmark's own taken out.
 */
function requestsBetween(a: Snapshot, b: Snapshot): Map<string, number> {
  const byKind = new Map<string, number>();
  for (const [k, v] of b.requests) add(byKind, k, v - (a.requests.get(k) ?? 0));
  for (const [k, v] of b.self) add(byKind, k, -(v - (a.self.get(k) ?? 0)));
  for (const [resource, open] of b.watching)
    add(byKind, `WATCH ${resource}`, open - (a.watching.get(resource) ?? 0));
  for (const [resource, open] of a.watching)
    if (!b.watching.has(resource)) add(byKind, `WATCH ${resource}`, -open);
  for (const [k, v] of b.own.byKind) add(byKind, k, -(v - (a.own.byKind.get(k) ?? 0)));
  for (const [k, v] of byKind) if (Math.abs(v) < 0.5) byKind.delete(k);
  return byKind;
}

/**
 * The cost of the window a → b. `idleCpuPerSecond` (the server's CPU with nothing running, measured
 * before the agents start) is taken out of the CPU seconds.
 */
export function windowCost(a: Snapshot, b: Snapshot, idleCpuPerSecond: number): WindowCost {
  const seconds = (b.atMs - a.atMs) / 1000;
  const byKind = requestsBetween(a, b);
  const ownBytes = b.own.bytes - a.own.bytes;
  const watchBytes = b.watchBytes - a.watchBytes;
  const bytesByKind = new Map<string, number>();
  for (const [k, v] of b.bytesByKind) {
    const d = v - (a.bytesByKind.get(k) ?? 0);
    if (d > 0) bytesByKind.set(k, d);
  }
  return {
    seconds,
    byKind,
    bytesByKind,
    requests: total(byKind),
    bytes: b.responseBytes - a.responseBytes + watchBytes - ownBytes,
    watchBytes,
    listRead: b.listRead - a.listRead,
    listReturned: b.listReturned - a.listReturned,
    rejected: b.rejected - a.rejected,
    cpuSeconds: Math.max(0, b.cpuSeconds - a.cpuSeconds - idleCpuPerSecond * seconds),
    etcdCpuSeconds: b.etcdCpuSeconds - a.etcdCpuSeconds,
    apiserverCpuSeconds: b.cpuSeconds - a.cpuSeconds,
    benchCpuSeconds: b.benchCpuSeconds - a.benchCpuSeconds,
    watchesOpen: total(b.watching),
  };
}
