// The single-replica verdict (src/drain/single-replica.ts): maxSurge resolved as Kubernetes resolves
// it, and which pods are restarted before the drain, which evicted as today and why.
import { describe, expect, it } from '@jest/globals';
import type { V1Deployment, V1Pod } from '../../src/kube/kube.js';
import { deploymentVerdict, resolveMaxSurge } from '../../src/drain/single-replica.js';

describe('maxSurge', () => {
  it.each([
    [undefined, 1, 1, 'the default 25% of one replica rounds up to 1'],
    ['25%', 4, 1, '25% of 4'],
    ['1%', 1, 1, '1% of one replica rounds up to 1'],
    ['0%', 3, 0, '0%'],
    [0, 1, 0, 'the integer 0'],
    [2, 1, 2, 'the integer 2'],
    ['30%', 10, 3, '30% of 10'],
    ['31%', 10, 4, '31% of 10 rounds up'],
  ] as [number | string | undefined, number, number, string][])(
    '%s of %i replicas resolves to %i (%s)',
    (surge, replicas, expected) => {
      expect(resolveMaxSurge(surge, replicas)).toBe(expected);
    },
  );
});

const ready: V1Pod = { status: { conditions: [{ type: 'Ready', status: 'True' }] } };

function deployment(spec: V1Deployment['spec'], readyReplicas = 1): V1Deployment {
  return { metadata: { name: 'web', namespace: 'shop' }, spec, status: { readyReplicas } };
}

const selector = { matchLabels: { app: 'web' } };
const template = {};

describe('a ready pod of a Deployment', () => {
  const cases: [string, string, V1Deployment][] = [
    ['its only ready replica, RollingUpdate by default', 'restart', deployment({ selector, template })],
    [
      'its only ready replica of three, maxSurge 1',
      'restart',
      deployment({ replicas: 3, selector, template, strategy: { rollingUpdate: { maxSurge: 1 } } }),
    ],
    ['one of two ready replicas', 'evict', deployment({ selector, template }, 2)],
    [
      'its only ready replica, Recreate',
      'keep',
      deployment({ selector, template, strategy: { type: 'Recreate' } }),
    ],
    [
      'its only ready replica, maxSurge 0',
      'keep',
      deployment({ selector, template, strategy: { rollingUpdate: { maxSurge: 0 } } }),
    ],
  ];
  it.each(cases)('that is %s: %s', (_what, action, d) => {
    expect(deploymentVerdict(ready, d).action).toBe(action);
  });

  it('that is not ready is evicted as always: its eviction takes nothing ready away', () => {
    expect(deploymentVerdict({ status: { conditions: [] } }, deployment({ selector, template })).action).toBe(
      'evict',
    );
  });
});
