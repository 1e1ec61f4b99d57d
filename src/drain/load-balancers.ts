// Cloud load balancers in front of the nodes, as the drain needs to know them: since Kubernetes 1.19 a
// cordon no longer takes a node out of them (kubernetes #90823), so before the drain the node is
// labelled node.kubernetes.io/exclude-from-external-load-balancers (src/node/cycle-marks.ts) and the
// agent waits --lb-drain-wait: the service controller takes one sync (--node-sync-period, 100 s by
// default) to drop the node from each LoadBalancer Service's backends, and the cloud then drains its
// connections. A cluster without a Service of type LoadBalancer has no such backends: no wait.
import type { Kube } from '../kube/kube.js';
import { shortDuration } from '../text/duration.js';
import { errorText } from '../text/error-text.js';

/** Does the cluster have a Service of type LoadBalancer? `present` when it cannot tell (fail safe). */
export interface LbPresence {
  present: boolean;
  reason: string;
}

/** Asks one question: are there cloud load balancers whose backends the node may be in? */
export interface LoadBalancers {
  presence(signal?: AbortSignal): Promise<LbPresence>;
}

/** Services asked for in the one list (a page): a cluster with more is judged on these. */
export const SERVICES_PAGE = 500;

/**
 * One list of the Services of every namespace (one page of SERVICES_PAGE, from the watch cache), within
 * the client's deadline. A list that fails, or a first page without one while more follow, cannot
 * tell: the answer is "present", so the agent waits.
 */
export class KubeLoadBalancers implements LoadBalancers {
  constructor(private readonly kube: Pick<Kube, 'listServicesPage'>) {}

  async presence(signal?: AbortSignal): Promise<LbPresence> {
    let page;
    try {
      page = await this.kube.listServicesPage({ limit: SERVICES_PAGE, resourceVersion: '0' }, signal);
    } catch (err) {
      if (signal?.aborted === true) throw err;
      return {
        present: true,
        reason: `the Services cannot be listed (${errorText(err)}): assuming load balancers`,
      };
    }
    const lb = page.items.find((s) => s.spec?.type === 'LoadBalancer');
    if (lb !== undefined) {
      const name = `${lb.metadata?.namespace ?? ''}/${lb.metadata?.name ?? ''}`;
      return { present: true, reason: `Service ${name} is of type LoadBalancer` };
    }
    if (page.continue !== undefined) {
      return {
        present: true,
        reason: `none of the first ${SERVICES_PAGE} Services is of type LoadBalancer, but more follow: assuming load balancers`,
      };
    }
    return { present: false, reason: 'no Service of type LoadBalancer' };
  }
}

/** What the cycle knows when it decides on the wait. */
export interface LbWaitFacts {
  /** --exclude-from-lb */
  excludeFromLb: boolean;
  /** --lb-drain-wait in ms */
  waitMs: number;
  /** When this cycle labelled the node (the record's lbExcludedAt); undefined: the label is not ours. */
  labelledAtMs: number | undefined;
  nowMs: number;
}

/** The wait before the drain, with its reason; `ask`: the presence of load balancers decides it. */
export type LbWait = { waitMs: 0; reason: string } | { ask: true; remainingMs: number };

/** Before asking the cluster: no wait without our label, or once the wait has run out (a drain again). */
export function lbWaitBeforeAsking(facts: LbWaitFacts): LbWait {
  if (!facts.excludeFromLb) return { waitMs: 0, reason: '--exclude-from-lb is off' };
  if (facts.labelledAtMs === undefined) {
    return {
      waitMs: 0,
      reason: 'the node was out of the load balancers before this cycle (the label is not ours)',
    };
  }
  // on this host's clock (the same host wrote the time); never longer than the wait itself
  const remainingMs = Math.min(facts.waitMs, Math.max(0, facts.labelledAtMs + facts.waitMs - facts.nowMs));
  if (remainingMs === 0)
    return { waitMs: 0, reason: `--lb-drain-wait ${shortDuration(facts.waitMs)} has passed since the label` };
  return { ask: true, remainingMs };
}

/** With the cluster's answer: the wait that remains, or none without load balancers. */
export function lbWaitGiven(presence: LbPresence, remainingMs: number): { waitMs: number; reason: string } {
  if (!presence.present) return { waitMs: 0, reason: presence.reason };
  return {
    waitMs: remainingMs,
    reason: `${presence.reason}: waiting ${shortDuration(remainingMs)} (--lb-drain-wait) for the load balancers to drop the node`,
  };
}
