/* eslint-disable @typescript-eslint/no-unsafe-class-instance-assignment --
   client-node models are classes, yet its API sends them as plain JSON: object literals are how tests write Kubernetes objects. */
// Fixtures of the fake API server's own tests: the server with client-node's typed clients (the real
// client the fake must satisfy), and the objects they write.
import { afterEach, beforeEach } from '@jest/globals';
import {
  AppsV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1DaemonSet,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { startFakeApiServer, type FakeApiServer } from '../../src/sim/fake-api-server.js';

export const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** A fresh server and clients for each test of the calling file. */
export function useFakeApi(): { server: FakeApiServer; core: CoreV1Api; apps: AppsV1Api } {
  const ctx = {} as { server: FakeApiServer; core: CoreV1Api; apps: AppsV1Api };
  beforeEach(async () => {
    ctx.server = await startFakeApiServer();
    ctx.core = ctx.server.kubeConfig().makeApiClient(CoreV1Api);
    ctx.apps = ctx.server.kubeConfig().makeApiClient(AppsV1Api);
  });
  afterEach(async () => {
    await ctx.server.close();
  });
  return ctx;
}

export function node(name: string, labels: Record<string, string> = {}): V1Node {
  return { metadata: { name, labels } };
}

export function pod(namespace: string, name: string, nodeName: string, phase = 'Running'): V1Pod {
  return {
    metadata: { name, namespace, labels: { app: name.split('-')[0] ?? name } },
    spec: { nodeName, containers: [{ name: 'c', image: 'busybox' }] },
    status: { phase },
  };
}

export function daemonSet(annotations: Record<string, string> = {}): V1DaemonSet {
  return {
    metadata: { name: 'kured', namespace: 'kube-system', annotations },
    spec: {
      selector: { matchLabels: { app: 'kured' } },
      template: { metadata: { labels: { app: 'kured' } } },
    },
  };
}

export function requestsOf(s: FakeApiServer): string[] {
  return s.requests.map((r) => `${r.method} ${r.path}`);
}
