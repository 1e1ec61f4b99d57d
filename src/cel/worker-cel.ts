// CEL evaluated in a worker thread under a budget (issue 55): the static limits first, then a
// deadline counted from the worker's readiness and a heap cap; past either, the worker is ended and
// the check fails closed with the reason. The agent's event loop (its /healthz, metrics, lock
// renewals) runs meanwhile. One thread per evaluation: checks are judged at a slot and in a few waits,
// not in a loop, and an idle agent keeps no thread (nor the engine's memory).
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { CEL_BUDGET, overCostLimit, type CelEvaluator, type CelOutcome } from './cel.js';
import type { CelTask } from './cel-worker.js';

/** The longest a worker may take to load the engine before it is given up. */
const STARTUP_MS = 30_000;

/**
 * Where the worker's script is: beside the bundle's entry (dist/cel-worker.js, this code in dist/ or
 * dist/chunks/), or the built bundle's when this runs from the sources (tests).
 */
function celWorkerScript(): URL | undefined {
  return ['./cel-worker.js', '../cel-worker.js', '../../dist/cel-worker.js']
    .map((p) => new URL(p, import.meta.url))
    .find((url) => existsSync(url));
}

export interface WorkerCelOptions {
  /** The worker's script; default celWorkerScript(). */
  script?: URL;
  deadlineMs?: number;
  heapMb?: number;
}

export class WorkerCel implements CelEvaluator {
  constructor(private readonly o: WorkerCelOptions = {}) {}

  async evaluate(
    expression: string,
    bindings: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<CelOutcome> {
    const over = overCostLimit(expression, JSON.stringify(bindings).length);
    if (over !== undefined) return { error: `over the cost limit: ${over}` };
    const script = this.o.script ?? celWorkerScript();
    if (script === undefined) return { error: 'the CEL worker script (cel-worker.js) is missing' };
    return this.inWorker(script, { expression, bindings }, signal);
  }

  private inWorker(script: URL, task: CelTask, signal?: AbortSignal): Promise<CelOutcome> {
    const deadlineMs = this.o.deadlineMs ?? CEL_BUDGET.deadlineMs;
    const heapMb = this.o.heapMb ?? CEL_BUDGET.heapMb;
    const worker = new Worker(script, {
      resourceLimits: { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: CEL_BUDGET.youngMb },
    });
    return new Promise<CelOutcome>((resolve, reject) => {
      let timer = setTimeout(() => {
        end({ error: 'the CEL engine did not start' });
      }, STARTUP_MS);
      const onAbort = (): void => {
        end(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
      };
      function end(outcome: CelOutcome | Error): void {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        worker.removeAllListeners();
        worker.on('error', () => undefined);
        void worker.terminate();
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      }
      if (signal?.aborted === true) {
        onAbort();
        return;
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      worker.on('message', (message: CelOutcome | 'ready') => {
        if (message !== 'ready') {
          end(message);
          return;
        }
        // the deadline counts the evaluation, not the thread's start
        clearTimeout(timer);
        timer = setTimeout(() => {
          end({ error: `over the cost limit: still evaluating after ${deadlineMs} ms` });
        }, deadlineMs);
        worker.postMessage(task);
      });
      worker.on('error', (err: Error & { code?: string }) => {
        end({
          error:
            err.code === 'ERR_WORKER_OUT_OF_MEMORY'
              ? `over the cost limit: more than ${heapMb} MB of memory`
              : `the CEL worker failed: ${err.message}`,
        });
      });
      worker.on('exit', (code) => {
        end({ error: `the CEL worker ended (exit ${code})` });
      });
    });
  }
}
