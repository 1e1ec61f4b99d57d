// ValidatingAdmissionPolicy enforcement in the fake API server, with a CEL engine (@bufbuild/cel):
// the policy's resource rules, match conditions, variables and validations, over the request's
// object, oldObject, request and params, as kube-apiserver evaluates them. failurePolicy Fail: an
// expression that fails to evaluate refuses the request, as in kube. It is dynamically typed where
// kube type-checks; src/admission/agent-policy.ts is written so that both agree.
import { celEnv, isCelError, parse, plan, type CelInput } from '@bufbuild/cel';
import { POLICY_KINDS, agentPolicies, type PolicyValueKey } from '../../admission/agent-policy.js';
import type { PolicySpec } from '../../admission/policy-parts.js';
import type { Admission, AdmissionAttributes } from './admission.js';
import { apiError } from './status.js';

/** A policy with its binding's name (kured-ts's take no parameters). */
export interface BoundPolicy {
  name: string;
  binding: string;
  spec: PolicySpec;
}

/** kured-ts's policies with an installation's values, named as the chart names them (`<name>-<kind>`). */
export function boundAgentPolicies(
  values: Record<PolicyValueKey, string>,
  name = 'kured-ts-agent',
): BoundPolicy[] {
  const specs = agentPolicies(values);
  return POLICY_KINDS.map((kind) => ({
    name: `${name}-${kind}`,
    binding: `${name}-${kind}`,
    spec: specs[kind],
  }));
}

/** One review, for tests and the simulation's report. */
export interface ReviewRecord {
  policy: string;
  attributes: AdmissionAttributes;
  /** undefined = admitted. */
  denied?: string;
}

type Program = (bindings: Record<string, CelInput>) => unknown;

/** JSON as CEL sees it: objects as maps, whole numbers as int. */
function celValue(value: unknown): CelInput {
  if (value === undefined || value === null) return null;
  if (Array.isArray(value)) return value.map(celValue);
  if (typeof value === 'object') {
    return new Map(Object.entries(value).map(([k, v]) => [k, celValue(v)]));
  }
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : value;
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  return null;
}

function ruleMatches(spec: PolicySpec, a: AdmissionAttributes): boolean {
  const resource = a.subResource === '' ? a.resource.resource : `${a.resource.resource}/${a.subResource}`;
  return spec.matchConstraints.resourceRules.some(
    (r) =>
      r.operations.includes(a.operation) &&
      r.apiGroups.includes(a.resource.group) &&
      r.apiVersions.includes(a.resource.version) &&
      r.resources.includes(resource) &&
      (r.resourceNames === undefined || r.resourceNames.length === 0 || r.resourceNames.includes(a.name)),
  );
}

/** The request variable: what kube's AdmissionRequest holds. */
function requestOf(a: AdmissionAttributes): unknown {
  return {
    operation: a.operation,
    resource: a.resource,
    subResource: a.subResource,
    name: a.name,
    namespace: a.namespace,
    userInfo: { username: a.userInfo.username, groups: a.userInfo.groups, extra: a.userInfo.extra },
  };
}

/** Denials kept in `denials` (the count goes on). */
const MAX_DENIALS = 100;

export class CelAdmission implements Admission {
  /** Requests some policy judged (its match conditions held), admitted and denied. */
  readonly counts = { admitted: 0, denied: 0 };
  /** The first denials, in order. */
  readonly denials: ReviewRecord[] = [];
  /** Told of every review (tests keep them all; a long simulation only counts). */
  onReview: ((record: ReviewRecord) => void) | undefined;
  private readonly programs = new Map<string, Program>();
  private readonly env = celEnv();

  constructor(private readonly policies: readonly BoundPolicy[]) {
    // Compile everything now: a policy that does not parse fails at start, not on a write.
    for (const p of policies) for (const e of expressionsOf(p.spec)) this.program(e);
  }

