import { NO_PROXY } from '../../src/http/proxy.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { firstBlock } from '../../src/blockers/blocker.js';
import { createBlockers, type BlockerConfig } from '../../src/blockers/index.js';
import { QueryBlocker } from '../../src/blockers/prometheus-query.js';
import { FLEET_PAUSE_ANNOTATION, PauseBlocker } from '../../src/blockers/pause.js';
import { PdbBlocker } from '../../src/blockers/pdb.js';
import { PodsBlocker } from '../../src/blockers/pods.js';
import { PrometheusBlocker } from '../../src/blockers/prometheus.js';
import { parseLabelSelector } from '../../src/selector/label-selector.js';
import { FakeKube, pod } from '../fakes/fake-kube.js';
import { FakeNode, newNodeRecord } from '../fakes/fake-node.js';
import { FakeHost } from '../fakes/fake-host.js';
import { FakeClock } from '../fakes/fake-clock.js';

describe('PrometheusBlocker against bad servers', () => {
  let server: Server;
  let base = '';
  const bodies: Record<string, { status: number; body: string }> = {
    '/html': { status: 200, body: '<html>login required</html>' },
    '/empty': { status: 200, body: '' },
    '/array': { status: 200, body: '[1,2,3]' },
    '/error': { status: 200, body: '{"status":"error","errorType":"bad_data","error":"parse error"}' },
    '/matrix': { status: 200, body: '{"status":"success","data":{"resultType":"matrix","result":[]}}' },
    '/badsample': {
      status: 200,
      body: '{"status":"success","data":{"resultType":"vector","result":[{"metric":1}]}}',
    },
    '/badvalue': {
      status: 200,
      body: '{"status":"success","data":{"resultType":"vector","result":[{"metric":{"alertname":"A"},"value":[1,"x"]}]}}',
    },
    '/503': { status: 503, body: 'Service Unavailable' },
    '/nostatus': { status: 200, body: '{"data":{}}' },
    '/zero': {
      status: 200,
      body: JSON.stringify({
        status: 'success',
        data: {
          resultType: 'vector',
          result: [
            { metric: { alertname: 'Zero', alertstate: 'firing' }, value: [1, '0'] },
            { metric: { __name__: 'ALERTS' }, value: [1, '1'] },
          ],
        },
      }),
    },
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      const path = (req.url ?? '').split('/api/v1/query')[0] ?? '';
      if (path === '/hang') return; // never answers
      if (path === '/drip') {
        // a byte every 50 ms, for ever: a per-byte timeout would never fire
        res.writeHead(200, { 'content-type': 'application/json' });
        // eslint-disable-next-line no-restricted-syntax -- real time: a server that trickles its answer against a real deadline
        const timer = setInterval(() => res.write(' '), 50);
        res.on('close', () => {
          clearInterval(timer);
        });
        return;
      }
      if (path === '/flood') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`{"status":"success","data":{"resultType":"vector","result":[]}}${' '.repeat(2048)}`);
        return;
      }
      const answer = bodies[path] ?? { status: 404, body: 'not found' };
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(answer.body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const blocking: [string, RegExp][] = [
    ['/html', /not JSON/],
    ['/empty', /not JSON/],
    ['/array', /not a JSON object/],
    ['/error', /query not successful \(status "error"\): parse error/],
    ['/nostatus', /query not successful \(status absent\)/],
    ['/matrix', /unexpected result type/],
    ['/badsample', /malformed sample/],
    ['/badvalue', /malformed sample value/],
    ['/503', /HTTP 503/],
    ['/hang', /no complete answer within 300 ms/],
    ['/drip', /no complete answer within 300 ms/],
    ['/flood', /answer larger than 1024 bytes/],
  ];
  it.each(blocking)('blocks, without throwing, when %s answers garbage', async (path, reason) => {
    const blocker = new PrometheusBlocker({
      url: base + path,
      filter: undefined,
      matchOnly: false,
      firingOnly: false,
      timeoutMs: 300,
      maxBytes: 1024,
    });
    const verdict = await blocker.check();
    expect(verdict.blocked).toBe(true);
    expect(verdict.blocked && verdict.reason).toMatch(reason);
  });

  it.each(blocking)(
    'a blocking query blocks too, naming the query, when %s answers garbage',
    async (path, reason) => {
      const blocker = new QueryBlocker({
        url: base + path,
        query: 'up == 0',
        timeoutMs: 300,
        maxBytes: 1024,
      });
      const verdict = await blocker.check();
      expect(verdict.blocked && verdict.reason).toMatch(/^cannot evaluate blocking query up == 0: /);
      expect(verdict.blocked && verdict.reason).toMatch(reason);
    },
  );

  it('ignores alerts with value 0 and samples without an alert name', async () => {
    const blocker = new PrometheusBlocker({
      url: `${base}/zero`,
      filter: undefined,
      matchOnly: false,
      firingOnly: false,
    });
    expect(await blocker.check()).toEqual({ blocked: false });
  });
});

