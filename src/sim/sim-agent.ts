// The agent every simulated node runs.
import type { AgentFactory } from './simulation.js';
import { createStandInAgent } from './stand-in-agent.js';

/** Until src/agent/create-agent.ts lands this is the development stand-in; then createAgent. */
export const simAgentFactory: AgentFactory = createStandInAgent;
