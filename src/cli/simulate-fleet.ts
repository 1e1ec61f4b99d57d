// `kured-ts simulate --clusters N --fleetlock-slots S`: several simulated clusters sharing one
// FleetLock server, then each cluster's report and the fleet's.
import { runFleetSimulation, type FleetSimulationOptions } from '../sim/fleet-simulation.js';
import { fleetPassed, formatFleetReport } from '../sim/fleet-report.js';
import { simulationOptions, type SimulateIo, type SimulateOptions } from './simulate.js';

/** Runs the clusters; 0 when every cluster passed and the shared budget held. */
export async function runFleetSimulate(
  options: SimulateOptions,
  fleet: FleetSimulationOptions,
  io: SimulateIo,
): Promise<number> {
  const connect = io.connect === undefined ? {} : { connect: io.connect };
  const result = await runFleetSimulation(
    { ...simulationOptions(options, io.createAgent), ...connect },
    fleet,
  );
  const needed = options.needsReboot === 'all' ? options.nodes : Math.min(options.needsReboot, options.nodes);
  const report = formatFleetReport(result, {
    nodes: options.nodes,
    needed,
    concurrency: options.concurrency,
    periodMs: options.periodMs,
    seed: options.seed,
  });
  io.out.write(report.join('\n') + '\n');
  return fleetPassed(result) ? 0 : 1;
}
