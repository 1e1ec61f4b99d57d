// The cluster-health gate (--max-unhealthy-nodes) over a hand-written Kube.
import { describe, expect, it } from '@jest/globals';
import { HealthBlocker } from '../../src/blockers/health.js';
import { fleetHealth, judgeNode, unhealthy } from '../../src/lock/fleet-census.js';
import { HEALTH_NAMES_SHOWN, WORKERS_NAMED } from '../../src/lock/fleet-health.js';
import type { V1Node } from '../../src/kube/kube.js';
import { FakeKube } from '../fakes/fake-kube.js';

type Health =
  'ready' | 'not-ready' | 'unknown' | 'no-condition' | 'cordoned' | 'unreachable-taint' | 'in-cycle';

function node(name: string, health: Health = 'ready'): V1Node {
  const status = { 'not-ready': 'False', unknown: 'Unknown' }[health as string] ?? 'True';
  return {
    metadata: { name, labels: health === 'in-cycle' ? { 'kured-ts.dev/rebooting': 'true' } : {} },
    spec: {
      unschedulable: health === 'cordoned' || health === 'in-cycle',
      taints:
        health === 'unreachable-taint'
          ? [{ key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' }]
          : [],
    },
    status: { conditions: health === 'no-condition' ? [] : [{ type: 'Ready', status }] },
  };
}

function fleet(...healths: Health[]): V1Node[] {
  return [node('me'), ...healths.map((h, i) => node(`n${i + 1}`, h))];
}

describe('the health gate', () => {
  it.each([
    ['lets a node go when every other node is healthy', fleet('ready', 'ready'), { count: 0 }, undefined],
    [
      'holds a node back when one more node than allowed is not ready',
      fleet('not-ready', 'ready', 'not-ready'),
      { count: 1 },
      '2 other nodes unhealthy (max 1): n1 not ready, n3 not ready',
    ],
    ['lets it go at exactly the limit', fleet('not-ready', 'cordoned', 'ready'), { count: 2 }, undefined],
    [
      'counts unreachable nodes: Ready Unknown, no Ready condition, or the unreachable taint',
      fleet('unknown', 'no-condition', 'unreachable-taint'),
      { count: 2 },
      '3 other nodes unhealthy (max 2): n1 unreachable, n2 unreachable, n3 unreachable',
    ],
    [
      'counts nodes cordoned by someone else',
      fleet('cordoned', 'cordoned'),
      { count: 1 },
      '2 other nodes unhealthy (max 1): n1 cordoned, n2 cordoned',
    ],
    [
      'does not count nodes in a kured-ts reboot cycle (--concurrency bounds them)',
      fleet('in-cycle', 'in-cycle'),
      { count: 0 },
      undefined,
    ],
    [
      'takes a percentage of all nodes, rounded down (10% of 11 = 1)',
      fleet('not-ready', 'not-ready', 'ready', 'ready', 'ready', 'ready', 'ready', 'ready', 'ready', 'ready'),
      { percent: 10 },
      '2 other nodes unhealthy (max 1): n1 not ready, n2 not ready',
    ],
    ['never counts its own node', [node('me', 'not-ready'), node('n1')], { count: 0 }, undefined],
  ])('%s', async (_name, nodes, limit, reason) => {
    const kube = new FakeKube();
    kube.nodes = nodes;
    const verdict = await new HealthBlocker({ kube, nodeId: 'me', limit }).check();
    expect(verdict).toEqual(reason === undefined ? { blocked: false } : { blocked: true, reason });
  });

  it('names ten nodes and says how many more', async () => {
    const kube = new FakeKube();
    kube.nodes = fleet(...Array.from({ length: 13 }, (): Health => 'not-ready'));
    const verdict = await new HealthBlocker({ kube, nodeId: 'me', limit: { count: 0 } }).check();
    expect(verdict.blocked && verdict.reason).toMatch(
      /^13 other nodes unhealthy \(max 0\): (n\d+ not ready, ){9}n\d+ not ready, and 3 more$/,
    );
  });

  it('reads the nodes once per check, from the watch cache', async () => {
    const kube = new FakeKube();
    kube.nodes = fleet('ready');
    await new HealthBlocker({ kube, nodeId: 'me', limit: { count: 0 } }).check();
    expect(kube.listNodeCalls).toEqual([{ resourceVersion: '0' }]);
  });

  it.each([
    ['a Ready node', node('a'), undefined],
    ['a NotReady node', node('a', 'not-ready'), 'not ready'],
    ['a cordoned Ready node', node('a', 'cordoned'), 'cordoned'],
  ])('judges %s', (_name, n, why) => {
    expect(unhealthy(n)).toBe(why);
  });
});

describe('the fleet census of the workers ahead of the control plane', () => {
  it('counts every worker that waits, and names at most WORKERS_NAMED (each agent reads them)', () => {
    const workers = Array.from({ length: 30 }, (_, i) => ({
      ...judgeNode({ metadata: { name: `w${String(i).padStart(2, '0')}` } }),
      waiting: true,
    }));
    const health = fleetHealth(workers, HEALTH_NAMES_SHOWN);
    expect(health.workersAhead?.count).toBe(30);
    expect(health.workersAhead?.names).toEqual(workers.slice(0, WORKERS_NAMED).map((w) => w.name));
  });
});
