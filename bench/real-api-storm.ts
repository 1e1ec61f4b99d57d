// The forged-turn storm of `npm run bench:real` (issue 55 item 1): what a thief with the
// coordinator's token can make the waiters cost. A fresh kube-apiserver with N nodes, one of them
// NotReady (so --count-unavailable leaves no room at --concurrency 1), and W waiting agents. A quiet
// window first (the waiters alone), then the storm: the thief holds the coordinator's Lease and
// rewrites a turn on every waiter every EVERY for FOR. The thief's writes are the benchmark's own
// (taken out of the server's counters, as the set-up is): what remains is what the agents paid.
// Then the NotReady node comes back and the time until a waiter holds the slot is measured.
import { STATUS_ANNOTATION, parseStatus } from '../src/node/status.js';
import { ADVICE_ANNOTATION, coordinatorLeaseName, formatAdvice } from '../src/queue/coordinator-lease.js';
import { TURN_ANNOTATION, formatTurn } from '../src/queue/turn.js';
import { AdminClient } from './real-api-admin.js';
import { KuredFleet, Problems } from './real-api-agents.js';
import {
  DS_NAME,
  LOCK_ANNOTATION,
  NS,
  bootId,
  nodeName,
  nodeStatus,
  setUpCluster,
} from './real-api-fleet.js';
import { scrape, windowCost, type WindowCost } from './real-api-metrics.js';
import { Observer } from './real-api-observer.js';
import { startRealApiServer } from './real-api-server.js';

export interface StormOptions {
  /** Nodes in the cluster (node 0 is the NotReady one; the waiters are nodes 1..waiters). */
  n: number;
  waiters: number;
  /** How often the thief rewrites every turn, and for how long (the quiet window is as long). */
  everyMs: number;
  forMs: number;
  identity: 'agents' | 'admin';
  assets: string;
  progress: (line: string) => void;
}

export interface StormResult {
  options: Omit<StormOptions, 'assets' | 'progress'>;
  quiet: WindowCost;
  storm: WindowCost;
  /** Turn annotations the thief wrote (and Lease writes). */
  turnsWritten: number;
  leaseWrites: number;
  /** Reboots while the node was NotReady (must be 0), and at most how many were down at once. */
  rebootsWhileDown: number;
  /** From the node's return to a waiter named by the lock (ms), or undefined when none within a minute. */
  takenAfterReturnMs: number | undefined;
  problems: Problems;
}

const THIEF = 'thief';
const THIEF_LEASE_SECONDS = 30;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The node's status as its kubelet reports it, Ready or not. */
function statusOf(i: number, ready: boolean): Record<string, unknown> {
  const status = nodeStatus(i, bootId(i, 1), new Date());
  if (ready) return status;
  const conditions = (status.conditions as { type: string }[]).map((c) =>
    c.type === 'Ready'
      ? {
          ...c,
          status: 'Unknown',
          reason: 'NodeStatusUnknown',
          message: 'Kubelet stopped posting node status.',
        }
      : c,
  );
  return { ...status, conditions };
}

async function setReady(admin: AdminClient, i: number, ready: boolean): Promise<void> {
  await admin.json({
    method: 'PATCH',
    path: `/api/v1/nodes/${nodeName(i)}/status`,
    contentType: 'application/merge-patch+json',
    body: { status: statusOf(i, ready) },
  });
}

/** How many of the waiters' nodes say they wait for the lock. */
async function waiting(admin: AdminClient, waiters: number): Promise<number> {
  let count = 0;
  for (let i = 1; i <= waiters; i++) {
    const node = await admin.json<{ metadata?: { annotations?: Record<string, string> } }>({
      method: 'GET',
      path: `/api/v1/nodes/${nodeName(i)}`,
    });
    if (parseStatus(node?.metadata?.annotations?.[STATUS_ANNOTATION])?.phase === 'waiting-for-lock') count++;
  }
  return count;
}

/** The lock's holders' node names, as the DaemonSet's annotation says. */
async function holders(admin: AdminClient): Promise<string[]> {
  const ds = await admin.json<{ metadata?: { annotations?: Record<string, string> } }>({
    method: 'GET',
    path: `/apis/apps/v1/namespaces/${NS}/daemonsets/${DS_NAME}`,
  });
  const text = ds?.metadata?.annotations?.[LOCK_ANNOTATION] ?? '';
  return [...text.matchAll(/"nodeID":"([^"]+)"/g)].map((m) => m[1] ?? '');
}

/**
 * A stand-in for the daemonset controller: the other DaemonSet's status written every 30 s, as a
 * real cluster's DaemonSets change. kube-apiserver sends the watches of a resource no bookmark until
 * its watch cache has seen an event after they started; without one, every waiter's quiet watch of
 * the lock fell silent at 90 s and was read again (a cost of the bench, not of a cluster).
 */
