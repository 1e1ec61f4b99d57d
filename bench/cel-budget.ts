// The CEL budget of the checks (issue 55, item 4): a pathological --health-check / --node-check
// expression over a large tenant-writable object, evaluated on the agent's thread (before) and in
// the worker thread under its deadline (now). Meanwhile a /healthz probe is answered over loopback
// HTTP every 50 ms, as the kubelet's liveness probe would ask: its latency is what the agent's lock
// renewals and metrics see too.
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { CelEvaluator, CelOutcome } from '../src/cel/cel.js';
import { InlineCel } from '../src/cel/inline-cel.js';
import { WorkerCel } from '../src/cel/worker-cel.js';
import { out } from './common.js';
import { table } from './table.js';
import { quantile } from './quantile.js';

const QUADRATIC = 'self.items.all(a, self.items.all(b, a.n != b.n || a.name == b.name))';

/** `count` items of about 80 bytes each (13,000: about 1 MiB of JSON). */
function itemsOf(count: number): { n: number; name: string; node: string }[] {
  return Array.from({ length: count }, (_, n) => ({
    n,
    name: `pvc-${String(n).padStart(8, '0')}-aaaaaaaaaaaaaaaaaaaa`,
    node: `node-${String(n % 1000).padStart(4, '0')}`,
  }));
}

/** One probe's round trip, ms. */
function probe(port: number): Promise<number> {
  const start = performance.now();
  return new Promise((resolve) => {
    const req = request({ port, path: '/healthz' }, (res) => {
      res.resume();
      res.on('end', () => {
        resolve(performance.now() - start);
      });
    });
    req.on('error', () => {
      resolve(Number.POSITIVE_INFINITY);
    });
    req.end();
  });
}

interface Run {
  outcome: CelOutcome;
  wallMs: number;
  probes: number[];
  /** The longest the event loop was held (what a probe arriving then would wait), ms. */
  heldMs: number;
}

/** Evaluates on `cel` while a probe is sent every 50 ms to a server on this thread. */
async function measure(cel: CelEvaluator, bindings: Record<string, unknown>): Promise<Run> {
  const server = createServer((_req, res) => {
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const probes: number[] = [];
  const probing = { on: true };
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const prober = (async () => {
    while (probing.on) {
      probes.push(await probe(port));
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  // one probe already asking when the evaluation begins, as the kubelet's would be
  await new Promise((r) => setTimeout(r, 120));
  const inFlight = probe(port);
  const start = performance.now();
  const outcome = await cel.evaluate(QUADRATIC, bindings);
  const wallMs = performance.now() - start;
  probes.push(await inFlight);
  // the loop's delay is recorded when its timer next fires
  await new Promise((r) => setTimeout(r, 50));
  delay.disable();
  probing.on = false;
  await prober;
  server.close();
  return { outcome, wallMs, probes, heldMs: delay.max / 1e6 };
}

export async function celBudgetTable(): Promise<void> {
  const rows: string[][] = [];
  const cases: [string, CelEvaluator, number][] = [
    ['agent thread (before: static limits only)', new InlineCel(), 3_000],
    ['worker thread, 2 s deadline, 64 MB (now)', new WorkerCel(), 3_000],
    ['worker thread, 2 s deadline, 64 MB (now)', new WorkerCel(), 13_000],
  ];
  for (const [where, cel, count] of cases) {
    const items = itemsOf(count);
    const bytes = JSON.stringify({ items }).length;
    const run = await measure(cel, { self: { items } });
    rows.push([
      where,
      `${count.toLocaleString('en')} items (${(bytes / 1024).toFixed(0)} KB)`,
      'error' in run.outcome ? run.outcome.error : String(run.outcome.value),
      `${(run.wallMs / 1000).toFixed(1)} s`,
      String(run.probes.length),
      `${quantile(run.probes, 0.5, 0).toFixed(1)} / ${Math.max(...run.probes).toFixed(0)} ms`,
      `${run.heldMs.toFixed(0)} ms`,
      'loop held < 100 ms; fails closed by 2 s',
    ]);
  }
  out(
    table(
      `The checks' CEL budget: ${QUADRATIC}, a /healthz probe every 50 ms meanwhile`,
      [
        'evaluated on',
        'object',
        'result',
        'wall',
        'probes',
        'probe p50 / max',
        'event loop held (a probe’s worst wait)',
        'target',
      ],
      rows,
    ),
  );
}
