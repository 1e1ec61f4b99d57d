// The scenario simulations of the tests: `kured-ts simulate`'s own settings and the same fake API
// server, admission policy and agents, with the agents' and coordinators' client handing its requests
// to the server in memory instead of over loopback HTTP (FakeApiServer.kubeInMemory, memorySimKube).
// Each agent still acts as itself, so admission reviews every write with its user and node claim, and
// the server records and counts every request as over HTTP: the same results, at about half the CPU.
// The HTTP path keeps its own runs: the runSimulate smoke run in simulate-report.test.ts, the CLI's
// simulate in cli.test.ts, and the adapter contract suite.
import {
  simulate as simulateOverHttp,
  simulationOptions,
  type SimulateIo,
  type SimulateOptions,
} from '../../src/cli/simulate.js';
import { memorySimKube } from '../../src/sim/sim-kube.js';
import type { AgentFactory, SimulationOptions, SimulationResult } from '../../src/sim/simulation.js';

/**
 * The jest timeout of a test that runs simulations (jest.setTimeout in each scenario file). A run's
 * result does not depend on the wall clock (virtual time, src/sim/virtual-time.ts), so a loaded
 * machine only makes it slower: beside six CPU-bound processes on 2 cores a run takes several times
 * its idle time, past jest.config.js's 30 s.
 */
export const SIMULATION_TIMEOUT_MS = 240_000;

/** simulate's simulationOptions(), with the client in memory. */
export function memorySimulationOptions(
  options: SimulateOptions,
  createAgent?: AgentFactory,
): SimulationOptions {
  return { ...simulationOptions(options, createAgent), connect: memorySimKube };
}

/** simulate() of src/cli/simulate.ts, with the client in memory. */
export function simulate(
  options: SimulateOptions,
  io: { createAgent?: AgentFactory; onPhase?: SimulationOptions['onPhase'] } = {},
): Promise<SimulationResult> {
  return simulateOverHttp(options, { ...io, connect: memorySimKube });
}

/** `io` for runSimulate and runFleetSimulate, with the client in memory. */
export function inMemory(io: SimulateIo): SimulateIo {
  return { ...io, connect: memorySimKube };
}
