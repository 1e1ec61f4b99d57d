// The coordinator's cost as shipped, for the chart's resources: `node dist/cli.js coordinator`
// leading fleets of 10, 1,000 and 5,000 Ready nodes on the fake API server.
import { CHART_DEFAULT_VALUES } from '../src/migrate/chart-values.generated.js';
import { measureIdleCoordinator } from './agent-cost.js';

/** The chart's resources for the agent (or the coordinator), as values.yaml gives them. */
export function chartResources(of?: 'coordinator'): {
  requests: Record<string, unknown>;
  limits: Record<string, unknown>;
} {
  const values = CHART_DEFAULT_VALUES as Record<string, Record<string, unknown>>;
  const resources = (of === undefined ? values.resources : values.coordinator?.resources) as
    { requests: Record<string, unknown>; limits: Record<string, unknown> } | undefined;
  return resources ?? { requests: {}, limits: {} };
}

/** One row per fleet size: the leader's resident memory against the chart's request. */
export async function coordinatorCostRows(quick: boolean): Promise<string[][]> {
  const rows: string[][] = [];
  for (const nodes of [10, 1000, 5000]) {
    process.stderr.write(`bench: coordinator process leading ${nodes} nodes\n`);
    const coordinator = await measureIdleCoordinator('dist/cli.js', nodes, quick ? 15_000 : 40_000);
    rows.push(
      coordinator.ok
        ? [
            `coordinator RSS, leading ${nodes.toLocaleString('en-US')} Ready nodes (node dist/cli.js coordinator, ${coordinator.nodeReads} reads of the Nodes)`,
            `${coordinator.rssMb.toFixed(1)} MB (peak ${coordinator.peakRssMb.toFixed(1)} MB)`,
            `<= ${String(chartResources('coordinator').requests.memory)} (the chart's request; limit ${String(chartResources('coordinator').limits.memory)})`,
            '-',
          ]
        : [`coordinator leading ${nodes} nodes`, `not measured: ${coordinator.note}`, '-', '-'],
    );
  }
  return rows;
}
