// A tiny in-memory Kube for blocker unit tests: pods, PDBs and one DaemonSet; writes are refused.
import { rowOfNode } from '../../src/kube/node-table.js';
import type {
  NodeRow,
  CoreV1Event,
  Kube,
  ListOptions,
  NodePage,
  PodPage,
  V1DaemonSet,
  V1Deployment,
  V1ReplicaSet,
  V1Lease,
  V1Node,
  V1Pod,
  V1PodDisruptionBudget,
  V1Service,
  ServicePage,
} from '../../src/kube/kube.js';
import { matches, parseLabelSelector } from '../../src/selector/label-selector.js';

const unsupported = (what: string): Promise<never> =>
  Promise.reject(new Error(`FakeKube: ${what} not supported`));

export class FakeKube implements Kube {
  pods: V1Pod[] = [];
  pdbs: V1PodDisruptionBudget[] = [];
  nodes: V1Node[] = [];
  readonly listNodeCalls: (ListOptions | undefined)[] = [];
  daemonSet: V1DaemonSet = { metadata: { name: 'kured', namespace: 'kube-system', annotations: {} } };
  /** Calls made, for asserting on query options. */
  readonly listPodCalls: { namespace: string | undefined; options: ListOptions | undefined }[] = [];
  failWith: Error | undefined;

  listPods(namespace: string | undefined, options?: ListOptions): Promise<V1Pod[]> {
    this.listPodCalls.push({ namespace, options });
    if (this.failWith) return Promise.reject(this.failWith);
    const selector = parseLabelSelector(options?.labelSelector ?? '');
    const node = /spec\.nodeName=([^,]+)/.exec(options?.fieldSelector ?? '')?.[1];
    return Promise.resolve(
      this.pods.filter(
        (p) =>
          (namespace === undefined || p.metadata?.namespace === namespace) &&
          (node === undefined || p.spec?.nodeName === node) &&
          matches(selector, p.metadata?.labels),
      ),
    );
  }

  listPodsPage(namespace: string | undefined, options?: ListOptions): Promise<PodPage> {
    return this.listPods(namespace, options).then((items) => ({ items, resourceVersion: '1' }));
  }

  watchPods(): Promise<void> {
    return unsupported('watchPods');
  }

  listPodDisruptionBudgets(namespace: string | undefined): Promise<V1PodDisruptionBudget[]> {
    if (this.failWith) return Promise.reject(this.failWith);
    return Promise.resolve(
      this.pdbs.filter((p) => namespace === undefined || p.metadata?.namespace === namespace),
    );
  }

  /** No Service of type LoadBalancer unless a test puts one here. */
  services: V1Service[] = [];

  listServicesPage(): Promise<ServicePage> {
    if (this.failWith) return Promise.reject(this.failWith);
    return Promise.resolve({ items: structuredClone(this.services) });
  }

  listDaemonSets(): Promise<V1DaemonSet[]> {
    return Promise.reject(new Error('FakeKube: listDaemonSets is not used by the agent'));
  }

  getDaemonSet(): Promise<V1DaemonSet> {
    if (this.failWith) return Promise.reject(this.failWith);
    return Promise.resolve(structuredClone(this.daemonSet));
  }

  getNode(): Promise<V1Node> {
    return unsupported('getNode');
  }
  listNodes(options?: ListOptions): Promise<V1Node[]> {
    this.listNodeCalls.push(options);
    if (this.failWith) return Promise.reject(this.failWith);
    const selector = parseLabelSelector(options?.labelSelector ?? '');
    return Promise.resolve(structuredClone(this.nodes.filter((n) => matches(selector, n.metadata?.labels))));
  }
  listNodeRows(options?: ListOptions): Promise<NodeRow[]> {
    return this.listNodes(options).then((nodes) => nodes.map(rowOfNode));
  }

  listNodesPage(options?: ListOptions): Promise<NodePage> {
    return this.listNodes(options).then((items) => ({ items, resourceVersion: '1' }));
  }
  jsonPatchNode(): Promise<V1Node> {
    return unsupported('jsonPatchNode');
  }
  mergePatchNode(): Promise<V1Node> {
    return unsupported('mergePatchNode');
  }
  /** Pods ("namespace/name") asked about by dryRunEviction, in order. */
  readonly dryRunEvictions: string[] = [];
  /** The answer (an API error) a dry-run eviction of a pod gets; absent: the pod may go. */
  readonly evictionAnswers = new Map<string, Error>();

  /** Answers as scripted in evictionAnswers; 404 for a pod not in `pods`. */
  dryRunEviction(namespace: string, name: string): Promise<void> {
    const key = `${namespace}/${name}`;
    this.dryRunEvictions.push(key);
    const answer = this.evictionAnswers.get(key);
    if (answer !== undefined) return Promise.reject(answer);
    const known = this.pods.some((p) => p.metadata?.namespace === namespace && p.metadata.name === name);
    return known ? Promise.resolve() : Promise.reject(Object.assign(new Error('not found'), { code: 404 }));
  }
  evictPod(): Promise<void> {
    return unsupported('evictPod');
  }
  deletePod(): Promise<void> {
    return unsupported('deletePod');
  }
  mergePatchDaemonSet(): Promise<V1DaemonSet> {
    return unsupported('mergePatchDaemonSet');
  }
  getDeployment(): Promise<V1Deployment> {
    return unsupported('getDeployment');
  }
  mergePatchDeployment(): Promise<V1Deployment> {
    return unsupported('mergePatchDeployment');
  }
  getReplicaSet(): Promise<V1ReplicaSet> {
    return unsupported('getReplicaSet');
  }
  watchNodes(): Promise<void> {
    return unsupported('watchNodes');
  }
  watchDaemonSet(): Promise<void> {
    return unsupported('watchDaemonSet');
  }
  /** The coordinator's Lease, when a test sets one. */
  lease: V1Lease | undefined;
  getLease(): Promise<V1Lease> {
    if (this.failWith) return Promise.reject(this.failWith);
    if (this.lease === undefined)
      return Promise.reject(Object.assign(new Error('not found'), { statusCode: 404 }));
    return Promise.resolve(structuredClone(this.lease));
  }
  createLease(): Promise<V1Lease> {
    return unsupported('createLease');
  }
  replaceLease(): Promise<V1Lease> {
    return unsupported('replaceLease');
  }
  createEvent(): Promise<CoreV1Event> {
    return unsupported('createEvent');
  }
  mergePatchEvent(): Promise<CoreV1Event> {
    return unsupported('mergePatchEvent');
  }
}

/** A pod on a node, with labels and a phase. */
export function pod(
  name: string,
  options: {
    namespace?: string;
    node?: string;
    labels?: Record<string, string>;
    phase?: string;
    owner?: string;
    annotations?: Record<string, string>;
  } = {},
): V1Pod {
  return {
    metadata: {
      name,
      namespace: options.namespace ?? 'default',
      labels: options.labels ?? {},
      annotations: options.annotations ?? {},
      ...(options.owner
        ? {
            ownerReferences: [
              { apiVersion: 'apps/v1', kind: options.owner, name: 'owner', uid: 'u', controller: true },
            ],
          }
        : {}),
    },
    spec: { nodeName: options.node ?? 'n1', containers: [{ name: 'c' }] },
    status: { phase: options.phase ?? 'Running' },
  };
}
