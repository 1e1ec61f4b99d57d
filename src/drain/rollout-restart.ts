// The actions of --single-replica restart over the API (single-replica.ts decides): which pods of
// this node the drain would evict are single replicas, the restart of their Deployment (the merge
// patch `kubectl rollout restart` sends, guarded by the Deployment's resourceVersion), and whether
// the Deployment is available again with a new pod elsewhere. Every call carries the client's
// deadline and the caller's signal.
import type { Clock } from '../clock/clock.js';
import type { DrainRule } from '../config/config.js';
import { isConflict, isNotFound } from '../kube/errors.js';
import { errorText } from '../text/error-text.js';
import type { Kube, V1Deployment, V1Pod } from '../kube/kube.js';
import type { Selector } from '../selector/label-selector.js';
import { planPod } from './drain-plan.js';
import {
  RESTARTED_AT_ANNOTATION,
  controllerOf,
  cannotSurge,
  replicaVerdict,
  type Owners,
  type ReplicaVerdict,
} from './single-replica.js';

/** One pod of this node the drain would evict, with its verdict. */
export interface ReplicaPlan {
  /** namespace/name */
  pod: string;
  verdict: ReplicaVerdict;
}

/** What came of a restart. */
export type RestartAnswer =
  /** Patched by us (`at` written as the template's restartedAt). */
  | { restarted: true }
  /** Not patched: someone else restarted it meanwhile (wait for theirs), or it can no longer surge. */
  | { restarted: false; wait: boolean; reason: string };

export interface RolloutRestarterOptions {
  kube: Kube;
  nodeId: string;
  clock: Clock;
  /** --drain-pod-selector and --drain-rules: the same pods as the drain. */
  podSelector: Selector;
  rules?: readonly DrainRule[];
}

/** Patches retried on a conflict (the Deployment changed between our read and our patch). */
const PATCH_ATTEMPTS = 3;

function split(key: string): [string, string] {
  const i = key.indexOf('/');
  return [key.slice(0, i), key.slice(i + 1)];
}

function restartedAt(d: V1Deployment): string | undefined {
  return d.spec?.template.metadata?.annotations?.[RESTARTED_AT_ANNOTATION];
}

function isReady(pod: V1Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
}

export class RolloutRestarter {
  constructor(private readonly o: RolloutRestarterOptions) {}

  /** The pods of this node the drain would evict, each with its verdict (owners read once each). */
  async plan(signal?: AbortSignal): Promise<ReplicaPlan[]> {
    const { kube, nodeId } = this.o;
    const pods = await kube.listPods(undefined, { fieldSelector: `spec.nodeName=${nodeId}` }, signal);
    const rules = { podSelector: this.o.podSelector, rules: this.o.rules ?? [] };
    const evicted = pods.filter((p) => planPod(p, rules).action === 'evict');
    const cache = new Map<string, Promise<unknown>>();
    const once = <T>(key: string, read: () => Promise<T>): Promise<T> => {
      const known = cache.get(key) ?? read();
      cache.set(key, known);
      return known as Promise<T>;
    };
    const owners: Owners = {
      replicaSet: (ns, name) => once(`rs ${ns}/${name}`, () => kube.getReplicaSet(ns, name, signal)),
      deployment: (ns, name) => once(`d ${ns}/${name}`, () => kube.getDeployment(ns, name, signal)),
    };
    const out: ReplicaPlan[] = [];
    for (const pod of evicted) {
      const key = `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
      const verdict = await replicaVerdict(pod, owners).catch((err: unknown): ReplicaVerdict =>
        // an owner gone meanwhile: nothing to restart; any other answer: today's behaviour, said
        isNotFound(err)
          ? { action: 'evict' }
          : { action: 'keep', reason: `its owners could not be read: ${errorText(err)}` },
      );
      out.push({ pod: key, verdict });
    }
    return out;
  }

  /**
   * `kubectl rollout restart` of one Deployment: the template's restartedAt set to `at`, in a merge
   * patch guarded by the resourceVersion of a fresh read, judged again on that read (its strategy may
   * have changed). A conflict is read again: restarted by someone else meanwhile (its restartedAt
   * changed) means theirs is waited for, never a second restart.
   */
  async restart(deployment: string, at: string, signal?: AbortSignal): Promise<RestartAnswer> {
    const [namespace, name] = split(deployment);
    const first = await this.o.kube.getDeployment(namespace, name, signal);
    let current = first;
    for (let attempt = 1; ; attempt++) {
      if (restartedAt(current) !== restartedAt(first))
        return { restarted: false, wait: true, reason: 'restarted by someone else meanwhile' };
      const cannot = cannotSurge(current);
      if (cannot !== undefined) return { restarted: false, wait: false, reason: `it has ${cannot}` };
      try {
        await this.o.kube.mergePatchDeployment(namespace, name, restartPatch(current, at), signal);
        return { restarted: true };
      } catch (err) {
        if (!isConflict(err) || attempt >= PATCH_ATTEMPTS) throw err;
      }
      current = await this.o.kube.getDeployment(namespace, name, signal);
    }
  }

  /**
   * Is the Deployment available again with a ready pod on another node than this one? undefined when
   * it is; else what it still waits for.
   */
  async waitingFor(deployment: string, signal?: AbortSignal): Promise<string | undefined> {
    const [namespace, name] = split(deployment);
    const d = await this.o.kube.getDeployment(namespace, name, signal);
    const labels = d.spec?.selector.matchLabels ?? {};
    const selector = Object.entries(labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    if (selector === '') return 'a Deployment without matchLabels';
    const pods = await this.o.kube.listPods(namespace, { labelSelector: selector }, signal);
    const fresh = pods.some(
      (p) =>
        isReady(p) &&
        p.metadata?.deletionTimestamp === undefined &&
        p.spec?.nodeName !== undefined &&
        p.spec.nodeName !== this.o.nodeId &&
        controllerOf(p)?.kind === 'ReplicaSet',
    );
    if (!fresh) return 'a new ready pod on another node';
    if ((d.status?.availableReplicas ?? 0) < 1) return 'the Deployment to be available';
    return undefined;
  }
}

/** The patch: the restartedAt annotation, and the resourceVersion read as its precondition. */
function restartPatch(d: V1Deployment, at: string): object {
  return {
    metadata: { resourceVersion: d.metadata?.resourceVersion },
    spec: { template: { metadata: { annotations: { [RESTARTED_AT_ANNOTATION]: at } } } },
  };
}
