// What the drain does with each pod (planDrain), as the drain and `kured-ts check` both ask it.
import { describe, expect, it } from '@jest/globals';
import type { DrainRule } from '../../src/config/config.js';
import { orderGroups, planDrain, planPod } from '../../src/drain/drain-plan.js';
import type { V1Pod } from '../../src/kube/kube.js';
import { parseLabelSelector } from '../../src/selector/label-selector.js';

function pod(name: string, labels: Record<string, string> = {}, extra: Partial<V1Pod> = {}): V1Pod {
  return {
    metadata: {
      name,
      namespace: name.startsWith('osd') ? 'rook-ceph' : 'default',
      uid: `${name}-uid`,
      labels,
    },
    spec: { nodeName: 'n1', containers: [] },
    status: { phase: 'Running' },
    ...extra,
  };
}

const RULES: DrainRule[] = [
  { entry: 1, namespace: 'rook-ceph', selector: parseLabelSelector('app=osd'), drain: 'evict', order: 10 },
  { entry: 2, selector: parseLabelSelector('app=agent'), drain: 'skip' },
];
const plan = { podSelector: [], rules: RULES };

describe('the drain plan of one pod', () => {
  it.each([
    ['a pod without label or rule is evicted at order 0', pod('web'), 'evict', 0, 'default'],
    [
      'label kured-ts.dev/drain=skip leaves it',
      pod('web', { 'kured-ts.dev/drain': 'skip' }),
      'skip',
      0,
      'label kured-ts.dev/drain=skip',
    ],
    [
      'label kured-ts.dev/drain=wait-completed waits for it',
      pod('job', { 'kured-ts.dev/drain': 'wait-completed' }),
      'wait-completed',
      0,
      'label kured-ts.dev/drain=wait-completed',
    ],
    [
      "Cluster API's label cluster.x-k8s.io/drain=skip leaves it",
      pod('web', { 'cluster.x-k8s.io/drain': 'skip' }),
      'skip',
      0,
      'label cluster.x-k8s.io/drain=skip',
    ],
    [
      "Cluster API's label wait-completed waits for it",
      pod('web', { 'cluster.x-k8s.io/drain': 'wait-completed' }),
      'wait-completed',
      0,
      'label cluster.x-k8s.io/drain=wait-completed',
    ],
    [
      'label kured-ts.dev/drain-order orders it',
      pod('db', { 'kured-ts.dev/drain-order': '10' }),
      'evict',
      10,
      'evict by default, order 10 by label kured-ts.dev/drain-order=10',
    ],
    [
      'a rules-file entry decides for a pod without labels',
      pod('osd-0', { app: 'osd' }),
      'evict',
      10,
      '--drain-rules entry 1 (namespace rook-ceph, selector app=osd)',
    ],
    [
      "a pod's own label wins over the file's mode, the file still orders it",
      pod('osd-1', { app: 'osd', 'kured-ts.dev/drain': 'skip' }),
      'skip',
      10,
      'skip by label kured-ts.dev/drain=skip, order 10 by --drain-rules entry 1 (namespace rook-ceph, selector app=osd)',
    ],
    [
      "a pod's own order label wins over the file's order",
      pod('osd-2', { app: 'osd', 'kured-ts.dev/drain-order': '20' }),
      'evict',
      20,
      'evict by --drain-rules entry 1 (namespace rook-ceph, selector app=osd), order 20 by label kured-ts.dev/drain-order=20',
    ],
    [
      "our label wins over Cluster API's",
      pod('web', { 'kured-ts.dev/drain': 'evict', 'cluster.x-k8s.io/drain': 'skip' }),
      'evict',
      0,
      'label kured-ts.dev/drain=evict',
    ],
    ['a rule in another namespace does not apply', pod('web', { app: 'osd' }), 'evict', 0, 'default'],
    [
      'a DaemonSet pod is passed over whatever its label says',
      pod(
        'ds',
        { 'kured-ts.dev/drain': 'bogus' },
        {
          metadata: {
            name: 'ds',
            namespace: 'default',
            labels: { 'kured-ts.dev/drain': 'bogus' },
            ownerReferences: [
              { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'd', uid: 'u', controller: true },
            ],
          },
        },
      ),
      'ignore',
      0,
      'DaemonSet-owned',
    ],
  ] as const)('%s', (...row) => {
    const [, p, action, order, reason] = row;
    expect(planPod(p, plan)).toMatchObject({ action, order, reason });
  });

  it.each([
    [
      'a typo in skip',
      { 'kured-ts.dev/drain': 'skpi' },
      'label kured-ts.dev/drain="skpi" is not one of evict, skip, wait-completed',
    ],
    [
      "a value Cluster API's label does not have",
      { 'cluster.x-k8s.io/drain': 'evict' },
      'label cluster.x-k8s.io/drain="evict" is not one of skip, wait-completed',
    ],
    [
      'an order that is no number',
      { 'kured-ts.dev/drain-order': 'last' },
      'label kured-ts.dev/drain-order="last" is not a whole number (int32)',
    ],
    ['an order beyond int32', { 'kured-ts.dev/drain-order': '9999999999' }, 'is not a whole number (int32)'],
  ])(
    'a drain label not understood (%s) makes the pod fail the drain, naming the value',
    (_what, labels, reason) => {
      expect(planPod(pod('osd-3', { app: 'osd', ...labels }), plan)).toMatchObject({
        action: 'invalid',
        reason: expect.stringContaining(reason) as unknown as string,
      });
    },
  );
});

describe('the drain plan of a node', () => {
  it('lists bad pods first, then by ascending order, then the pods left, then those passed over', () => {
    const pods = [
      pod('web'),
      pod('osd-0', { app: 'osd' }),
      pod('agent', { app: 'agent' }),
      pod('early', { 'kured-ts.dev/drain-order': '-1' }),
      pod('typo', { 'kured-ts.dev/drain': 'skp' }),
      pod('done', {}, { status: { phase: 'Succeeded' } }),
      pod('job', { 'kured-ts.dev/drain': 'wait-completed' }),
    ];
    const planned = planDrain(pods, { podSelector: parseLabelSelector('app!=none'), rules: RULES });
    expect(planned.map((p) => [p.key, p.action, p.order])).toEqual([
      ['default/typo', 'invalid', 0],
      ['default/early', 'evict', -1],
      ['default/job', 'wait-completed', 0],
      ['default/web', 'evict', 0],
      ['rook-ceph/osd-0', 'evict', 10],
      ['default/agent', 'skip', 0],
      ['default/done', 'ignore', 0],
    ]);
    expect(orderGroups(planned).map((g) => [g.order, g.pods.map((p) => p.key)])).toEqual([
      [-1, ['default/early']],
      [0, ['default/job', 'default/web']],
      [10, ['rook-ceph/osd-0']],
    ]);
  });
});
