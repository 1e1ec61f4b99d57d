// `npm run bench -- --only=requests`: what a reboot costs the API server, by verb and resource
// (src/sim/api-cost.ts), per node over a wave (`simulate --nodes N --concurrency 10 --pods-per-node
// 2`) and for one node's cycle alone (one node of a 3-node cluster reboots). The table in
// bench/RESULTS.md comes from here.
import { costTotal, type CostRow } from '../src/sim/api-cost.js';
import type { SimulationResult } from '../src/sim/simulation.js';
import { out, quick, sim } from './common.js';
import { table } from './table.js';

/** One column of the table: a title and the rows it divides by `per`. */
interface Column {
  title: string;
  rows: readonly CostRow[];
  per: number;
}

function cell(rows: readonly CostRow[], key: string, per: number): string {
  const row = rows.find((r) => `${r.verb} ${r.resource}` === key);
  if (row === undefined) return '-';
  const n = row.requests / per;
  const kb = row.bytes / per / 1000;
  return `${n >= 10 ? n.toFixed(0) : n.toFixed(1)} (${kb >= 10 ? kb.toFixed(0) : kb.toFixed(1)} KB)`;
}

/** Rows keyed `verb resource`, the keys ordered by the first column's requests. */
function costTable(title: string, columns: readonly Column[]): string {
  const keys: string[] = [];
  for (const c of columns)
    for (const r of c.rows)
      if (!keys.includes(`${r.verb} ${r.resource}`)) keys.push(`${r.verb} ${r.resource}`);
  const rows = keys.map((key) => [key, ...columns.map((c) => cell(c.rows, key, c.per))]);
  rows.push([
    '**all**',
    ...columns.map((c) => {
      const t = costTotal(c.rows);
      return `**${(t.requests / c.per).toFixed(1)} (${(t.bytes / c.per / 1000).toFixed(0)} KB)**`;
    }),
  ]);
  return table(title, ['verb resource', ...columns.map((c) => c.title)], rows);
}

/** The node that needed a reboot in a run where one did. */
function alone(r: SimulationResult): readonly CostRow[] {
  const node = r.nodes.find((n) => n.neededReboot)?.name ?? '';
  return r.cost.byNode[node] ?? [];
}

function waveLine(n: number, r: SimulationResult): string {
  const all = costTotal([...r.cost.agents, ...r.cost.other]);
  const ratio = r.lowerBoundMs > 0 ? (r.rollingMs / r.lowerBoundMs).toFixed(2) : '-';
  return (
    `${n} nodes: ${(all.requests / n).toFixed(1)} requests and ${(all.bytes / n / 1000).toFixed(0)} KB per node ` +
    `(agents and coordinator), rolling reboot / lower bound ${ratio}, ${r.rebooted}/${r.needed} rebooted, ` +
    `${r.outOfOrder.length} out of need order, ${r.violations.length} violations, ${(r.wallMs / 1000).toFixed(0)} s wall`
  );
}

/** One node's cycle alone: from its need to the end of the run, against the budget of 30. */
function cycleLine(r: SimulationResult): string {
  const node = r.nodes.find((n) => n.neededReboot)?.name ?? '';
  const whole = costTotal(alone(r)).requests;
  const cycle = r.cost.cycles[node] ?? whole;
  return (
    `one node alone in 3 nodes: ${cycle} requests from its need to the end of the run (target ≤ 30), ` +
    `${whole - cycle} before it at its agent's start-up (as every agent, idle or not)`
  );
}

export async function requestsTable(): Promise<void> {
  // the need comes while the agents run (as on a real node): the cycle is counted from it, the start-up
  // every agent pays, idle or not, before it
  const one = await sim({
    nodes: 3,
    needsReboot: 1,
    concurrency: 10,
    podsPerNode: 2,
    requiredOverMs: 600_000,
  });
  const sizes = quick ? [100] : [100, 1000];
  const waves: [number, SimulationResult][] = [];
  for (const n of sizes) waves.push([n, await sim({ nodes: n, concurrency: 10, podsPerNode: 2 })]);
  const columns: Column[] = [
    { title: "one node alone in 3 nodes: its agent's whole run", rows: alone(one), per: 1 },
  ];
  for (const [n, r] of waves) {
    columns.push({ title: `${n} nodes: agents, per node`, rows: r.cost.agents, per: n });
    columns.push({ title: `${n} nodes: coordinator, per node`, rows: r.cost.other, per: n });
  }
  out(
    costTable(
      'API requests (and response KB) by verb and resource: one node alone, and per node over a wave at concurrency 10, 2 pods per node',
      columns,
    ),
  );
  out([cycleLine(one), ...waves.map(([n, r]) => waveLine(n, r))].map((l) => `- ${l}`).join('\n') + '\n');
}
