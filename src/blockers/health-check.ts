// Health checks without Prometheus (--health-check, kured #277, #76, #874; tuppr's CEL checks): one
// object read with one GET, and a CEL expression over it (`self`) that must give true, before a node
// takes a slot (a blocker judged at the slot: the node about to go asks, the waiters do not) and
// after its reboot (the wave's soak, src/agent/decision/wave.ts). A missing object, an error, a result
// that is not a bool or an expression past the CEL budget (src/cel/) blocks, with the reason.
import type { CelEvaluator } from '../cel/cel.js';
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

/** The object a check reads, as people name it. */
export function objectOf(check: HealthCheck): string {
  const group = check.group === '' ? 'core' : check.group;
  const name = check.namespace === undefined ? check.name : `${check.namespace}/${check.name}`;
  return `${group}/${check.version}/${check.resource} ${name}`;
}

/** The checks, evaluated: one GET each, the expression under the CEL budget (src/cel/). */
export class HealthChecks {
  constructor(
    private readonly kube: Kube,
    readonly checks: readonly HealthCheck[],
    private readonly cel: CelEvaluator,
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
    const outcome = await this.cel.evaluate(check.expression, { self: object }, signal);
    return 'error' in outcome
      ? fail(outcome.error)
      : { check, ok: outcome.value, reason: String(outcome.value) };
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
