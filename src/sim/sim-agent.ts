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
function agentFactory(lockQueue: 'fair' | 'none' | undefined): AgentFactory {
  return (given, io) => {
    const config = lockQueue === undefined ? given : { ...given, lockQueue };
    const deps = createAgentDeps(config, io);
    return new Agent(config, { ...deps, blockers: deps.blockers.map((b) => tracked(b, io)) });
  };
}

export const simAgentFactory: AgentFactory = agentFactory(undefined);

/** The same agent without the lock queue: a freed slot goes to whoever wakes first (kured). */
export const unqueuedAgentFactory: AgentFactory = agentFactory('none');

function tracked(blocker: Blocker, io: SimAgentIo): Blocker {
  if (blocker.name !== 'prometheus') return blocker;
  return { name: blocker.name, check: (signal) => io.track(() => blocker.check(signal)) };
}
