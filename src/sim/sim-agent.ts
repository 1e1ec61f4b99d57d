// The agent every simulated node runs: the production agent, built by createAgent.
import { createAgent } from '../agent/create-agent.js';
import type { AgentFactory } from './simulation.js';

/** createAgent with the simulator's seams (kube, clock, sentinel, rebooter, random, logger). */
export const simAgentFactory: AgentFactory = (config, io) => createAgent(config, io);