describe('PauseBlocker', () => {
  function setup(): { kube: FakeKube; blocker: PauseBlocker; node: FakeNode } {
    const kube = new FakeKube();
    const node = new FakeNode(newNodeRecord('n1'));
    return {
      kube,
      node,
      blocker: new PauseBlocker({ kube, node, dsNamespace: 'kube-system', dsName: 'kured' }),
    };
  }

  it('blocks while the fleet is paused, naming who and why', async () => {
    const { kube, blocker } = setup();
    kube.daemonSet.metadata!.annotations![FLEET_PAUSE_ANNOTATION] = JSON.stringify({
      reason: 'kernel regression',
      by: 'alice',
      since: '2026-01-05T09:00:00Z',
    });
    expect(await blocker.check()).toEqual({
      blocked: true,
      reason: 'fleet paused by alice since 2026-01-05T09:00:00Z: kernel regression',
    });
  });

  it('blocks on an unreadable pause annotation', async () => {
    const { kube, blocker } = setup();
    kube.daemonSet.metadata!.annotations![FLEET_PAUSE_ANNOTATION] = 'yes';
    const verdict = await blocker.check();
    expect(verdict.blocked && verdict.reason).toMatch(/fleet paused .*not JSON/);
  });

  it.each([
    ['true', true],
    ['false', false],
  ])('node opt-out annotation %s blocks: %s', async (value, blocked) => {
    const { node, blocker } = setup();
    node.record.annotations['kured-ts.dev/reboot-paused'] = value;
    expect((await blocker.check()).blocked).toBe(blocked);
  });

  it('does not block without either annotation', async () => {
    expect(await setup().blocker.check()).toEqual({ blocked: false });
  });
});

describe('PodsBlocker', () => {
  const selectors = [parseLabelSelector('app=backup'), parseLabelSelector('job,team=data')];
  const cases: [string, ReturnType<typeof pod>[], boolean][] = [
    ['a running pod matching the first selector blocks', [pod('b1', { labels: { app: 'backup' } })], true],
    [
      'a pod matching the second selector (AND) blocks',
      [pod('j1', { labels: { job: 'x', team: 'data' } })],
      true,
    ],
    ['a pod matching only half of an AND does not block', [pod('j2', { labels: { job: 'x' } })], false],
    ['a succeeded pod does not block', [pod('b2', { labels: { app: 'backup' }, phase: 'Succeeded' })], false],
    ['a failed pod does not block', [pod('b3', { labels: { app: 'backup' }, phase: 'Failed' })], false],
    ['a pending pod blocks', [pod('b4', { labels: { app: 'backup' }, phase: 'Pending' })], true],
    [
      'a matching pod on another node does not block',
      [pod('b5', { labels: { app: 'backup' }, node: 'n2' })],
      false,
    ],
  ];
  it.each(cases)('%s', async (_name, pods, blocked) => {
    const kube = new FakeKube();
    kube.pods = pods;
    const verdict = await new PodsBlocker({ kube, nodeId: 'n1', selectors }).check();
    expect(verdict.blocked).toBe(blocked);
  });

  it('names the pods and asks the server for this node only', async () => {
    const kube = new FakeKube();
    kube.pods = [pod('b1', { labels: { app: 'backup' } })];
    const verdict = await new PodsBlocker({ kube, nodeId: 'n1', selectors }).check();
    expect(verdict).toEqual({ blocked: true, reason: 'blocking pods match "app=backup": default/b1' });
    expect(kube.listPodCalls[0]).toEqual({
      namespace: undefined,
      options: { labelSelector: 'app=backup', fieldSelector: 'spec.nodeName=n1' },
    });
  });
});

