// Kubernetes objects as tests write them into the fake API server.
import type { V1DaemonSet, V1Node } from '../../src/kube/kube.js';

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
