import { describe, expect, it } from '@jest/globals';
import { KubeApiError } from '../../src/kube/http.js';
import type { V1Node, V1Pod } from '../../src/kube/kube.js';
import { pdbFromCause } from '../../src/drain/eviction-answer.js';
import { skipReason } from '../../src/drain/drain-plan.js';
import { addTaintOps, removeTaintOps, toNodeState } from '../../src/node/kube-node-ops.js';
import { parseLabelSelector } from '../../src/selector/label-selector.js';

const KEY = 'weave.works/kured-node-reboot';

function node(
  taints?: V1Node['spec'] extends infer S ? (S extends { taints?: infer T } ? T : never) : never,
): V1Node {
  return { metadata: { name: 'n1', resourceVersion: '42' }, spec: taints === undefined ? {} : { taints } };
}

describe('taint patches', () => {
  it('creates the list, guarded by resourceVersion, when there is none', () => {
    expect(addTaintOps(node(), KEY)).toEqual([
      { op: 'test', path: '/metadata/resourceVersion', value: '42' },
      { op: 'add', path: '/spec/taints', value: [{ key: KEY, effect: 'PreferNoSchedule' }] },
    ]);
  });

  it('appends to the list, guarded by a test of the list as read', () => {
    const taints = [{ key: 'a', value: 'v', effect: 'NoSchedule' }];
    expect(addTaintOps(node(taints), KEY)).toEqual([
      { op: 'test', path: '/spec/taints', value: [{ key: 'a', value: 'v', effect: 'NoSchedule' }] },
      { op: 'add', path: '/spec/taints/-', value: { key: KEY, effect: 'PreferNoSchedule' } },
    ]);
  });

  it('guards with the list exactly as read, timeAdded included (the wire text is kept)', () => {
    const taints = [{ key: 'a', effect: 'NoExecute', timeAdded: '2026-01-05T10:00:00Z' }];
    expect(addTaintOps(node(taints), KEY)?.[0]).toEqual({ op: 'test', path: '/spec/taints', value: taints });
  });

  it('adds nothing when our taint is there, and removes exactly its index', () => {
    const taints = [
      { key: 'a', effect: 'NoSchedule' },
      { key: KEY, effect: 'NoSchedule' },
      { key: KEY, effect: 'PreferNoSchedule' },
    ];
    expect(addTaintOps(node(taints), KEY)).toBeUndefined();
    expect(removeTaintOps(node(taints), KEY)).toEqual([
      { op: 'test', path: '/spec/taints', value: taints },
      { op: 'remove', path: '/spec/taints/2' },
    ]);
    expect(removeTaintOps(node([{ key: 'a', effect: 'NoSchedule' }]), KEY)).toBeUndefined();
    expect(removeTaintOps(node(), KEY)).toBeUndefined();
  });

  it('reduces a Node to the state the agent decides on', () => {
    expect(
      toNodeState({
        metadata: { name: 'n1', labels: { a: 'b' } },
        spec: { unschedulable: true, taints: [{ key: 'a', effect: 'NoSchedule' }] },
        status: {
          nodeInfo: {
            bootID: 'b1',
            kernelVersion: '6.1.0-28-amd64',
            osImage: 'Debian GNU/Linux 12',
          } as never,
          conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-05T10:00:00Z' }],
        },
      }),
    ).toEqual({
      name: 'n1',
      resourceVersion: '',
      unschedulable: true,
      unschedulableOwners: [],
      taints: [{ key: 'a', effect: 'NoSchedule' }],
      bootID: 'b1',
      kernelVersion: '6.1.0-28-amd64',
      osImage: 'Debian GNU/Linux 12',
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date('2026-01-05T10:00:00Z') }],
      labels: { a: 'b' },
      annotations: {},
      volumes: { attached: [], inUse: [] },
    });
    expect(toNodeState({})).toMatchObject({ name: '', unschedulable: false, taints: [], bootID: '' });
  });
});

describe('which pods a drain skips', () => {
  const base: V1Pod = {
    metadata: { name: 'p', namespace: 'default', labels: { app: 'web' } },
    status: { phase: 'Running' },
  };
  it.each<[string, V1Pod, string | undefined]>([
    [
      'a DaemonSet pod',
      {
        ...base,
        metadata: {
          ...base.metadata,
          ownerReferences: [
            { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'd', uid: 'u', controller: true },
          ],
        },
      },
      'DaemonSet-owned',
    ],
    [
      'a mirror pod',
      { ...base, metadata: { ...base.metadata, annotations: { 'kubernetes.io/config.mirror': 'x' } } },
      'mirror pod',
    ],
    ['a succeeded pod', { ...base, status: { phase: 'Succeeded' } }, 'terminal (Succeeded)'],
    ['a failed pod', { ...base, status: { phase: 'Failed' } }, 'terminal (Failed)'],
    [
      'a ReplicaSet pod',
      {
        ...base,
        metadata: {
          ...base.metadata,
          ownerReferences: [
            { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'r', uid: 'u', controller: true },
          ],
        },
      },
      undefined,
    ],
    ['an unmanaged pod', base, undefined],
  ])('%s', (_name, pod, reason) => {
    expect(skipReason(pod, [])).toBe(reason);
  });

  it('skips pods outside --drain-pod-selector', () => {
    expect(skipReason(base, parseLabelSelector('app=db'))).toBe('not matched by --drain-pod-selector');
    expect(skipReason(base, parseLabelSelector('app=web'))).toBeUndefined();
  });
});

describe('the PDB named by a 429', () => {
  it.each([
    [
      "kube-apiserver's cause",
      [
        {
          reason: 'DisruptionBudget',
          message: 'The disruption budget web-pdb needs 2 healthy pods and has 2 currently',
        },
      ],
      'web-pdb',
    ],
    ['no DisruptionBudget cause', [{ reason: 'Other', message: 'The disruption budget x needs' }], undefined],
    ['no causes', [], undefined],
  ])('is read from %s', (_name, causes, pdb) => {
    const err = new KubeApiError(
      429,
      JSON.stringify({ kind: 'Status', details: { causes } }),
      'POST eviction',
    );
    expect(pdbFromCause(err)).toBe(pdb);
  });
});
