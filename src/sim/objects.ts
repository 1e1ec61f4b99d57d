// The Kubernetes objects of a simulated cluster, as the JSON the fake API server stores.
// We write timestamps as RFC 3339 strings; the server's direct API hands back client-node model
// objects, whose timestamps are Date objects: the types allow both.
import type { ClientNodeKube } from '../kube/client.js';
import type { ResourceName } from './fake-api/resources.js';
import { HISTORY_ANNOTATION, parseHistory } from '../node/history.js';

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid?: string; controller?: boolean }[];
  deletionTimestamp?: string | Date;
  deletionGracePeriodSeconds?: number;
  creationTimestamp?: string | Date;
  finalizers?: string[];
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  lastTransitionTime?: string | Date;
}

export interface SimNode {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: { unschedulable?: boolean; taints?: { key: string; value?: string; effect: string }[] };
  status: {
    conditions: Condition[];
    nodeInfo: { bootID: string; [key: string]: string };
    /** simulate --volumes-per-node (volumes.ts): attached by name, and in use. */
    volumesAttached?: { name: string; devicePath: string }[];
    volumesInUse?: string[];
  };
}

export interface SimPod {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: {
    nodeName?: string;
    terminationGracePeriodSeconds?: number;
    containers: { name: string; image: string }[];
  };
  status?: { phase?: string; conditions?: Condition[] };
}

export interface SimDaemonSet {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: {
    selector: { matchLabels: Record<string, string> };
    template: {
      metadata: { labels: Record<string, string> };
      spec: { containers: { name: string; image: string }[] };
    };
  };
  /** desiredNumberScheduled: the nodes the DaemonSet runs on (the lock's --concurrency N%). */
  status?: { desiredNumberScheduled?: number };
}

export interface SimPdb {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: {
    selector: { matchLabels: Record<string, string> };
    minAvailable?: number | string;
    maxUnavailable?: number | string;
  };
  status?: { disruptionsAllowed?: number };
}

/** A write the server accepted (the shape of the fake API server's onWrite events). */
export interface SimWriteEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  resource: ResourceName;
  object: unknown;
}

/** The fake API server's direct, in-memory API as the simulator uses it (no HTTP). */
export interface SimServer {
  readonly url: string;
  /** A client of the server that hands it requests in memory (FakeApiServer.kubeInMemory). */
  kubeInMemory(): ClientNodeKube;
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the server's signature
  get<T extends object>(resource: ResourceName, namespace: string | undefined, name: string): T | undefined;
  list<T extends object>(resource: ResourceName, namespace?: string): T[];
  create<T extends object>(resource: ResourceName, obj: T): T;
  update<T extends object>(resource: ResourceName, obj: T): T;
  delete(resource: ResourceName, namespace: string | undefined, name: string): void;
  readonly requests: readonly {
    method: string;
    path: string;
    query: Record<string, string>;
    status: number;
    at: number;
    /** Bytes of the answer's body. */
    bytes?: number;
    /** The caller's node claim (an agent's). */
    node?: string;
  }[];
  /** Bytes of every answer's body so far. */
  readonly responseBytes: number;
  /** The requests that have arrived so far from the agent of `node` (never trimmed). */
  requestsBy(node: string): number;
  onWrite(listener: (e: SimWriteEvent) => void): () => void;
  close(): Promise<void>;
}

function condition(obj: { status?: { conditions?: Condition[] } }, type: string): Condition | undefined {
  return obj.status?.conditions?.find((c) => c.type === type);
}

export function isReady(obj: { status?: { conditions?: Condition[] } }): boolean {
  return condition(obj, 'Ready')?.status === 'True';
}

/** Sets (or replaces) one condition, stamping lastTransitionTime when the status changes. */
export function setCondition(conditions: Condition[], next: Condition): Condition[] {
  const old = conditions.find((c) => c.type === next.type);
  const stamped: Condition =
    old && old.status === next.status && old.lastTransitionTime
      ? { ...next, lastTransitionTime: old.lastTransitionTime }
      : next;
  return [...conditions.filter((c) => c.type !== next.type), stamped];
}

export function ownerKind(pod: SimPod): string | undefined {
  return pod.metadata.ownerReferences?.find((o) => o.controller ?? true)?.kind;
}

/** Nodes whose history's last record is a successful reboot into another kernel. */
export function kernelsUpdated(nodes: readonly { metadata: ObjectMeta }[]): number {
  return nodes.filter((n) => {
    const last = parseHistory(n.metadata.annotations?.[HISTORY_ANNOTATION]).at(-1);
    return last?.result === 'success' && last.kernelBefore !== last.kernelAfter;
  }).length;
}