  review(attributes: AdmissionAttributes): void {
    for (const policy of this.policies) {
      if (!ruleMatches(policy.spec, attributes)) continue;
      const denied = this.evaluate(policy, attributes);
      if (denied === 'not-matched') continue;
      // The objects are lent for the review: a record that is kept gets its own copy.
      const record = (): ReviewRecord => ({
        policy: policy.name,
        attributes: structuredClone(attributes),
        ...(denied === undefined ? {} : { denied }),
      });
      this.onReview?.(record());
      if (denied === undefined) this.counts.admitted++;
      else {
        this.counts.denied++;
        if (this.denials.length < MAX_DENIALS) this.denials.push(record());
        const message = `ValidatingAdmissionPolicy '${policy.name}' with binding '${policy.binding}' denied request: ${denied}`;
        throw apiError(403, message);
      }
    }
  }

  /** undefined = admitted; 'not-matched' = a match condition is false; else why it is denied. */
  private evaluate(policy: BoundPolicy, a: AdmissionAttributes): string | undefined {
    const bindings: Record<string, CelInput> = {
      object: celValue(a.object),
      oldObject: celValue(a.oldObject),
      request: celValue(requestOf(a)),
    };
    for (const c of policy.spec.matchConditions) {
      const result = this.run(c.expression, bindings);
      if (typeof result === 'string') return `match condition '${c.name}' failed: ${result}`;
      if (!result) return 'not-matched';
    }
    const variables = new Map<string, CelInput>();
    bindings.variables = variables;
    for (const v of policy.spec.variables) {
      const value = this.program(v.expression)(bindings);
      if (isCelError(value)) return `variable '${v.name}' failed: ${value.message}`;
      variables.set(v.name, value as CelInput);
    }
    for (const v of policy.spec.validations) {
      const result = this.run(v.expression, bindings);
      if (typeof result === 'string')
        return `expression '${v.expression.slice(0, 80)}…' resulted in error: ${result}`;
      if (!result) return this.message(v.messageExpression, bindings);
    }
    return undefined;
  }

  /** A boolean expression's value, or its error as text. */
  private run(expression: string, bindings: Record<string, CelInput>): boolean | string {
    const value = this.program(expression)(bindings);
    if (isCelError(value)) return value.message;
    if (typeof value !== 'boolean') return `expected a bool, got ${typeof value}`;
    return value;
  }

  private message(expression: string, bindings: Record<string, CelInput>): string {
    const value = this.program(expression)(bindings);
    return typeof value === 'string' ? value : 'failed expression (its message expression failed too)';
  }

  private program(expression: string): Program {
    let program = this.programs.get(expression);
    if (!program) {
      const escape = invalidEscape(expression);
      if (escape !== undefined) {
        throw new Error(`compilation failed: Syntax error: invalid escape ${escape} in a string literal`);
      }
      program = plan(this.env, parse(expression));
      this.programs.set(expression, program);
    }
    return program;
  }
}

/** What may follow a backslash in a CEL string literal (the CEL spec's escapes). */
const CEL_ESCAPES = new Set([
  '\\',
  '?',
  '"',
  "'",
  '`',
  'a',
  'b',
  'f',
  'n',
  'r',
  't',
  'v',
  'x',
  'X',
  'u',
  'U',
  '0',
  '1',
  '2',
  '3',
]);

/**
 * The first invalid escape (e.g. `\{`) in a quoted, non-raw string literal of `expression`, which
 * kube-apiserver's CEL refuses (failing the whole policy) while @bufbuild/cel lets it pass; else
 * undefined.
 */
export function invalidEscape(expression: string): string | undefined {
  const literals = /([rR]?)('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")/g;
  for (const [, raw, literal] of expression.matchAll(literals)) {
    if (raw !== '' || literal === undefined) continue;
    for (const [escape, next] of literal.matchAll(/\\(.)/g)) {
      if (!CEL_ESCAPES.has(next ?? '')) return escape;
    }
  }
  return undefined;
}

function expressionsOf(spec: PolicySpec): string[] {
  return [
    ...spec.matchConditions.map((c) => c.expression),
    ...spec.variables.map((v) => v.expression),
    ...spec.validations.flatMap((v) => [v.expression, v.messageExpression]),
  ];
}
