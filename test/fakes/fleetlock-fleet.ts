// Clusters of real agents (createAgent: client-node against the fake API server over loopback) that
// share one FleetLock server (test/fakes/fleetlock-server.ts), with the invariants watched on every
// write: no cordon and no reboot without the node's FleetLock grant, never more clusters with a node
// in its cycle than the group's slots.
import { createAgent } from '../../src/agent/create-agent.js';
import { SystemClock } from '../../src/clock/clock.js';
import type { V1DaemonSet, V1Node, V1Pod } from '../../src/kube/kube.js';
import { ClientNodeKube } from '../../src/kube/client.js';
import { entriesOf, parseLockAnnotation } from '../../src/lock/kured-lock-format.js';
import { MemoryLogger } from '../../src/log/logger.js';
import { CYCLE_ANNOTATION } from '../../src/node/cycle.js';
import { STATUS_ANNOTATION, parseStatus } from '../../src/node/status.js';
import type { Rebooter } from '../../src/reboot/rebooter.js';
import type { FakeApiServer } from '../../src/sim/fake-api-server.js';
import { startClusterApiServer } from './cluster-api-server.js';
import { testConfig } from './config.js';
import type { FleetLockServer } from './fleetlock-server.js';
import { kuredDaemonSet, nodeInfo, readyNode, webPod } from './kube-objects.js';

export const GROUP = 'shared';
const NS = 'kube-system';
const DS = 'kured';
const LOCK = 'weave.works/kured-node-lock';

/** One cluster: its API server and its nodes' names. */
export interface FleetCluster {
  name: string;
  server: FakeApiServer;
  nodes: string[];
  /** The node the observer saw take its cordon first, in order. */
  cordons: string[];
  /** Reboot requests, in order. */
  reboots: string[];
}

export class FleetLockFleet {
  readonly clusters: FleetCluster[] = [];
  readonly violations: string[] = [];
  readonly logger = new MemoryLogger();
  /** Most clusters with a node in its cycle at once. */
  maxActive = 0;
  /** Called at each reboot request, before the host goes down (a test's fault goes here). */
  onReboot: ((node: string) => void) | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly controller = new AbortController();
  private readonly runs: Promise<void>[] = [];
  private readonly unsubscribe: (() => void)[] = [];

  constructor(readonly fleetLock: FleetLockServer) {}

  /** A cluster named `name` with `nodes` nodes (`<name>-n1`, …), each with a web pod, all needing a reboot. */
  async addCluster(name: string, nodes: number): Promise<FleetCluster> {
    const server = await startClusterApiServer();
    server.create('daemonsets', kuredDaemonSet());
    const names = Array.from({ length: nodes }, (_, i) => `${name}-n${i + 1}`);
    for (const node of names) {
      server.create<V1Node>('nodes', readyNode(node));
      server.create<V1Pod>('pods', webPod(`web-${node}`, node));
    }
    const cluster: FleetCluster = { name, server, nodes: names, cordons: [], reboots: [] };
    this.clusters.push(cluster);
    this.unsubscribe.push(
      server.onWrite((e) => {
        this.watch(cluster, e.resource, e.object);
      }),
    );
    return cluster;
  }

  /** Starts every cluster's agents. */
  start(): void {
    for (const cluster of this.clusters) {
      for (const node of cluster.nodes) this.runs.push(this.agent(cluster, node));
    }
  }

  async stop(): Promise<void> {
    this.controller.abort();
    await Promise.all(this.runs);
    for (const t of this.timers) clearTimeout(t);
    for (const u of this.unsubscribe) u();
    await Promise.all(this.clusters.map((c) => c.server.close()));
  }

  node(cluster: FleetCluster, name: string): V1Node | undefined {
    return cluster.server.get<V1Node>('nodes', undefined, name);
  }

  status(cluster: FleetCluster, name: string): { phase?: string; reason?: string } | undefined {
    return parseStatus(this.node(cluster, name)?.metadata?.annotations?.[STATUS_ANNOTATION]);
  }

