// The cost table of a simulation: kube's verbs and resources for each request, and who asked.
import { describe, expect, it } from '@jest/globals';
import { costRows, costTotal, verbOf, type FeedWatchCost } from '../../src/sim/api-cost.js';

type Request = { method: string; path: string; query: Record<string, string>; bytes?: number; node?: string };

const get = (path: string, query: Record<string, string> = {}): Request => ({ method: 'GET', path, query });

describe('verbOf', () => {
  it.each<[string, Request, string, string]>([
    ['a GET of one object is a get', get('/api/v1/nodes/n1'), 'get', 'nodes'],
    [
      'a GET of a collection is a list',
      get('/api/v1/pods', { fieldSelector: 'spec.nodeName=n1' }),
      'list',
      'pods',
    ],
    ['a GET with watch=true is a watch', get('/api/v1/pods', { watch: 'true' }), 'watch', 'pods'],
    [
      'a namespaced GET of one object is a get of its resource',
      get('/apis/apps/v1/namespaces/kube-system/daemonsets/kured'),
      'get',
      'daemonsets',
    ],
    [
      'an eviction is a create of pods/eviction',
      { method: 'POST', path: '/api/v1/namespaces/d/pods/p/eviction', query: {} },
      'create',
      'pods/eviction',
    ],
    [
      'a dry-run eviction is told apart',
      { method: 'POST', path: '/api/v1/namespaces/d/pods/p/eviction', query: { dryRun: 'All' } },
      'create (dry run)',
      'pods/eviction',
    ],
    [
      'a PUT is an update',
      { method: 'PUT', path: '/apis/coordination.k8s.io/v1/namespaces/k/leases/l', query: {} },
      'update',
      'leases',
    ],
    ['a PATCH is a patch', { method: 'PATCH', path: '/api/v1/nodes/n1', query: {} }, 'patch', 'nodes'],
  ])('%s', (_name, request, verb, resource) => {
    expect(verbOf(request)).toEqual({ verb, resource });
  });
});

describe('costRows', () => {
  const requests: Request[] = [
    { ...get('/api/v1/nodes/n1'), bytes: 100, node: 'n1' },
    { ...get('/api/v1/nodes/n1'), bytes: 100, node: 'n1' },
    { ...get('/api/v1/nodes/n2'), bytes: 50, node: 'n2' },
    { method: 'PUT', path: '/apis/coordination.k8s.io/v1/namespaces/k/leases/l', query: {}, bytes: 10 },
  ];
  const feed: FeedWatchCost[] = [
    { owner: 'n1', resource: 'nodes', watches: 1, bytes: 1000 },
    { owner: undefined, resource: 'nodes', watches: 1, bytes: 5000 },
  ];

  it.each<[string, Parameters<typeof costRows>[2], { requests: number; bytes: number }]>([
    ['counts everyone without an asker', undefined, { requests: 6, bytes: 6260 }],
    ["counts one node's agent by its node claim", { agent: 'n1' }, { requests: 3, bytes: 1200 }],
    ['counts every agent', 'agents', { requests: 4, bytes: 1250 }],
    ['counts those without a node claim as the others', 'other', { requests: 2, bytes: 5010 }],
  ])('%s', (_name, asker, total) => {
    expect(costTotal(costRows(requests, feed, asker))).toEqual(total);
  });

  it('puts the verb and resource asked most first', () => {
    expect(costRows(requests, feed, { agent: 'n1' })).toEqual([
      { verb: 'get', resource: 'nodes', requests: 2, bytes: 200 },
      { verb: 'watch', resource: 'nodes', requests: 1, bytes: 1000 },
    ]);
  });
});
