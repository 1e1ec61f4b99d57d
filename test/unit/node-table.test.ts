// The rows of a node list as the fleet gates read them (src/kube/node-table.ts): only a whole list of
// the Nodes is read as the fleet; anything else throws, so that the gate that asked holds (fail safe).
import { describe, expect, it } from '@jest/globals';
import { nodeRows } from '../../src/kube/node-table.js';

const COLUMNS = [{ name: 'Name' }, { name: 'Status' }, { name: 'Roles' }, { name: 'Age' }];

function table(rows: string[][], extra: Record<string, unknown> = {}): unknown {
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion: '7' },
    columnDefinitions: COLUMNS,
    rows: rows.map((cells) => ({ cells })),
    ...extra,
  };
}

describe('the rows of a node table', () => {
  it('reads readiness, cordon and roles from the printed columns', () => {
    expect(
      nodeRows(
        table([
          ['a', 'Ready', '<none>', '1d'],
          ['b', 'NotReady,SchedulingDisabled', 'control-plane', '1d'],
          ['c', 'Unknown', 'control-plane,etcd', '1d'],
        ]),
      ),
    ).toEqual([
      { name: 'a', ready: true, readiness: 'Ready', unschedulable: false, roles: [] },
      { name: 'b', ready: false, readiness: 'NotReady', unschedulable: true, roles: ['control-plane'] },
      {
        name: 'c',
        ready: false,
        readiness: 'Unknown',
        unschedulable: false,
        roles: ['control-plane', 'etcd'],
      },
    ]);
  });

  it('reads a plain NodeList from a server that prints no Tables', () => {
    const list = {
      kind: 'NodeList',
      apiVersion: 'v1',
      metadata: {},
      items: [{ metadata: { name: 'a' }, status: { conditions: [{ type: 'Ready', status: 'False' }] } }],
    };
    expect(nodeRows(list)).toEqual([
      { name: 'a', ready: false, readiness: 'NotReady', unschedulable: false, roles: [] },
    ]);
  });

  it.each<[string, unknown, RegExp]>([
    [
      'refuses a list of another kind that has items (a PodList)',
      { kind: 'PodList', apiVersion: 'v1', items: [] },
      /neither a Table nor a list of Nodes \(kind "PodList"\)/,
    ],
    ['refuses an answer with items and no kind (a proxy’s JSON)', { items: [] }, /kind null/],
    ['refuses a Status', { kind: 'Status', apiVersion: 'v1', status: 'Failure' }, /kind "Status"/],
    [
      'refuses a Table of another API group',
      { ...(table([]) as object), apiVersion: 'example.com/v1' },
      /neither a Table/,
    ],
    [
      'refuses one page of several (a continue token)',
      table([['a', 'Ready', '<none>', '1d']], { metadata: { continue: 'abc' } }),
      /one page of the Nodes/,
    ],
    [
      'refuses a page with items remaining',
      { kind: 'NodeList', apiVersion: 'v1', metadata: { remainingItemCount: 4 }, items: [] },
      /one page of the Nodes/,
    ],
    [
      'refuses a table without a Status column',
      { ...(table([]) as object), columnDefinitions: [{ name: 'Name' }, { name: 'Roles' }] },
      /no Status column/,
    ],
    [
      'refuses a row whose cell is not text',
      table([['a', 5 as unknown as string, '<none>', '1d']]),
      /no text in column 1/,
    ],
    [
      'refuses a NodeList without items',
      { kind: 'NodeList', apiVersion: 'v1', metadata: {} },
      /has no items/,
    ],
    ['refuses null', null, /neither a Table/],
  ])('%s', (_name, answer, message) => {
    expect(() => nodeRows(answer)).toThrow(message);
  });
});
