// The simulated scheduler's placement rule (src/sim/scheduler.ts).
import { describe, expect, it } from '@jest/globals';
import type { SimNode } from '../../src/sim/objects.js';
import { placements } from '../../src/sim/scheduler.js';

function node(name: string, o: { ready?: boolean; cordoned?: boolean; taint?: string } = {}): SimNode {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name },
    spec: {
      ...(o.cordoned === true ? { unschedulable: true } : {}),
      ...(o.taint === undefined ? {} : { taints: [{ key: 'k', effect: o.taint }] }),
    },
    status: { conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }] },
  } as SimNode;
}

describe('placements', () => {
  it.each([
    { name: 'avoids a cordoned node', nodes: [node('a', { cordoned: true }), node('b')], want: ['b', 'b'] },
    { name: 'avoids a NotReady node', nodes: [node('a', { ready: false }), node('b')], want: ['b', 'b'] },
    {
      name: 'avoids a NoSchedule taint',
      nodes: [node('a', { taint: 'NoSchedule' }), node('b')],
      want: ['b', 'b'],
    },
    {
      name: 'prefers an untainted node to a PreferNoSchedule one, even when it is busier',
      nodes: [node('a', { taint: 'PreferNoSchedule' }), node('b')],
      want: ['b', 'b'],
    },
    {
      name: 'uses a PreferNoSchedule node when nothing else is feasible',
      nodes: [node('a', { taint: 'PreferNoSchedule' }), node('b', { cordoned: true })],
      want: ['a', 'a'],
    },
    {
      name: 'places nothing when no node is feasible',
      nodes: [node('a', { cordoned: true })],
      want: [undefined, undefined],
    },
  ])('$name', ({ nodes, want }) => {
    expect(placements(nodes, new Map([['b', 5]]), 2, () => 0)).toEqual(want);
  });

  it('spreads pods over the least loaded feasible nodes', () => {
    const load = new Map([['a', 2]]);
    expect(placements([node('a'), node('b'), node('c')], load, 4, () => 0)).toEqual(['b', 'c', 'b', 'c']);
  });
});
