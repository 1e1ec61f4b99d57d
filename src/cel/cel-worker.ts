// The CEL worker thread's script (bundled as dist/cel-worker.js): says it is ready once the engine is
// loaded, then evaluates the expression it is sent and posts the outcome. worker-cel.ts starts it,
// bounds its time (from its readiness) and its heap, and ends it.
import { parentPort } from 'node:worker_threads';
import { CelPrograms } from './cel-program.js';

/** What the worker is asked. */
export interface CelTask {
  expression: string;
  bindings: Record<string, unknown>;
}

const programs = new CelPrograms();
parentPort?.on('message', (task: CelTask) => {
  parentPort?.postMessage(programs.run(task.expression, task.bindings));
});
parentPort?.postMessage('ready');
