// A denial by the agent's own admission policy in words (src/admission/own-denial.ts): which policy is
// the agent's own, the flags each is rendered from, and what the agent runs with.
import { describe, expect, it } from '@jest/globals';
import { POLICY_KINDS } from '../../src/admission/agent-policy.js';
import { agentPolicyKind, ownDenial, ownPolicyOptions } from '../../src/admission/own-denial.js';
import { FLAGS } from '../../src/config/flags.js';
import { defaultConfig } from '../../src/config/parse.js';

describe("the agent's own admission policies", () => {
  it.each([
    ['kured-ts-agent-eviction', 'eviction'],
    ['nightly-kured-ts-agent-nodes', 'nodes'],
    ['kured-ts-agent-lock', 'lock'],
    ['kured-ts-agent-pods', 'pods'],
    ['kured-ts-coordinator-nodes', undefined],
    ['acme-pod-security', undefined],
  ])('are told by their name: %s is %s', (policy, kind) => {
    expect(agentPolicyKind(policy)).toBe(kind);
  });

  it.each([
    ['eviction', ['--drain-grace-period']],
    ['pods', ['--drain-fallback']],
    ['nodes', ['--prefer-no-schedule-taint', '--pre-reboot-node-labels', '--post-reboot-node-labels']],
    ['lock', ['--ds-namespace', '--ds-name', '--lock-annotation', '--concurrency']],
  ])('name the flags they are rendered from: the %s policy %j', (kind, flags) => {
    expect(ownPolicyOptions(`kured-ts-agent-${kind}`)).toEqual(flags);
  });

  it('name only flags of the flag table', () => {
    const known = new Set(FLAGS.map((f) => `--${f.name}`));
    for (const kind of POLICY_KINDS) {
      for (const flag of ownPolicyOptions(`kured-ts-agent-${kind}`)) expect(known).toContain(flag);
    }
  });
});

describe('a denial of the agent by its own policy', () => {
  const config = { ...defaultConfig(), drainGracePeriodSeconds: 5 };

  it('is a configuration error naming the policy, the chart value and what the agent runs with', () => {
    const denial = ownDenial({ policy: 'kured-ts-agent-eviction', message: 'not another' }, config);
    expect(denial).toEqual({
      policy: 'kured-ts-agent-eviction',
      options: ['--drain-grace-period'],
      reason: expect.stringMatching(
        /^configuration error: admission policy kured-ts-agent-eviction denies this agent's own eviction: not another; the policy holds the chart's configuration\.drainGracePeriod; this agent runs with --drain-grace-period=5: /,
      ),
    });
  });

  it.each([
    ['another policy', { policy: 'acme-pod-security', message: 'no' }],
    ['no denial at all', undefined],
  ])('is none for %s', (_name, denial) => {
    expect(ownDenial(denial, config)).toBeUndefined();
  });
});
