// The report of simulate --clusters: each cluster's own report, then the shared budget across them.
import type { FleetSimulationResult } from './fleet-simulation.js';
import { formatReport, passed, type ReportHeader } from './report.js';
import { shortDuration } from '../text/duration.js';

function row(label: string, value: string): string {
  return `  ${label.padEnd(34)}${value}`;
}

/** Each cluster's report under its name, then the fleet's lines. */
export function formatFleetReport(r: FleetSimulationResult, h: ReportHeader): string[] {
  const lines: string[] = [];
  for (const { name, result } of r.clusters) {
    lines.push(`cluster ${name}:`, ...formatReport(result, h), '');
  }
  const fl = r.fleetLock;
  lines.push(
    fl === undefined
      ? `fleet: ${r.clusters.length} clusters, no FleetLock (each cluster on its own)`
      : `fleet: ${r.clusters.length} clusters sharing one FleetLock group of ${fl.slots} slot(s)`,
  );
  const makespan = Math.max(0, ...r.clusters.map((c) => c.result.makespanMs));
  lines.push(row('makespan (last cluster done)', shortDuration(makespan)));
  if (fl !== undefined) {
    const { counts } = fl;
    lines.push(
      row('clusters rebooting at once', `${fl.maxRebooting} at most (${fl.slots} allowed)`),
      row(
        'FleetLock requests',
        `${counts.preReboot} pre-reboot (${counts.granted} granted, ${counts.refused} refused), ${counts.steadyState} steady-state`,
      ),
      row('fleet invariant violations', String(fl.violations.length)),
      ...fl.violations
        .slice(0, 10)
        .map((v) => `    +${shortDuration(v.atMs)} rebooting at once: ${v.rebooting.join(', ')}`),
    );
  }
  lines.push(row('wall time', `${(r.wallMs / 1000).toFixed(1)}s`));
  return lines;
}

/** Every cluster passed, and the shared budget was never exceeded. */
export function fleetPassed(r: FleetSimulationResult): boolean {
  return r.clusters.every((c) => passed(c.result)) && (r.fleetLock?.violations.length ?? 0) === 0;
}
