// Health checks without Prometheus (--health-check, kured #277, #76, #874; tuppr's CEL checks): one
// object read with one GET, and a CEL expression over it (`self`) that must give true, before a node
// takes a slot (a blocker judged at the slot: the node about to go asks, the waiters do not) and
// after its reboot (the wave's soak, src/agent/decision/wave.ts). A missing object, an error, a result
// that is not a bool or an expression past the cost limit blocks, with the reason. The CEL engine
// (@bufbuild/cel) is loaded only when a check is configured: the idle agent keeps its memory.
import type { HealthCheck } from '../config/config.js';
import { isNotFound, statusMessage } from '../kube/errors.js';
import type { Kube } from '../kube/kube.js';
import type { Blocker, Verdict } from './blocker.js';

/** One check's result. */
export interface CheckResult {
  check: HealthCheck;
  ok: boolean;
  /** 'true', or why not (false, the error, the object missing). */
  reason: string;
}

/**
 * The cost limit, as this engine has none of its own (kube-apiserver's CEL has one): an expression
 * this long, comprehensions nested this deep, or an object this large is refused before evaluation.
 */
const CEL_LIMITS = { expressionChars: 1024, nestedComprehensions: 2, objectBytes: 1 << 20 };

const COMPREHENSIONS = /\.(all|exists|exists_one|map|filter)\s*\(/g;

/** Why `expression` or `object` exceed the cost limit; undefined within it. */
export function overCostLimit(expression: string, objectBytes: number): string | undefined {
  if (expression.length > CEL_LIMITS.expressionChars)
    return `expression longer than ${CEL_LIMITS.expressionChars} characters`;
  let depth = 0;
  let deepest = 0;
  // the nesting of comprehension macros, from their parentheses
  const opens = new Set([...expression.matchAll(COMPREHENSIONS)].map((m) => m.index + m[0].length - 1));
  const stack: boolean[] = [];
  for (let i = 0; i < expression.length; i++) {
    if (expression[i] === '(') {
      const macro = opens.has(i);
      stack.push(macro);
      if (macro) deepest = Math.max(deepest, ++depth);
    } else if (expression[i] === ')' && stack.pop() === true) depth--;
  }
  if (deepest > CEL_LIMITS.nestedComprehensions)
    return `comprehensions nested ${deepest} deep (at most ${CEL_LIMITS.nestedComprehensions})`;
  if (objectBytes > CEL_LIMITS.objectBytes) return `object larger than ${CEL_LIMITS.objectBytes} bytes`;
  return undefined;
}

type CelModule = typeof import('@bufbuild/cel');
type CelInput = import('@bufbuild/cel').CelInput;

/** JSON as CEL sees it: maps, lists, ints for whole numbers. */
function celValue(value: unknown): CelInput {
  if (value === undefined || value === null) return null;
  if (Array.isArray(value)) return value.map(celValue);
  if (typeof value === 'object') return new Map(Object.entries(value).map(([k, v]) => [k, celValue(v)]));
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : value;
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  return null;
}

/** The object a check reads, as people name it. */
export function objectOf(check: HealthCheck): string {
  const group = check.group === '' ? 'core' : check.group;
  const name = check.namespace === undefined ? check.name : `${check.namespace}/${check.name}`;
  return `${group}/${check.version}/${check.resource} ${name}`;
}

/** The checks, evaluated: one GET each, CEL loaded at the first evaluation. */
export class HealthChecks {
  private cel: Promise<CelModule> | undefined;
  private readonly programs = new Map<string, (input: Record<string, CelInput>) => unknown>();

  constructor(
    private readonly kube: Kube,
    readonly checks: readonly HealthCheck[],
  ) {}

  /** Every check's result, in order. */
  async evaluate(signal?: AbortSignal): Promise<CheckResult[]> {
    const results: CheckResult[] = [];
    for (const check of this.checks) results.push(await this.one(check, signal));
    return results;
  }

  private async one(check: HealthCheck, signal?: AbortSignal): Promise<CheckResult> {
    const fail = (reason: string): CheckResult => ({ check, ok: false, reason });
    const get = this.kube.getObject?.bind(this.kube);
    if (get === undefined) return fail('this client cannot read objects');
    let object: unknown;
    try {
      object = await get(check, signal);
    } catch (err) {
      if (signal?.aborted === true) throw err;
      return fail(
        isNotFound(err)
          ? `${objectOf(check)} not found`
          : `cannot read ${objectOf(check)}: ${statusMessage(err)}`,
      );
    }
    const over = overCostLimit(check.expression, JSON.stringify(object).length);
    if (over !== undefined) return fail(`over the cost limit: ${over}`);
    let value: unknown;
    try {
      value = (await this.program(check.expression))({ self: celValue(object) });
    } catch (err) {
      return fail(`the expression does not compile: ${(err as Error).message}`);
    }
    return this.judged(check, value);
  }

  private async judged(check: HealthCheck, value: unknown): Promise<CheckResult> {
    const { isCelError } = await this.module();
    if (isCelError(value)) return { check, ok: false, reason: `error: ${value.message}` };
    if (typeof value !== 'boolean') return { check, ok: false, reason: `not a bool: ${typeof value}` };
    return { check, ok: value, reason: String(value) };
  }

  private module(): Promise<CelModule> {
    this.cel ??= import('@bufbuild/cel');
    return this.cel;
  }

  private async program(expression: string): Promise<(input: Record<string, CelInput>) => unknown> {
    const known = this.programs.get(expression);
    if (known !== undefined) return known;
    const { celEnv, parse, plan } = await this.module();
    const program = plan(celEnv(), parse(expression));
    this.programs.set(expression, program);
    return program;
  }
}

/** The first failing check as a reason ("apps/v1/deployments web/api: self… is false"). */
export function failedCheck(results: readonly CheckResult[]): string | undefined {
  const failed = results.find((r) => !r.ok);
  return failed === undefined
    ? undefined
    : `health check ${objectOf(failed.check)}: ${failed.check.expression}: ${failed.reason}`;
}

/** The blocker's verdict from the checks' results: the first failing check's. */
export function checksVerdict(results: readonly CheckResult[]): Verdict {
  const reason = failedCheck(results);
  return reason === undefined ? { blocked: false } : { blocked: true, reason };
}

/** The checks as a blocker judged at the slot: the node about to go asks, one GET per check. */
export class HealthCheckBlocker implements Blocker {
  readonly name = 'health-check';
  readonly atSlot = true;

  constructor(private readonly checks: HealthChecks) {}

  async check(signal?: AbortSignal): Promise<Verdict> {
    return checksVerdict(await this.checks.evaluate(signal));
  }

  /** Each check's own result (`kured-ts check` shows them all). */
  results(signal?: AbortSignal): Promise<CheckResult[]> {
    return this.checks.evaluate(signal);
  }
}
