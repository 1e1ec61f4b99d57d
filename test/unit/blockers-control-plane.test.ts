// The control plane's quorum (src/blockers/control-plane.ts): a control-plane node reboots only
// while every other control-plane node, and the etcd member on it, is Ready; the reason names the
// member that is not.
import { describe, expect, it } from '@jest/globals';
import { ControlPlaneBlocker, judgeQuorum } from '../../src/blockers/control-plane.js';
import { isControlPlane } from '../../src/node/role.js';
import { FakeKube } from '../fakes/fake-kube.js';
import type { Verdict } from '../../src/blockers/blocker.js';
import type { V1Node, V1Pod } from '../../src/kube/kube.js';

function node(name: string, ready = true, role = 'control-plane'): V1Node {
  return {
    metadata: {
      name,
      labels: { [`node-role.kubernetes.io/${role}`]: role === 'control-plane' ? '' : 'true' },
    },
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

describe('the control plane, as kubeadm, k3s and RKE2 label it', () => {
  it.each<[string, Record<string, string>, boolean]>([
    ["kubeadm's control-plane label", { 'node-role.kubernetes.io/control-plane': '' }, true],
    [
      "kubeadm before 1.24, k3s and RKE2 servers' master label",
      { 'node-role.kubernetes.io/master': 'true' },
      true,
    ],
    ["RKE2's and k3s's etcd-only node", { 'node-role.kubernetes.io/etcd': 'true' }, true],
    ['a worker', { 'node-role.kubernetes.io/worker': 'true' }, false],
    ['no role', {}, false],
  ])('%s is judged a control-plane member: %s', (_name, labels, member) => {
    expect(isControlPlane(labels)).toBe(member);
  });

  it.each<[string, V1Node[], V1Pod[], Verdict]>([
    [
      'an etcd-only member NotReady holds a control-plane node back (two members at once lose quorum)',
      [node('cp1'), node('e1', false, 'etcd'), node('e2', true, 'etcd')],
      [],
      { blocked: true, reason: 'control-plane node e1 is not Ready: no reboot of another member now' },
    ],
    [
      'a Ready etcd-only node whose etcd member is not Ready holds it back',
      [node('cp1'), node('e1', true, 'etcd'), node('e2', true, 'etcd')],
      [etcd('cp1'), etcd('e1', false), etcd('e2')],
      { blocked: true, reason: 'etcd member etcd-e1 on e1 is not Ready: its quorum has no member to spare' },
    ],
    [
      'an etcd member on a node without a control-plane label, not Ready, holds it back',
      [node('cp1'), node('cp2')],
      [etcd('cp1'), etcd('cp2'), etcd('w7', false)],
      { blocked: true, reason: 'etcd member etcd-w7 on w7 is not Ready: its quorum has no member to spare' },
    ],
    [
      "an etcd-only node judges the other members as a server does (a master's etcd not Ready)",
      [node('e1', true, 'etcd'), node('s1', true, 'master')],
      [etcd('e1'), etcd('s1', false)],
      { blocked: true, reason: 'etcd member etcd-s1 on s1 is not Ready: its quorum has no member to spare' },
    ],
  ])('%s', async (name, nodes, pods, verdict) => {
    const kube = new FakeKube();
    kube.nodes = nodes;
    kube.pods = pods;
    const self = name.startsWith('an etcd-only node') ? 'e1' : 'cp1';
    expect(await new ControlPlaneBlocker({ kube, nodeId: self }).check()).toEqual(verdict);
  });
});