function daemonSetController(admin: AdminClient): NodeJS.Timeout {
  let generation = 0;
  return setInterval(() => {
    void admin
      .json({
        method: 'PATCH',
        path: `/apis/apps/v1/namespaces/${NS}/daemonsets/kube-proxy/status`,
        contentType: 'application/merge-patch+json',
        body: { status: { observedGeneration: ++generation } },
      })
      .catch(() => undefined);
  }, 30_000);
}

/** The thief: the coordinator's Lease as its own, renewed, and a fresh turn on every waiter. */
class Thief {
  turnsWritten = 0;
  leaseWrites = 0;
  private seq = 0;

  constructor(
    private readonly admin: AdminClient,
    private readonly waiters: number,
  ) {}

  async write(): Promise<void> {
    const now = new Date().toISOString().replace(/Z$/, '000Z');
    const advice = formatAdvice({ by: THIEF, seq: ++this.seq, nodes: 1 });
    const name = coordinatorLeaseName(DS_NAME);
    const lease = {
      metadata: { name, namespace: NS, annotations: { [ADVICE_ANNOTATION]: advice } },
      spec: { holderIdentity: THIEF, leaseDurationSeconds: THIEF_LEASE_SECONDS, renewTime: now },
    };
    const path = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`;
    if (this.seq === 1)
      await this.admin.json(
        { method: 'POST', path, body: { ...lease, spec: { ...lease.spec, acquireTime: now } } },
        [409],
      );
    else
      await this.admin.json({
        method: 'PATCH',
        path: `${path}/${name}`,
        contentType: 'application/merge-patch+json',
        body: lease,
      });
    this.leaseWrites++;
    const turn = formatTurn({ since: new Date().toISOString(), by: THIEF });
    await Promise.all(
      Array.from({ length: this.waiters }, (_, k) =>
        this.admin.json({
          method: 'PATCH',
          path: `/api/v1/nodes/${nodeName(k + 1)}`,
          contentType: 'application/merge-patch+json',
          body: { metadata: { annotations: { [TURN_ANNOTATION]: turn } } },
        }),
      ),
    );
    this.turnsWritten += this.waiters;
  }
}

/** Runs the storm and measures it; the server is stopped at the end. */
export async function runStorm(o: StormOptions): Promise<StormResult> {
  const server = await startRealApiServer(o.assets);
  const admin = new AdminClient(server.url, server.token, server.ca);
  const problems = new Problems();
  const observer = new Observer(admin, 1, (m) => {
    problems.keep('bench', 'warn', m);
  });
  const fleet = new KuredFleet({
    n: o.n,
    concurrency: 1,
    bootMs: 3_000,
    rebootDelayMs: 0,
    kubeconfig: server.kubeconfig,
    identity: o.identity,
    workers: 1,
    admin,
    observer,
    problems,
  });
  let ticking: NodeJS.Timeout | undefined;
  try {
    o.progress(`storm: kube-apiserver up; ${o.n} nodes, node 0 NotReady, ${o.waiters} waiters`);
    await setUpCluster(admin, o.n, () => new Date());
    await setReady(admin, 0, false);
    ticking = daemonSetController(admin);
    for (let i = 1; i <= o.waiters; i++) fleet.startAgent(i);
    const settleBy = Date.now() + 180_000;
    while ((await waiting(admin, o.waiters)) < o.waiters && Date.now() < settleBy) await sleep(2_000);
    await sleep(10_000);
    o.progress(`storm: ${await waiting(admin, o.waiters)} of ${o.waiters} wait for the lock; quiet window`);
    const quietFrom = await scrape(admin, server.etcdPid);
    await sleep(o.forMs);
    const stormFrom = await scrape(admin, server.etcdPid);
    o.progress(`storm: turns rewritten every ${o.everyMs} ms for ${o.forMs / 1000} s`);
    const thief = new Thief(admin, o.waiters);
    const until = Date.now() + o.forMs;
    for (let next = Date.now(); next < until; next += o.everyMs) {
      await thief.write().catch((err: unknown) => {
        problems.keep('thief', 'warn', 'thief write failed', { error: String(err) });
      });
      await sleep(Math.max(0, next + o.everyMs - Date.now()));
    }
    const stormTo = await scrape(admin, server.etcdPid);
    const rebootsWhileDown = fleet.reboots;
    await setReady(admin, 0, true);
    const back = Date.now();
    let takenAfterReturnMs: number | undefined;
    while (takenAfterReturnMs === undefined && Date.now() - back < 60_000) {
      if ((await holders(admin)).length > 0) takenAfterReturnMs = Date.now() - back;
      else await sleep(250);
    }
    return {
      options: { n: o.n, waiters: o.waiters, everyMs: o.everyMs, forMs: o.forMs, identity: o.identity },
      quiet: windowCost(quietFrom, stormFrom, 0),
      storm: windowCost(stormFrom, stormTo, 0),
      turnsWritten: thief.turnsWritten,
      leaseWrites: thief.leaseWrites,
      rebootsWhileDown,
      takenAfterReturnMs,
      problems,
    };
  } finally {
    clearInterval(ticking);
    fleet.stop();
    admin.close();
    await server.stop();
  }
}
