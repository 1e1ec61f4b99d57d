// What every benchmark table uses: the run's flags, output, and one simulation run.
import { DEFAULT_SIMULATE_OPTIONS, simulationOptions, type SimulateOptions } from '../src/cli/simulate.js';
import { runSimulation, type SimulationOptions, type SimulationResult } from '../src/sim/simulation.js';

export const HOUR = 3_600_000;
const args = new Set(process.argv.slice(2));
export const quick = args.has('--quick');
export const full = args.has('--full');
export const out = (text: string): void => {
  process.stdout.write(text + '\n');
};

function base(over: Partial<SimulateOptions>): SimulateOptions {
  return { ...DEFAULT_SIMULATE_OPTIONS, ...over };
}

export async function sim(
  over: Partial<SimulateOptions>,
  tweak?: (o: SimulationOptions) => void,
): Promise<SimulationResult> {
  process.stderr.write(`bench: simulate ${JSON.stringify(over)}\n`);
  const options = simulationOptions(base(over));
  tweak?.(options);
  const r = await runSimulation(options);
  if (r.violations.length > 0)
    out(`  (!) ${r.violations.length} invariant violations in a run: ${JSON.stringify(over)}`);
  return r;
}
