// FleetLock where the world misbehaves: real agents (client-node against the fake API server over
// loopback) and a FleetLock server over loopback that answers 500, restarts with or without its
// slots, or never answers. What must hold: no cordon and no reboot without the node's grant, no
// wave stuck once the server answers again, and never more clusters rebooting than the group's slots.
import { afterEach, describe, expect, it } from '@jest/globals';
import { FleetLockFleet, GROUP, type FleetCluster } from '../../fakes/fleetlock-fleet.js';
import { startFleetLockServer, type FleetLockServer } from '../../fakes/fleetlock-server.js';
import { waitFor } from '../../fakes/wait-for.js';

let fleetLock: FleetLockServer;
let fleet: FleetLockFleet;

afterEach(async () => {
  await fleet.stop();
  await fleetLock.stop();
});

async function oneCluster(nodes: number): Promise<FleetCluster> {
  fleetLock = await startFleetLockServer(1);
  fleet = new FleetLockFleet(fleetLock);
  return fleet.addCluster('c1', nodes);
}

/** The nodes of `cluster` other than `first` that cordoned or rebooted. */
function othersMoved(cluster: FleetCluster, first: string): string[] {
  return [...cluster.cordons, ...cluster.reboots].filter((n) => n !== first);
}

describe('a FleetLock server that fails mid-wave', () => {
  it.each([
    ['answers 500', 'error-500' as const],
    ['restarts and forgets its slots', 'forget' as const],
    ['restarts and keeps its slots', 'keep' as const],
  ])(
    'when it %s, no node reboots without a grant, and the wave finishes once it answers again',
    async (_name, fault) => {
      const cluster = await oneCluster(3);
      let first: string | undefined;
      fleet.onReboot = (node) => {
        if (first !== undefined) return;
        first = node;
        if (fault === 'error-500') fleetLock.mode = 'error-500';
        else void fleetLock.stop();
      };
      fleet.start();
      try {
        await waitFor(() => first !== undefined, 'the first node asked for its reboot');
        const firstNode = first!;
        // the first node finishes its cycle; its release and every other node's ask fail meanwhile
        const others = cluster.nodes.filter((n) => n !== firstNode);
        const failing =
          fault === 'error-500' ? /^fleetlock: internal_error: / : /^fleetlock: no answer from /;
        await waitFor(
          () =>
            !fleet.inCycle(cluster, firstNode) &&
            fleet.holders(cluster).length === 0 &&
            others.every((n) => failing.test(fleet.status(cluster, n)?.reason ?? '')),
          'the first node done and the others waiting on the failing server',
        );
        const failedBefore = fleetLock.requests.failed;
        if (fault === 'error-500') {
          await waitFor(() => fleetLock.requests.failed >= failedBefore + 6, 'two more refused rounds');
        }
        expect(othersMoved(cluster, firstNode)).toEqual([]);
        for (const n of others) expect(fleet.status(cluster, n)?.phase).toBe('waiting-for-lock');

        if (fault === 'error-500') fleetLock.mode = 'ok';
        else {
          if (fault === 'forget') fleetLock.state.reset();
          await fleetLock.start();
        }
        await waitFor(() => fleet.waveDone(), 'every node rebooted and every slot released', 60_000);
      } finally {
        fleet.onReboot = undefined;
      }
      expect(fleet.violations).toEqual([]);
      expect([...cluster.reboots].sort()).toEqual([...cluster.nodes].sort());
      expect(fleetLock.state.holding(GROUP)).toEqual([]);
    },
    90_000,
  );
});

describe('a FleetLock server that never answers', () => {
  it('holds the reboot: the node never cordons, takes no in-cluster slot, and its status says why', async () => {
    const cluster = await oneCluster(1);
    const node = cluster.nodes[0]!;
    fleetLock.mode = 'hang';
    fleet.start();
    // one steady-state at start and one pre-reboot, each three requests cut by their deadline
    await waitFor(
      () =>
        fleetLock.requests.hung >= 6 &&
        /^fleetlock: no answer from http:\/\/127\.0\.0\.1:\d+: no answer within 200 ms \(3 attempts\); /.test(
          fleet.status(cluster, node)?.reason ?? '',
        ),
      'the node waiting on the silent server',
    );
    expect(fleet.status(cluster, node)?.phase).toBe('waiting-for-lock');
    expect(cluster.cordons).toEqual([]);
    expect(cluster.reboots).toEqual([]);
    expect(fleet.holders(cluster)).toEqual([]);
    expect(fleet.node(cluster, node)?.spec?.unschedulable).not.toBe(true);
    expect(fleet.violations).toEqual([]);
  }, 60_000);
});

describe('three clusters sharing a FleetLock group of one slot', () => {
  it('never reboot in two clusters at once, and every node of every cluster reboots', async () => {
    fleetLock = await startFleetLockServer(1);
    fleet = new FleetLockFleet(fleetLock);
    for (const name of ['east', 'west', 'north']) await fleet.addCluster(name, 2);
    fleet.start();
    await waitFor(() => fleet.waveDone(), 'all six nodes rebooted and released', 90_000);
    expect(fleet.violations).toEqual([]);
    expect(fleet.maxActive).toBe(1);
    for (const cluster of fleet.clusters) expect([...cluster.reboots].sort()).toEqual(cluster.nodes);
    // each cluster's nodes rebooted only while its own cluster held the group's one slot
    expect(fleetLock.state.counts.refused).toBeGreaterThan(0);
  }, 120_000);
});