describe('PdbBlocker', () => {
  /** An API error as our transport throws it: the HTTP status and the Status body. */
  function apiError(code: number, message: string, causes?: { reason: string; message: string }[]): Error {
    const body = { kind: 'Status', message, code, ...(causes ? { details: { causes } } : {}) };
    return Object.assign(new Error(message), { code, body: JSON.stringify(body) });
  }
  const budgetRefusal = apiError(429, "Cannot evict pod as it would violate the pod's disruption budget.", [
    {
      reason: 'DisruptionBudget',
      message: 'The disruption budget web needs 1 healthy pods and has 1 currently',
    },
  ]);
  const twoBudgets = apiError(
    500,
    'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
  );

  const web = (): ReturnType<typeof pod> => pod('web-1', { labels: { app: 'web' } });
  /** The pods, the answers their dry-run evictions get, the verdict's reason and whom it asked. */
  type Case = [string, ReturnType<typeof pod>[], Record<string, Error>, string | undefined, string[]];
  const cases: Case[] = [
    [
      'a pod whose eviction its budget would refuse blocks, naming the budget',
      [web()],
      { 'default/web-1': budgetRefusal },
      'PodDisruptionBudget default/web allows no disruption of pod default/web-1',
      ['default/web-1'],
    ],
    ['a pod the Eviction API would let go does not block', [web()], {}, undefined, ['default/web-1']],
    [
      'a pod under two budgets blocks: the Eviction API refuses to evict it at all',
      [web()],
      { 'default/web-1': twoBudgets },
      'pod default/web-1 is covered by more than one PodDisruptionBudget: the Eviction API refuses to evict such a pod, so the drain would fail',
      ['default/web-1'],
    ],
    [
      'a pod gone since the list does not block',
      [web()],
      { 'default/web-1': apiError(404, 'pods "web-1" not found') },
      undefined,
      ['default/web-1'],
    ],
    [
      'a pod replaced under its name since the list (409 on the UID the dry run names) does not block',
      [web()],
      {
        'default/web-1': apiError(
          409,
          'Operation cannot be fulfilled on Pod "web-1": the UID in the precondition (a) does not match the UID in record (b). The object might have been deleted and then recreated',
        ),
      },
      undefined,
      ['default/web-1'],
    ],
    [
      'stops at the first refusal',
      [pod('a-1'), pod('b-1'), pod('c-1')],
      { 'default/b-1': budgetRefusal },
      'PodDisruptionBudget default/web allows no disruption of pod default/b-1',
      ['default/a-1', 'default/b-1'],
    ],
    [
      'a DaemonSet pod is not evicted, so it is not asked about',
      [pod('agent', { labels: { app: 'web' }, owner: 'DaemonSet' })],
      {},
      undefined,
      [],
    ],
    [
      'a mirror pod is not evicted',
      [pod('etcd', { annotations: { 'kubernetes.io/config.mirror': 'x' } })],
      {},
      undefined,
      [],
    ],
    ['a finished pod is not evicted', [pod('job', { phase: 'Succeeded' })], {}, undefined, []],
    ['a pod on another node does not count', [pod('web-2', { node: 'n2' })], {}, undefined, []],
  ];
  it.each(cases)('%s', async (...[, pods, answers, reason, asked]: Case) => {
    const kube = new FakeKube();
    kube.pods = pods;
    for (const [key, answer] of Object.entries(answers)) kube.evictionAnswers.set(key, answer);
    const verdict = await new PdbBlocker({
      kube,
      nodeId: 'n1',
      drainPodSelector: [],
      drainGracePeriodSeconds: -1,
    }).check();
    expect(verdict).toEqual(reason === undefined ? { blocked: false } : { blocked: true, reason });
    expect(kube.dryRunEvictions).toEqual(asked);
  });

  it.each([
    [
      'a 429 without a budget (the server throttling us)',
      apiError(429, 'Too many requests, please try again later.'),
    ],
    ['a 403 (not allowed to evict)', apiError(403, 'forbidden')],
    ['a 500 for another reason', apiError(500, 'etcdserver: request timed out')],
  ])('%s is an error, not a verdict: the blocker errs and so blocks', async (_name, answer) => {
    const kube = new FakeKube();
    kube.pods = [web()];
    kube.evictionAnswers.set('default/web-1', answer);
    await expect(
      new PdbBlocker({ kube, nodeId: 'n1', drainPodSelector: [], drainGracePeriodSeconds: -1 }).check(),
    ).rejects.toBe(answer);
  });

  it('a pod outside --drain-pod-selector is not evicted, so it is not asked about', async () => {
    const kube = new FakeKube();
    kube.pods = [web()];
    kube.evictionAnswers.set('default/web-1', budgetRefusal);
    const blocker = new PdbBlocker({
      kube,
      nodeId: 'n1',
      drainPodSelector: parseLabelSelector('drain=yes'),
      drainGracePeriodSeconds: -1,
    });
    expect(await blocker.check()).toEqual({ blocked: false });
    expect(kube.dryRunEvictions).toEqual([]);
  });

  it.each([
    ['its label says skip', { 'kured-ts.dev/drain': 'skip' }, []],
    ['its label says wait-completed', { 'kured-ts.dev/drain': 'wait-completed' }, []],
    ["Cluster API's label says skip", { 'cluster.x-k8s.io/drain': 'skip' }, []],
    [
      'a --drain-rules entry says skip',
      {},
      [{ entry: 1, namespace: 'default', selector: [], drain: 'skip' }],
    ],
  ] as const)(
    'a pod whose drain rule is not evict (%s) is not evicted, so it is not asked about',
    async (_why, labels, rules) => {
      const kube = new FakeKube();
      const pod = web();
      pod.metadata = { ...pod.metadata, labels: { ...pod.metadata?.labels, ...labels } };
      kube.pods = [pod];
      kube.evictionAnswers.set('default/web-1', budgetRefusal);
      const blocker = new PdbBlocker({
        kube,
        nodeId: 'n1',
        drainPodSelector: [],
        drainRules: [...rules],
        drainGracePeriodSeconds: -1,
      });
      expect(await blocker.check()).toEqual({ blocked: false });
      expect(kube.dryRunEvictions).toEqual([]);
    },
  );
});

