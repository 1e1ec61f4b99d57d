// Autoscaler protection (issue 33): one agent over the real seams against the fake API server, with
// a simulated autoscaler watching every write: a node in its cycle or its settle time is never one
// an autoscaler would remove; after the settle it is again; an admin's annotation stays.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Agent } from '../../../src/agent/agent.js';
import { createAgentDeps } from '../../../src/agent/create-agent.js';
import type { Config } from '../../../src/config/config.js';
import type { V1Node, V1Pod } from '../../../src/kube/kube.js';
import { MemoryLogger } from '../../../src/log/logger.js';
import {
  CLUSTER_AUTOSCALER_ANNOTATION as CA,
  KARPENTER_ANNOTATION as KARPENTER,
  PROTECTION_ANNOTATION as PROTECTION,
  parseProtection,
} from '../../../src/node/autoscaler.js';
import { CYCLE_LABEL } from '../../../src/node/cycle.js';
import { wouldRemove } from '../../../src/sim/autoscaler.js';
import type { FakeApiServer } from '../../../src/sim/fake-api-server.js';
import { startClusterApiServer } from '../../fakes/cluster-api-server.js';
import { testConfig } from '../../fakes/config.js';
import { kuredDaemonSet, nodeInfo, readyNode, webPod } from '../../fakes/kube-objects.js';
import { SteeredClock } from '../../fakes/fake-clock.js';
import { storedNode } from '../../fakes/cluster-reads.js';

const MINUTE = 60_000;

let server: FakeApiServer;
let clock: SteeredClock;
let required: boolean;
/** What the watching autoscaler would have removed, with what the node was doing then. */
let removals: { inCycle: boolean; atMs: number }[];
let stopWatching: () => void;

function node(): V1Node {
  return storedNode(server, 'n1');
}

function annotations(): Record<string, string> {
  return { ...node().metadata?.annotations };
}

beforeEach(async () => {
  server = await startClusterApiServer();
  clock = new SteeredClock();
  required = true;
  removals = [];
  server.create('daemonsets', kuredDaemonSet());
  server.create<V1Node>('nodes', readyNode('n1'));
  server.create<V1Pod>('pods', webPod('web-1', 'n1'));
  // the autoscaler judges the node at every write to it (kubelet heartbeats included) and to pods
  stopWatching = server.onWrite((e) => {
    if (e.resource !== 'nodes' && e.resource !== 'pods') return;
    const n = server.get<V1Node>('nodes', undefined, 'n1');
    if (n && wouldRemove(n, server.list<V1Pod>('pods'))) {
      removals.push({
        inCycle: n.metadata?.labels?.[CYCLE_LABEL] !== undefined,
        atMs: clock.now().getTime(),
      });
    }
  });
});

afterEach(async () => {
  stopWatching();
  await server.close();
});

/** A fresh agent (as after a pod restart); the host reboots into boot-2, Ready. */
function agent(c: Config): Agent {
  const deps = createAgentDeps(c, {
    kube: server.kubeInMemory(),
    clock,
    logger: new MemoryLogger(),
    sentinel: { rebootRequired: () => Promise.resolve({ required }) },
    rebooter: {
      reboot: () => {
        const n = node();
        n.status = {
          ...n.status,
          nodeInfo: nodeInfo('boot-2'),
          conditions: [{ type: 'Ready', status: 'True' }],
        };
        server.update('nodes', n);
        required = false;
        return Promise.resolve();
      },
    },
  });
  return new Agent(c, deps);
}

function config(overrides: Partial<Config> = {}): Config {
  return testConfig({ periodMs: 60 * MINUTE, drainTimeoutMs: 5000, blockOnPdb: false, ...overrides });
}

describe('autoscaler protection', () => {
  it('protects the node from its cordon to the end of --settle-time, then removes what it added while an autoscaler watches', async () => {
    const c = config();
    expect((await agent(c).tick()).kind).toBe('rebooting');
    expect(annotations()).toMatchObject({ [CA]: 'true', [KARPENTER]: 'true' });
    expect(parseProtection(annotations()[PROTECTION])).toEqual({ added: [CA, KARPENTER] });

    const finishing = agent(c);
    expect((await finishing.tick()).kind).toBe('completed');
    const endedAt = clock.now().getTime();
    const until = Date.parse(parseProtection(annotations()[PROTECTION])?.until ?? '');
    expect(until - endedAt).toBeGreaterThanOrEqual(10 * MINUTE - 1000);
    expect(until - endedAt).toBeLessThanOrEqual(10 * MINUTE);
    // the next pass is due when the settle ends, not a period (1 h, jittered) later
    expect(finishing.nextDelay({ kind: 'idle', reason: '' })).toBeLessThanOrEqual(10 * MINUTE);

    clock.offsetMs += 9 * MINUTE; // a restarted agent within the settle: the protection stays
    expect((await agent(c).startUp()).kind).toBe('idle');
    expect(annotations()).toMatchObject({ [CA]: 'true', [KARPENTER]: 'true' });
    expect(removals).toEqual([]);

    clock.offsetMs += MINUTE; // the settle ends while the autoscaler watches
    expect((await agent(c).tick()).kind).toBe('idle');
    expect(annotations()[CA]).toBeUndefined();
    expect(annotations()[KARPENTER]).toBeUndefined();
    expect(annotations()[PROTECTION]).toBeUndefined();
    // the drained node is empty: once unprotected, the autoscaler would remove it, and only then
    server.update('nodes', node());
    expect(removals.length).toBeGreaterThan(0);
    expect(removals.every((r) => !r.inCycle && r.atMs >= until)).toBe(true);
  });

  it("leaves an admin's annotation in place after the cycle, removing only the one it added", async () => {
    const n = node();
    server.update<V1Node>('nodes', {
      ...n,
      metadata: { ...n.metadata, annotations: { [KARPENTER]: 'true' } },
    });
    const c = config({ settleTimeMs: 0 });
    expect((await agent(c).tick()).kind).toBe('rebooting');
    expect(parseProtection(annotations()[PROTECTION])).toEqual({ added: [CA] });
    expect((await agent(c).tick()).kind).toBe('completed');
    expect(annotations()[KARPENTER]).toBe('true');
    expect(annotations()[CA]).toBeUndefined();
    expect(annotations()[PROTECTION]).toBeUndefined();
    expect(removals).toEqual([]);
  });

  it('leaves an annotation someone changed during the cycle as they set it', async () => {
    const c = config({ settleTimeMs: 0 });
    expect((await agent(c).tick()).kind).toBe('rebooting');
    expect(annotations()).toMatchObject({ [CA]: 'true', [KARPENTER]: 'true' });
    await server.kubeInMemory().mergePatchNode('n1', {
      metadata: { annotations: { [CA]: 'false' } },
    });
    expect((await agent(c).tick()).kind).toBe('completed');
    expect(annotations()[CA]).toBe('false');
    expect(annotations()[KARPENTER]).toBeUndefined();
  });

  it('with --autoscaler-protection=false writes no protection, and an autoscaler would remove the drained node', async () => {
    const c = config({ autoscalerProtection: false });
    expect((await agent(c).tick()).kind).toBe('rebooting');
    expect(annotations()[CA]).toBeUndefined();
    expect(annotations()[PROTECTION]).toBeUndefined();
    expect(removals.some((r) => r.inCycle)).toBe(true);
  });
});
