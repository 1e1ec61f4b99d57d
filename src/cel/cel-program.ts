// One evaluation with @bufbuild/cel, where it runs: in the worker thread (cel-worker.ts) or, for the
// simulator's in-process agents, inline (inline-cel.ts). JSON becomes CEL values (maps, lists, ints
// for whole numbers); the result is judged as a CelOutcome.
import { celEnv, isCelError, parse, plan, type CelInput } from '@bufbuild/cel';
import type { CelOutcome } from './cel.js';

/** JSON as CEL sees it: maps, lists, ints for whole numbers. */
function celValue(value: unknown): CelInput {
  if (value === undefined || value === null) return null;
  if (Array.isArray(value)) return value.map(celValue);
  if (typeof value === 'object') return new Map(Object.entries(value).map(([k, v]) => [k, celValue(v)]));
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : value;
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  return null;
}

type Program = (input: Record<string, CelInput>) => unknown;

/** Compiles once per expression, evaluates over JSON bindings. */
export class CelPrograms {
  private readonly programs = new Map<string, Program>();

  run(expression: string, bindings: Record<string, unknown>): CelOutcome {
    let program = this.programs.get(expression);
    try {
      program ??= plan(celEnv(), parse(expression));
    } catch (err) {
      return { error: `the expression does not compile: ${(err as Error).message}` };
    }
    this.programs.set(expression, program);
    const input = Object.fromEntries(Object.entries(bindings).map(([k, v]) => [k, celValue(v)]));
    let value: unknown;
    try {
      value = program(input);
    } catch (err) {
      return { error: `error: ${(err as Error).message}` };
    }
    if (isCelError(value)) return { error: `error: ${value.message}` };
    if (typeof value !== 'boolean') return { error: `not a bool: ${typeof value}` };
    return { value };
  }
}
