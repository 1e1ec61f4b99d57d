// A Deployment controller as far as a rollout goes, for the simulated cluster (simulate
// --single-replica-workloads) and the tests: each Deployment has one ReplicaSet per pod template; a
// template change (`kubectl rollout restart`) starts a surge pod of a new ReplicaSet (RollingUpdate)
// or removes the old pods first (Recreate); once a pod of the newest ReplicaSet is ready the old
// ReplicaSets' pods are removed; a pod of the newest ReplicaSet that goes is replaced. The pods are
// created unplaced: the cluster's scheduler places them and its kubelet makes them ready. It keeps
// each Deployment's status (replicas ready, available, updated) and counts the time it had no ready
// replica.
import { isReady, type ObjectMeta, type SimPod, type SimServer, type SimWriteEvent } from './objects.js';

export interface SimDeployment {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta & { generation?: number };
  spec: {
    replicas: number;
    selector: { matchLabels: Record<string, string> };
    strategy:
      { type: 'RollingUpdate'; rollingUpdate?: { maxSurge?: number | string } } | { type: 'Recreate' };
    template: {
      metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
      spec: SimPod['spec'];
    };
  };
  status?: {
    readyReplicas?: number;
    availableReplicas?: number;
    updatedReplicas?: number;
    observedGeneration?: number;
  };
}

interface SimReplicaSet {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: {
    replicas: number;
    selector: { matchLabels: Record<string, string> };
    template: SimDeployment['spec']['template'];
  };
}

/** What the model is driven by: the server, the (virtual) time, and a deferral of its writes. */
export interface DeploymentModelIo {
  server: SimServer;
  nowMs: () => number;
  /** Runs `task` soon, outside the write that triggered it. */
  defer: (task: () => void) => void;
}

const TEMPLATE_HASH = 'pod-template-hash';

/** A short, stable hash of a template (FNV-1a), as the ReplicaSet's name suffix. */
function hashOf(template: unknown): string {
  let h = 0x811c9dc5;
  for (const ch of JSON.stringify(template)) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return h.toString(36).slice(0, 8);
}

function controller(meta: ObjectMeta): string | undefined {
  return meta.ownerReferences?.find((o) => o.controller === true)?.name;
}

