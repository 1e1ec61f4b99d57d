// CEL as the checks use it (--health-check, --node-check): an expression over JSON bindings (`self`,
// `node`) that must give a bool. @bufbuild/cel has no cost tracking of its own (kube-apiserver's CEL
// has), so the budget is ours (issue 55): static limits before evaluation (overCostLimit) and, in
// the agent, evaluation off the main thread under a deadline and a memory cap (worker-cel.ts), so
// that a quadratic expression over a tenant-writable object fails closed instead of stopping the
// agent's probes and lock renewals.

/** An expression's result: its bool, or why there is none. */
export type CelOutcome = { value: boolean } | { error: string };

/** Evaluates an expression over JSON bindings; never throws for the expression's or the data's sake. */
export interface CelEvaluator {
  evaluate(expression: string, bindings: Record<string, unknown>, signal?: AbortSignal): Promise<CelOutcome>;
}

/**
 * The static part of the budget: an expression this long, comprehensions nested this deep, or
 * bindings this large are refused before evaluation.
 */
const CEL_LIMITS = { expressionChars: 1024, nestedComprehensions: 2, inputBytes: 4 << 20 };

/**
 * The rest of the budget, for the evaluation itself (worker-cel.ts). The heap: a worker at its cap
 * adds about 70 MB to the agent's resident memory (measured), which with the agent's own peak of
 * 67 MiB stays under the chart's 192 Mi limit; a 3 MB list evaluates well within it.
 */
export const CEL_BUDGET = { deadlineMs: 2_000, heapMb: 64, youngMb: 8 };

const COMPREHENSIONS = /\.(all|exists|exists_one|map|filter)\s*\(/g;

/** How deep `expression` nests comprehension macros, from their parentheses. */
function comprehensionDepth(expression: string): number {
  let depth = 0;
  let deepest = 0;
  const opens = new Set([...expression.matchAll(COMPREHENSIONS)].map((m) => m.index + m[0].length - 1));
  const stack: boolean[] = [];
  for (let i = 0; i < expression.length; i++) {
    if (expression[i] === '(') {
      const macro = opens.has(i);
      stack.push(macro);
      if (macro) deepest = Math.max(deepest, ++depth);
    } else if (expression[i] === ')' && stack.pop() === true) depth--;
  }
  return deepest;
}

/** Why `expression` or an input of `inputBytes` exceed the static limits; undefined within them. */
export function overCostLimit(expression: string, inputBytes: number): string | undefined {
  if (expression.length > CEL_LIMITS.expressionChars)
    return `expression longer than ${CEL_LIMITS.expressionChars} characters`;
  const deepest = comprehensionDepth(expression);
  if (deepest > CEL_LIMITS.nestedComprehensions)
    return `comprehensions nested ${deepest} deep (at most ${CEL_LIMITS.nestedComprehensions})`;
  if (inputBytes > CEL_LIMITS.inputBytes) return `input larger than ${CEL_LIMITS.inputBytes} bytes`;
  return undefined;
}
