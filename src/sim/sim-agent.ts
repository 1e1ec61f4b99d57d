// The agent every simulated node runs: the production agent, built from createAgentDeps.
import { Agent } from '../agent/agent.js';
import { createAgentDeps } from '../agent/create-agent.js';
import type { Blocker } from '../blockers/blocker.js';
import type { AgentFactory, SimAgentIo } from './simulation.js';

/**
 * The production agent with the simulator's seams (kube, clock, sentinel, rebooter, random, logger).
 * The one change: the Prometheus blocker's HTTP query is tracked by the virtual time, so that time
 * does not move while an agent waits for Prometheus (the Kube calls are tracked by TrackedKube).
 */
export const simAgentFactory: AgentFactory = (config, io) => {
  const deps = createAgentDeps(config, io);
  return new Agent(config, { ...deps, blockers: deps.blockers.map((b) => tracked(b, io)) });
};

function tracked(blocker: Blocker, io: SimAgentIo): Blocker {
  if (blocker.name !== 'prometheus') return blocker;
  return { name: blocker.name, check: (signal) => io.track(() => blocker.check(signal)) };
}
