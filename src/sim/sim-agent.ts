// The agent every simulated node runs: the production agent, built from createAgentDeps.
import { Agent } from '../agent/agent.js';
import { createAgentDeps } from '../agent/create-agent.js';
import type { Blocker } from '../blockers/blocker.js';
import type { AgentFactory, SimAgentIo } from './simulation-types.js';
import { pollRebootRequest, REQUEST_POLL_MS, refreshRebootRequired } from '../agent/agent.js';
import type { ActorClock } from './virtual-time.js';
import { noMetrics } from '../metrics/agent-metrics.js';
import { InlineCel } from '../cel/inline-cel.js';

/**
 * The production agent with the simulator's seams (kube, clock, sentinel, rebooter, random, logger).
 * The one change: the Prometheus blocker's HTTP query is tracked by the virtual time, so that time
 * does not move while an agent waits for Prometheus (the Kube calls are tracked by TrackedKube).
 */
function agentFactory(lockQueue: 'fair' | 'none' | undefined): AgentFactory {
  return (given, io) => {
    const config = lockQueue === undefined ? given : { ...given, lockQueue };
    // the simulator's watches never hang and send no bookmarks: no silence bound
    const views = io.watchesDeliver === false ? { views: false as const } : {};
    const deps = createAgentDeps(config, { ...io, ...views, viewSilenceMs: 0, cel: new InlineCel() });
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

/**
 * Beside the agent, as in production (src/agent/run.ts): the sentinel checked every minute and an
 * admin's request looked for every few minutes, each waking an idle agent.
 */
export function startAgentLoops(
  agent: ReturnType<AgentFactory>,
  io: SimAgentIo,
  o: { clock: ActorClock; signal: AbortSignal; requested: () => boolean; periodMs: number },
): void {
  const { clock, signal } = o;
  void refreshRebootRequired({
    sentinel: io.sentinel,
    metrics: noMetrics,
    clock,
    logger: io.logger,
    signal,
    onRequired: () => agent.wake?.(),
  });
  void pollRebootRequest({
    requested: () => Promise.resolve(o.requested()),
    clock,
    logger: io.logger,
    signal,
    intervalMs: Math.min(REQUEST_POLL_MS, o.periodMs),
    onRequested: () => agent.wake?.(),
  });
}
