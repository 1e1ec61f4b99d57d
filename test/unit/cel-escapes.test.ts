// kube-apiserver's CEL refuses a policy with an invalid escape in a string literal (`\{`), which
// @bufbuild/cel lets pass: the fake's admission checks for it, and so does every policy we ship.
import { describe, expect, it } from '@jest/globals';
import { agentPolicySpecs } from '../../src/admission/agent-policy.js';
import { invalidEscape } from '../../src/sim/fake-api/cel-admission.js';

describe('invalid escapes in CEL string literals', () => {
  it.each([
    [
      'a regex brace escaped once, as kube-apiserver refuses it',
      String.raw`x.matches('^\{a\}$')`,
      String.raw`\{`,
    ],
    ['a regex brace escaped twice', String.raw`x.matches('^\\{a\\}$')`, undefined],
    ['a quote escaped inside single quotes', String.raw`'kured\'s form'`, undefined],
    ['a backslash in a raw string', String.raw`x.matches(r'^\{a\}$')`, undefined],
    ['a bracket escaped once in double quotes', String.raw`x.matches("\[")`, String.raw`\[`],
    ['no string at all', 'a == b', undefined],
  ])('finds %s', (_name, expression, found) => {
    expect(invalidEscape(expression)).toBe(found);
  });

  it('finds none in any expression of the admission policies the chart ships', () => {
    const expressions = Object.values(agentPolicySpecs()).flatMap((spec) => [
      ...spec.matchConditions.map((c) => c.expression),
      ...spec.variables.map((v) => v.expression),
      ...spec.validations.flatMap((v) => [v.expression, v.messageExpression]),
    ]);
    expect(expressions.length).toBeGreaterThan(10);
    expect(expressions.filter((e) => invalidEscape(e) !== undefined)).toEqual([]);
  });
});
