// CEL evaluated on the calling thread, within the static limits only: for the simulator, whose
// thousand in-process agents would each start a thread, and where no worker script is at hand. The
// agent on a node uses worker-cel.ts. @bufbuild/cel is loaded at the first evaluation.
import { overCostLimit, type CelEvaluator, type CelOutcome } from './cel.js';
import type { CelPrograms } from './cel-program.js';

export class InlineCel implements CelEvaluator {
  private programs: Promise<CelPrograms> | undefined;

  async evaluate(expression: string, bindings: Record<string, unknown>): Promise<CelOutcome> {
    const over = overCostLimit(expression, JSON.stringify(bindings).length);
    if (over !== undefined) return { error: `over the cost limit: ${over}` };
    this.programs ??= import('./cel-program.js').then((m) => new m.CelPrograms());
    return (await this.programs).run(expression, bindings);
  }
}