export class DeploymentModel {
  /** Per Deployment (namespace/name): ms with no ready replica so far. */
  private readonly downMs = new Map<string, number>();
  private readonly downSince = new Map<string, number>();
  private readonly current = new Map<string, string>();
  private counter = 0;
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly io: DeploymentModelIo) {}

  /** Follows the server's writes; returns the unsubscribe function (as stop does). */
  start(): () => void {
    this.unsubscribe = this.io.server.onWrite((e) => {
      this.onWrite(e);
    });
    return () => {
      this.stop();
    };
  }

  stop(): void {
    this.unsubscribe?.();
  }

  /**
   * Creates a Deployment, its ReplicaSet and its pods, each as `place` makes it (placed and ready at
   * the start of a simulation; unplaced by default).
   */
  create(deployment: SimDeployment, place: (pod: SimPod) => SimPod = (pod) => pod): void {
    const created = this.io.server.create<SimDeployment>('deployments', {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      ...deployment,
    });
    this.rollTo(created, place);
  }

  /** Milliseconds each Deployment had no ready replica, by namespace/name (an ongoing outage counted to now). */
  unavailableMs(): Map<string, number> {
    const out = new Map<string, number>();
    for (const key of new Set([...this.downMs.keys(), ...this.downSince.keys()])) {
      const since = this.downSince.get(key);
      out.set(key, (this.downMs.get(key) ?? 0) + (since === undefined ? 0 : this.io.nowMs() - since));
    }
    return out;
  }

  private onWrite(e: SimWriteEvent): void {
    if (e.resource === 'deployments' && e.type === 'MODIFIED') {
      const d = e.object as SimDeployment;
      this.io.defer(() => {
        this.rollTo(d);
      });
    } else if (e.resource === 'pods') {
      const pod = e.object as SimPod;
      const deployment = this.deploymentOf(pod);
      if (deployment === undefined) return;
      this.io.defer(() => {
        this.reconcile(deployment);
      });
    }
  }

  private key(meta: ObjectMeta): string {
    return `${meta.namespace ?? ''}/${meta.name}`;
  }

  /** The Deployment (namespace/name) a pod belongs to, through its ReplicaSet. */
  private deploymentOf(pod: SimPod): string | undefined {
    const rs = controller(pod.metadata);
    if (rs === undefined) return undefined;
    const set = this.io.server.get<SimReplicaSet>('replicasets', pod.metadata.namespace, rs);
    const owner = set === undefined ? undefined : controller(set.metadata);
    return owner === undefined ? undefined : `${pod.metadata.namespace ?? ''}/${owner}`;
  }

  /** The ReplicaSet of the Deployment's template: made when new (a rollout starts), then reconciled. */
  private rollTo(d: SimDeployment, place?: (pod: SimPod) => SimPod): void {
    const namespace = d.metadata.namespace ?? 'default';
    const hash = hashOf(d.spec.template);
    const name = `${d.metadata.name}-${hash}`;
    const key = this.key(d.metadata);
    if (this.current.get(key) === name) return;
    this.current.set(key, name);
    if (this.io.server.get('replicasets', namespace, name) === undefined) {
      const rs: SimReplicaSet = {
        apiVersion: 'apps/v1',
        kind: 'ReplicaSet',
        metadata: {
          name,
          namespace,
          labels: { ...d.spec.template.metadata.labels, [TEMPLATE_HASH]: hash },
          ownerReferences: [
            { apiVersion: 'apps/v1', kind: 'Deployment', name: d.metadata.name, controller: true },
          ],
        },
        spec: { replicas: d.spec.replicas, selector: d.spec.selector, template: d.spec.template },
      };
      this.io.server.create('replicasets', rs);
    }
    this.reconcile(key, place);
  }

  private podsOf(key: string): SimPod[] {
    const [namespace, name] = key.split('/') as [string, string];
    return this.io.server
      .list<SimPod>('pods', namespace)
      .filter(
        (p) =>
          p.metadata.deletionTimestamp === undefined && (controller(p.metadata) ?? '').startsWith(`${name}-`),
      );
  }

  /** Replaces missing pods of the newest ReplicaSet, removes old ones once a new one is ready, keeps status. */
  private reconcile(key: string, place: (pod: SimPod) => SimPod = (pod) => pod): void {
    const [namespace, name] = key.split('/') as [string, string];
    const d = this.io.server.get<SimDeployment>('deployments', namespace, name);
    const newest = this.current.get(key);
    if (d === undefined || newest === undefined) return;
    const pods = this.podsOf(key);
    const fresh = pods.filter((p) => controller(p.metadata) === newest);
    const old = pods.filter((p) => controller(p.metadata) !== newest);
    const recreate = d.spec.strategy.type === 'Recreate';
    if (recreate || fresh.some(isReady))
      for (const p of old) this.io.server.delete('pods', namespace, p.metadata.name);
    const wanted = recreate && old.length > 0 ? 0 : d.spec.replicas - fresh.length;
    for (let i = 0; i < wanted; i++) this.io.server.create<SimPod>('pods', place(this.podOf(d, newest)));
    this.keepStatus(d, key);
  }

  private podOf(d: SimDeployment, rs: string): SimPod {
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: `${rs}-${(this.counter++).toString(36).padStart(5, '0')}`,
        namespace: d.metadata.namespace ?? 'default',
        labels: { ...d.spec.template.metadata.labels },
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: rs, controller: true }],
      },
      spec: structuredClone(d.spec.template.spec),
      status: { phase: 'Pending' },
    };
  }

  private keepStatus(d: SimDeployment, key: string): void {
    const pods = this.podsOf(key);
    const ready = pods.filter(isReady).length;
    const newest = this.current.get(key);
    const updated = pods.filter((p) => controller(p.metadata) === newest).length;
    const status = {
      readyReplicas: ready,
      availableReplicas: ready,
      updatedReplicas: updated,
      observedGeneration: d.metadata.generation ?? 1,
    };
    const was = d.status ?? {};
    if (
      was.readyReplicas !== ready ||
      was.updatedReplicas !== updated ||
      was.observedGeneration !== status.observedGeneration
    )
      this.io.server.update<SimDeployment>('deployments', { ...d, status });
    this.countDown(key, ready);
  }

  /** Counts the time the Deployment has no ready replica. */
  private countDown(key: string, ready: number): void {
    const since = this.downSince.get(key);
    if (ready === 0 && since === undefined) this.downSince.set(key, this.io.nowMs());
    if (ready > 0 && since !== undefined) {
      this.downMs.set(key, (this.downMs.get(key) ?? 0) + this.io.nowMs() - since);
      this.downSince.delete(key);
    }
  }
}
