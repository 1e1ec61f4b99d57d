// Kubernetes objects as tests write them into the fake API server.
import type { V1DaemonSet, V1Node, V1Pod } from '../../src/kube/kube.js';

/** A node's system info; only bootID matters to the agent (it proves a reboot happened). */
export function nodeInfo(bootID: string): NonNullable<V1Node['status']>['nodeInfo'] {
  return {
    bootID,
    architecture: 'amd64',
    containerRuntimeVersion: 'containerd://1.7',
    kernelVersion: '6.1',
    kubeProxyVersion: 'v1.31.0',
    kubeletVersion: 'v1.31.0',
    machineID: 'm',
    operatingSystem: 'linux',
    osImage: 'Debian',
    systemUUID: 'u',
  };
}

/** The DaemonSet that carries the lock and the fleet pause (kured's defaults: kube-system/kured). */
export function kuredDaemonSet(): V1DaemonSet {
  return {
    metadata: { name: 'kured', namespace: 'kube-system' },
    spec: {
      selector: { matchLabels: { app: 'kured' } },
      template: { metadata: { labels: { app: 'kured' } } },
    },
  };
}

/** A node as its kubelet reports it: booted as `bootID`, Ready `ready` (default True). */
export function readyNode(name: string, bootID = 'boot-1', ready = 'True'): V1Node {
  return {
    metadata: { name },
    spec: {},
    status: { nodeInfo: nodeInfo(bootID), conditions: [{ type: 'Ready', status: ready }] },
  };
}

/** A running, Ready pod of the ReplicaSet `web` on `node`: what a drain must evict. */
export function webPod(name: string, node: string): V1Pod {
  return {
    metadata: {
      name,
      namespace: 'default',
      labels: { app: 'web' },
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web', uid: 'rs', controller: true },
      ],
    },
    spec: { nodeName: node, containers: [{ name: 'c', image: 'nginx' }] },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  };
}