describe('blocker registry', () => {
  const base: BlockerConfig = {
    healthChecks: [],
    nodeChecks: [],
    silenceMatchers: [],
    nodeId: 'n1',
    dsName: 'kured',
    dsNamespace: 'kube-system',
    prometheusUrl: '',
    alertFilterRegexp: undefined,
    alertFilterMatchOnly: false,
    alertFiringOnly: false,
    blockingPodSelectors: [],
    singleReplica: 'off',
    blockOnPdb: true,
    drainPodSelector: [],
    drainRules: [],
    drainGracePeriodSeconds: -1,
    quarantineRetryMs: 3_600_000,
    proxy: NO_PROXY,
    blockingQueries: [],
    packageManagerWaitMs: 3_600_000,
  };
  const io = { kube: new FakeKube(), node: new FakeNode(newNodeRecord('n1')), clock: new FakeClock() };

  it.each([
    [
      'defaults: pause, reboot-loop, quarantine, control-plane and pdb',
      base,
      ['pause', 'reboot-loop', 'quarantine', 'control-plane', 'pdb'],
    ],
    [
      'everything configured',
      {
        ...base,
        prometheusUrl: 'http://p:9090',
        blockingPodSelectors: [parseLabelSelector('a=b')],
        blockingQueries: ['up == 0', 'backup_running > 0'],
      },
      [
        'pause',
        'reboot-loop',
        'quarantine',
        'control-plane',
        'prometheus',
        'prometheus-query',
        'prometheus-query',
        'pods',
        'pdb',
      ],
    ],
    [
      '--block-on-pdb=false',
      { ...base, blockOnPdb: false },
      ['pause', 'reboot-loop', 'quarantine', 'control-plane'],
    ],
  ])('%s', (_name, config, names) => {
    expect(createBlockers(config, io).map((b) => b.name)).toEqual(names);
  });

  it('judges the package manager after the control plane where the host can be read, before the lock and again before the reboot', () => {
    const blockers = createBlockers(base, { ...io, host: new FakeHost() });
    expect(blockers.map((b) => b.name)).toEqual([
      'pause',
      'reboot-loop',
      'quarantine',
      'control-plane',
      'package-manager',
      'pdb',
    ]);
    expect(blockers.find((b) => b.name === 'package-manager')?.beforeReboot).toBe(true);
  });

  it('a blocker whose API call fails blocks with the error as reason', async () => {
    const kube = new FakeKube();
    kube.failWith = new Error('connect ECONNREFUSED 10.0.0.1:443');
    const verdict = await firstBlock(createBlockers(base, { kube, node: io.node, clock: io.clock }));
    expect(verdict).toEqual({
      blocked: true,
      blocker: 'pause',
      reason: 'pause: connect ECONNREFUSED 10.0.0.1:443',
    });
  });
});
