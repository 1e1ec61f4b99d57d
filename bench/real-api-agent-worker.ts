// One agent worker of `npm run bench:real` (issue 59 item 2): a worker thread that runs the real
// agents (createAgent, as `kured-ts agent` builds it, minus its metrics listener) of the nodes the
// main thread hands it, on one shared client of its own, and tells the main thread what the
// simulated hosts must know (a reboot), what the agents warned of, their census reads and how late
// this thread's event loop ran. The main thread (bench/real-api-agents.ts) keeps the hosts.
import { setMaxListeners } from 'node:events';
import { parentPort, workerData } from 'node:worker_threads';
import { NODE_NAME_EXTRA } from '../src/admission/agent-policy.js';
import { refreshRebootRequired } from '../src/agent/agent.js';
import { createAgent } from '../src/agent/create-agent.js';
import { SystemClock } from '../src/clock/clock.js';
import { connectKube } from '../src/kube/client.js';
import type { LogFields, Logger } from '../src/log/logger.js';
import { noMetrics } from '../src/metrics/agent-metrics.js';
import type { Sentinel } from '../src/sentinel/sentinel.js';
import { CensusTimedKube } from './census-timing.js';
import { LoopLag, type LagSample } from './loop-lag.js';
import { AGENT_USER, nodeName } from './real-api-fleet.js';
import {
  RecentLines,
  agentConfig,
  cloneable,
  type FromWorker,
  type ToWorker,
  type WorkerSettings,
} from './real-api-worker-protocol.js';

function runWorker(port: NonNullable<typeof parentPort>, settings: WorkerSettings): void {
  const send = (m: FromWorker): void => {
    port.postMessage(m);
  };
  const clock = new SystemClock();
  const recent = new RecentLines();
  const agents = new Map<number, AbortController>();
  const shared = connectKube({ kubeconfig: settings.kubeconfig });
  const census = {
    answered: (ms: number) => {
      send({ kind: 'census', ms });
    },
    failed: (failure: 'timeout' | 'error') => {
      send({ kind: 'census', failure });
    },
  };
  const lag = new LoopLag();
  let pending: LagSample[] = [];
  lag.start((sample) => {
    pending.push(sample);
    if (pending.length < 10) return;
    send({ kind: 'lag', samples: pending });
    pending = [];
  });

  const logger = (who: string): Logger => {
    const warned =
      (level: string) =>
      (message: string, fields: LogFields = {}): void => {
        recent.add(who, level, message, fields);
        send({ kind: 'problem', who, level, message, fields: cloneable(fields) });
      };
    return {
      debug: (m, f) => {
        recent.add(who, 'debug', m, f);
      },
      info: (m, f) => {
        recent.add(who, 'info', m, f);
      },
      warn: warned('warn'),
      error: warned('error'),
    };
  };

  const start = (i: number, required: boolean): void => {
    const name = nodeName(i);
    const abort = new AbortController();
    setMaxListeners(Infinity, abort.signal);
    agents.set(i, abort);
    send({ kind: 'started' });
    const client =
      settings.identity === 'agents'
        ? shared.impersonating({ user: AGENT_USER, extra: { [NODE_NAME_EXTRA]: name } })
        : shared;
    const kube = new CensusTimedKube(client, census);
    const log = logger(name);
    const sentinel: Sentinel = { rebootRequired: () => Promise.resolve({ required }) };
    const rebooter = {
      reboot: (): Promise<void> => {
        send({ kind: 'reboot', i });
        // the host goes down: its agent dies at once
        setImmediate(() => {
          abort.abort(new Error('host down'));
          if (agents.get(i) === abort) agents.delete(i);
        });
        return Promise.resolve();
      },
    };
    const agent = createAgent(agentConfig(name, settings), { kube, clock, logger: log, sentinel, rebooter });
    agent.run(abort.signal).catch((err: unknown) => {
      if (!abort.signal.aborted) log.error('agent crashed', { error: String(err) });
    });
    void refreshRebootRequired({
      sentinel,
      metrics: noMetrics,
      clock,
      logger: log,
      signal: abort.signal,
      onRequired: () => {
        agent.wake();
      },
    });
  };

  port.on('message', (m: ToWorker) => {
    if (m.kind === 'start') start(m.i, m.required);
    else if (m.kind === 'lastLines') send({ kind: 'lines', id: m.id, lines: recent.of(m.node) });
    else {
      for (const a of agents.values()) a.abort(new Error('benchmark over'));
      agents.clear();
      lag.stop();
      if (pending.length > 0) send({ kind: 'lag', samples: pending });
      setTimeout(() => {
        shared.close();
        port.close();
      }, 2_000).unref();
    }
  });
}

if (parentPort !== null) runWorker(parentPort, workerData as WorkerSettings);
