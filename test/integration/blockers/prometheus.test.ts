// The alert blocker against a real Prometheus (Debian's /usr/bin/prometheus), started by the test.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PrometheusBlocker, type PrometheusBlockerOptions } from '../../../src/blockers/prometheus.js';
import { QueryBlocker } from '../../../src/blockers/prometheus-query.js';
import { startForwardProxy } from '../../fakes/forward-proxy.js';
import { freePort, startPrometheus, type RealDaemon } from '../../fakes/real-daemon.js';

const RULES = `
groups:
  - name: kured-ts-test
    interval: 1s
    rules:
      - alert: AlwaysFiring
        expr: vector(1)
        for: 0s
        labels: { severity: critical }
      - alert: AlwaysPending
        expr: vector(1)
        for: 1h
`;

let prometheus: RealDaemon;
let url = '';

beforeAll(async () => {
  // both alerts reported (firing and pending): its rules evaluated
  prometheus = await startPrometheus(RULES, async (at) => {
    const blocker = new PrometheusBlocker({
      url: at,
      filter: undefined,
      matchOnly: false,
      firingOnly: false,
    });
    return (await blocker.activeAlerts()).length === 2;
  });
  url = prometheus.url;
}, 30_000);

afterAll(async () => {
  await prometheus.stop();
});

describe('PrometheusBlocker against a real Prometheus', () => {
  const cases: [string, Partial<PrometheusBlockerOptions>, string[]][] = [
    ['counts firing and pending alerts by default', {}, ['AlwaysFiring', 'AlwaysPending']],
    ['ignores pending alerts with firing-only', { firingOnly: true }, ['AlwaysFiring']],
    ['ignores alerts matching the filter', { filter: /Firing/ }, ['AlwaysPending']],
    [
      'counts only alerts matching the filter with match-only',
      { filter: /Firing/, matchOnly: true },
      ['AlwaysFiring'],
    ],
    ['combines the filter and firing-only', { filter: /Firing/, firingOnly: true }, []],
    ['accepts a URL with a trailing slash', { firingOnly: true, url: 'TRAILING' }, ['AlwaysFiring']],
  ];

  it.each(cases)('%s', async (_name, options, want) => {
    const blocker = new PrometheusBlocker({
      filter: undefined,
      matchOnly: false,
      firingOnly: false,
      ...options,
      url: options.url === 'TRAILING' ? `${url}/` : url,
    });
    expect(await blocker.activeAlerts()).toEqual(want);
    const verdict = await blocker.check();
    if (want.length === 0) expect(verdict).toEqual({ blocked: false });
    else
      expect(verdict).toEqual({
        blocked: true,
        reason: `${want.length} active alert(s): ${want.join(', ')}`,
      });
  });

  describe('--blocking-query, evaluated by the real Prometheus', () => {
    it.each([
      [
        'a query returning series blocks, naming the query and the first series',
        'label_replace(vector(3), "job", "backup", "", "")',
        {
          blocked: true,
          reason:
            'blocking query label_replace(vector(3), "job", "backup", "", "") returned {job="backup"} = 3',
        },
      ],
      [
        'more series are counted after the first',
        'ALERTS',
        {
          blocked: true,
          reason: expect.stringMatching(
            /^blocking query ALERTS returned ALERTS\{alertname="Always(Firing|Pending)".*\} = 1 \(and 1 more\)$/,
          ),
        },
      ],
      ['an empty result does not block', 'ALERTS{alertname="NoSuchAlert"}', { blocked: false }],
      ['a comparison that filters everything out does not block', 'vector(1) > 5', { blocked: false }],
      [
        'a non-zero scalar blocks',
        'scalar(vector(2))',
        { blocked: true, reason: 'blocking query scalar(vector(2)) returned 2' },
      ],
      ['a zero scalar does not block', '0', { blocked: false }],
      [
        'a query Prometheus cannot parse blocks, with its error',
        'up ==',
        {
          blocked: true,
          reason: expect.stringMatching(/^cannot evaluate blocking query up ==: HTTP 400 .*parse error/),
        },
      ],
      [
        'a range vector blocks: it is no instant answer',
        'vector(1)[5m:1m]',
        { blocked: true, reason: expect.stringMatching(/unexpected result type "matrix"/) },
      ],
    ])('%s', async (_name, query, verdict) => {
      expect(await new QueryBlocker({ url, query }).check()).toEqual(verdict);
    });
  });

  it('blocks when Prometheus cannot be reached', async () => {
    const port = await freePort();
    const blocker = new PrometheusBlocker({
      url: `http://127.0.0.1:${port}`,
      filter: undefined,
      matchOnly: false,
      firingOnly: false,
    });
    const verdict = await blocker.check();
    expect(verdict.blocked).toBe(true);
    expect(verdict.blocked && verdict.reason).toMatch(/cannot query Prometheus alerts/);
  });

  describe('through HTTP_PROXY, as a cluster behind a corporate proxy reaches it', () => {
    it.each([
      ['asks through the proxy, which alone knows the name, and blocks on the firing alert', '', true],
      [
        'goes direct for a host in NO_PROXY (the name then does not resolve: blocked, fail-safe)',
        '.test',
        false,
      ],
    ])('%s', async (_name, noProxy, viaProxy) => {
      const port = Number(new URL(url).port);
      const proxy = await startForwardProxy({ 'prometheus.test': port });
      try {
        const blocker = new PrometheusBlocker({
          url: `http://prometheus.test:${port}`,
          filter: undefined,
          matchOnly: false,
          firingOnly: true,
          timeoutMs: 3000,
          proxy: { httpProxy: `http://kured:s3cret@${new URL(proxy.url).host}`, httpsProxy: '', noProxy },
        });
        const verdict = await blocker.check();
        if (viaProxy) {
          expect(verdict).toEqual({ blocked: true, reason: '1 active alert(s): AlwaysFiring' });
          expect(proxy.records).toEqual([
            {
              line: `GET http://prometheus.test:${port}/api/v1/query?query=ALERTS`,
              authorization: `Basic ${Buffer.from('kured:s3cret').toString('base64')}`,
            },
          ]);
        } else {
          expect(verdict.blocked && verdict.reason).toMatch(
            /cannot query Prometheus alerts.*(ENOTFOUND|EAI_AGAIN)/,
          );
          expect(proxy.records).toEqual([]);
        }
      } finally {
        await proxy.close();
      }
    });
  });
});
