// PdbBlocker: pre-flight before taking a slot: would the drain be held back by a PodDisruptionBudget?
// It asks the API server itself, pod by pod, with a dry-run eviction (dryRun=All: judged, nothing
// evicted) of each pod the drain would evict, carrying what the drain's eviction will carry
// (evictionOptions): a 429 is a budget that allows no disruption now (the drain would stall holding
// the slot), a 500 a pod covered by more than one budget (which the Eviction API refuses outright:
// the drain would fail). The server applies its own rules (the
// budget's unhealthy-pod policy, a budget whose status is not yet current), the same the drain will
// meet, and the cost is one small request per pod of this node whatever the cluster's size: reading
// the budgets instead meant a list of every PDB of its pods' namespaces, which in a namespace that
// grows with the fleet grows with it (DESIGN §13; 1,333 budgets in one namespace at 1,000 nodes of
// the simulator were most of its bytes).
import { isConflict, isNotFound, isTooManyRequests, underSeveralBudgets } from '../kube/errors.js';
import type { Kube, V1Pod } from '../kube/kube.js';
import { coveringBudgets } from '../drain/covering-budgets.js';
import { evictionOptions } from '../drain/eviction.js';
import { pdbFromCause } from '../drain/eviction-answer.js';
import { planPod } from '../drain/drain-plan.js';
import { replicaVerdict } from '../drain/single-replica.js';
import type { DrainRule } from '../config/config.js';
import type { Selector } from '../selector/label-selector.js';
import type { Blocker, Verdict } from './blocker.js';

export interface PdbBlockerOptions {
  kube: Kube;
  nodeId: string;
  /** --drain-pod-selector: the same skip rules as the drain. */
  drainPodSelector: Selector;
  /** --drain-rules: pods the rules (or their labels) say skip or wait-completed are not evicted. */
  drainRules?: readonly DrainRule[];
  /**
   * --drain-grace-period (-1 = each pod's own): the dry run carries what the drain's eviction will
   * (evictionOptions), so that the server judges the same request.
   */
  drainGracePeriodSeconds: number;
  /**
   * --single-replica restart: a pod a budget protects that is its Deployment's only ready replica and
   * can be restarted elsewhere first does not block (the agent restarts it before the drain, and the
   * Deployment removes the old pod itself). Default false.
   */
  singleReplicaRestart?: boolean;
}

function nameOf(obj: { metadata?: { namespace?: string; name?: string } }): string {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}

export class PdbBlocker implements Blocker {
  readonly name = 'pdb';
  readonly atSlot = true;

  constructor(private readonly options: PdbBlockerOptions) {}

  async check(signal?: AbortSignal): Promise<Verdict> {
    const { kube, nodeId, drainPodSelector, drainRules = [] } = this.options;
    const pods = await kube.listPods(undefined, { fieldSelector: `spec.nodeName=${nodeId}` }, signal);
    // The drain's own plan, so that the pre-flight asks about exactly the pods it would evict (a pod
    // with a bad drain label is not asked about: the drain fails on it, naming it).
    const plan = { podSelector: drainPodSelector, rules: drainRules };
    const evict = pods.filter((p) => p.spec?.nodeName === nodeId && planPod(p, plan).action === 'evict');
    for (const pod of evict) {
      const verdict = await this.ask(pod, signal);
      if (verdict.blocked) return verdict;
    }
    return { blocked: false };
  }

  /**
   * One pod's dry-run eviction. Answers other than a budget's refusal (a 429 without a budget cause
   * is the server throttling us) throw: a blocker that errors blocks, with the error as its reason.
   */
  private async ask(pod: V1Pod, signal?: AbortSignal): Promise<Verdict> {
    try {
      const { kube, drainGracePeriodSeconds } = this.options;
      const [namespace, name] = [pod.metadata?.namespace ?? '', pod.metadata?.name ?? ''];
      await kube.dryRunEviction(namespace, name, evictionOptions(drainGracePeriodSeconds, pod), signal);
      return { blocked: false };
    } catch (err) {
      // gone since the list (404), or replaced under its name (409 on the UID): nothing of it to evict
      if (isNotFound(err) || isConflict(err)) return { blocked: false };
      const reason = await this.refusal(pod, err, signal);
      if (reason === undefined) throw err;
      return (await this.restartable(pod, err, signal)) ? { blocked: false } : { blocked: true, reason };
    }
  }

  /** --single-replica restart will restart this pod's Deployment before the drain evicts it. */
  private async restartable(pod: V1Pod, err: unknown, signal?: AbortSignal): Promise<boolean> {
    // a budget's refusal only: a pod under two budgets fails the drain whatever happens first
    if (this.options.singleReplicaRestart !== true || !isTooManyRequests(err)) return false;
    const kube = this.options.kube;
    // owners that cannot be read (gone, or no answer): the budget's refusal stands, as without the flag
    const verdict = await replicaVerdict(pod, {
      replicaSet: (ns, name) => kube.getReplicaSet(ns, name, signal),
      deployment: (ns, name) => kube.getDeployment(ns, name, signal),
    }).catch(() => undefined);
    return verdict?.action === 'restart';
  }

  /** Why the Eviction API refused the pod, when a budget did; undefined for any other failure. */
  private async refusal(pod: V1Pod, err: unknown, signal?: AbortSignal): Promise<string | undefined> {
    const budget = isTooManyRequests(err) ? pdbFromCause(err) : undefined;
    if (budget !== undefined) {
      const namespace = pod.metadata?.namespace ?? '';
      return `PodDisruptionBudget ${namespace}/${budget} allows no disruption of pod ${nameOf(pod)}`;
    }
    if (!underSeveralBudgets(err)) return undefined;
    const budgets = await coveringBudgets(this.options.kube, pod, signal);
    const named = budgets.length > 1 ? ` (${budgets.join(', ')})` : '';
    return (
      `pod ${nameOf(pod)} is covered by more than one PodDisruptionBudget${named}: ` +
      'the Eviction API refuses to evict such a pod, so the drain would fail'
    );
  }
}
