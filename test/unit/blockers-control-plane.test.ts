// The control plane's quorum (src/blockers/control-plane.ts): a control-plane node reboots only
// while every other control-plane node, and the etcd member on it, is Ready; the reason names the
// member that is not.
import { describe, expect, it } from '@jest/globals';
import { judgeQuorum } from '../../src/blockers/control-plane.js';
import type { Verdict } from '../../src/blockers/blocker.js';
import type { V1Node, V1Pod } from '../../src/kube/kube.js';

function node(name: string, ready = true): V1Node {
  return {
    metadata: { name, labels: { 'node-role.kubernetes.io/control-plane': '' } },
    status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  };
}

function etcd(on: string, ready = true): V1Pod {
  return {
    metadata: { name: `etcd-${on}`, namespace: 'kube-system', labels: { component: 'etcd' } },
    spec: { nodeName: on, containers: [] },
    status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  };
}

const THREE = [node('cp1'), node('cp2'), node('cp3')];

describe('judgeQuorum', () => {
  it.each<[string, V1Node[], V1Pod[], Verdict]>([
    ['every member Ready: cp1 may go', THREE, [etcd('cp1'), etcd('cp2'), etcd('cp3')], { blocked: false }],
    [
      'the etcd member on cp2 not Ready: cp1 waits, and the reason names it',
      THREE,
      [etcd('cp1'), etcd('cp2', false), etcd('cp3')],
      {
        blocked: true,
        reason: 'etcd member etcd-cp2 on cp2 is not Ready: its quorum has no member to spare',
      },
    ],
    [
      'control-plane node cp3 NotReady: cp1 waits',
      [node('cp1'), node('cp2'), node('cp3', false)],
      [etcd('cp1'), etcd('cp2'), etcd('cp3')],
      { blocked: true, reason: 'control-plane node cp3 is not Ready: no reboot of another member now' },
    ],
    [
      'the etcd member on cp3 gone while others run etcd: cp1 waits',
      THREE,
      [etcd('cp1'), etcd('cp2')],
      {
        blocked: true,
        reason: 'etcd member on control-plane node cp3 not found: its quorum has no member to spare',
      },
    ],
    ['etcd outside the cluster (no etcd pods): the Nodes alone are judged', THREE, [], { blocked: false }],
    [
      "this node's own etcd member not Ready does not hold it back",
      THREE,
      [etcd('cp1', false), etcd('cp2'), etcd('cp3')],
      { blocked: false },
    ],
    ['a worker is not held back by the control plane', THREE, [etcd('cp2', false)], { blocked: false }],
  ])('%s', (name, nodes, pods, verdict) => {
    const self = name.startsWith('a worker') ? 'w1' : 'cp1';
    expect(judgeQuorum(self, nodes, pods)).toEqual(verdict);
  });
});