  holders(cluster: FleetCluster): string[] {
    const text = cluster.server.get<V1DaemonSet>('daemonsets', NS, DS)?.metadata?.annotations?.[LOCK];
    return text === undefined ? [] : entriesOf(parseLockAnnotation(text)).map((e) => e.nodeID);
  }

  inCycle(cluster: FleetCluster, name: string): boolean {
    return this.node(cluster, name)?.metadata?.annotations?.[CYCLE_ANNOTATION] !== undefined;
  }

  /** Every node rebooted once, uncordoned, in no cycle, no slot held here or at the FleetLock server. */
  waveDone(): boolean {
    return (
      this.fleetLock.state.holding(GROUP).length === 0 &&
      this.clusters.every(
        (c) =>
          this.holders(c).length === 0 &&
          c.nodes.every((n) => {
            const node = this.node(c, n);
            return (
              node?.status?.nodeInfo?.bootID === 'boot-2' &&
              node.spec?.unschedulable !== true &&
              !this.inCycle(c, n) &&
              this.status(c, n)?.phase === 'idle'
            );
          }),
      )
    );
  }

  private granted(node: string): boolean {
    return this.fleetLock.state.holding(GROUP).includes(node);
  }

  private watch(cluster: FleetCluster, resource: string, object: unknown): void {
    const active = this.clusters.filter((c) => c.nodes.some((n) => this.inCycle(c, n))).length;
    this.maxActive = Math.max(this.maxActive, active);
    if (active > this.fleetLock.state.slots) this.violations.push(`${active} clusters in a cycle at once`);
    if (resource !== 'nodes') return;
    const node = object as V1Node;
    const name = node.metadata?.name ?? '';
    if (node.spec?.unschedulable !== true || cluster.cordons.includes(name)) return;
    cluster.cordons.push(name);
    if (!this.granted(name)) this.violations.push(`${name} cordoned without a FleetLock grant`);
  }

  private agent(cluster: FleetCluster, name: string): Promise<void> {
    const required = { value: true };
    const agent = createAgent(
      testConfig({
        nodeId: name,
        periodMs: 300,
        rebootDelayMs: 20,
        drainTimeoutMs: 10_000,
        concurrency: { count: 1 },
        preferNoScheduleTaint: 'weave.works/kured-node-reboot',
        postRebootTimeoutMs: 60_000,
        fleetlockUrl: this.fleetLock.url,
        fleetlockGroup: GROUP,
      }),
      {
        kube: new ClientNodeKube(cluster.server.kubeConfig()),
        clock: new SystemClock(),
        logger: this.logger,
        sentinel: { rebootRequired: () => Promise.resolve({ required: required.value }) },
        rebooter: this.host(cluster, name, required),
        fleetLock: { timeoutMs: 200, backoffMs: 20 },
      },
    );
    return agent.run(this.controller.signal);
  }

  /** The host: the reboot request takes the node down (NotReady, new bootID) and back up 100 ms later. */
  private host(cluster: FleetCluster, name: string, required: { value: boolean }): Rebooter {
    const { server } = cluster;
    const later = (ms: number, fn: () => void): void => {
      // eslint-disable-next-line no-restricted-syntax -- real time: the FleetLock servers run on real time
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        fn();
      }, ms);
      this.timers.add(timer);
    };
    return {
      reboot: () => {
        cluster.reboots.push(name);
        if (!this.granted(name)) this.violations.push(`${name} rebooted without a FleetLock grant`);
        this.onReboot?.(name);
        later(30, () => {
          const node = server.get<V1Node>('nodes', undefined, name)!;
          node.status = {
            ...node.status,
            nodeInfo: nodeInfo('boot-2'),
            conditions: [{ type: 'Ready', status: 'False' }],
          };
          required.value = false;
          server.update('nodes', node);
          later(100, () => {
            const again = server.get<V1Node>('nodes', undefined, name)!;
            again.status = { ...again.status, conditions: [{ type: 'Ready', status: 'True' }] };
            server.update('nodes', again);
          });
        });
        return Promise.resolve();
      },
    };
  }
}
