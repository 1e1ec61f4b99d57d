// The wave's flag values (src/config/wave-values.ts) and what the
// notify URL is told (src/notify/notice-filter.ts).
import { describe, expect, it } from '@jest/globals';
import {
  groupOrder,
  healthCheck,
  nodeCheck,
  notifyEvents,
  waveGrowth,
} from '../../src/config/wave-values.js';
import { NoticeFilter } from '../../src/notify/notice-filter.js';
import { NOTIFY_EVENTS, type Notifier, type NotifyEvent } from '../../src/notify/notifier.js';
import { FakeClock } from '../fakes/fake-clock.js';

describe('--wave-growth', () => {
  it.each([
    ['none', { kind: 'none' }],
    ['x2', { kind: 'double' }],
    ['linear:3', { kind: 'linear', step: 3 }],
  ] as const)('reads %s', (text, want) => {
    expect(waveGrowth(text)).toEqual(want);
  });
  it.each(['linear:0', 'linear:', 'x3', 'double', 'linear:-1'])('refuses %s', (text) => {
    expect(() => waveGrowth(text)).toThrow('expected none, linear:K');
  });
});

describe('--group-order', () => {
  it.each([
    ['parallel', { kind: 'parallel' }],
    ['sequential', { kind: 'sequential', order: [] }],
    ['sequential:eu-west-1b,eu-west-1a', { kind: 'sequential', order: ['eu-west-1b', 'eu-west-1a'] }],
  ] as const)('reads %s', (text, want) => {
    expect(groupOrder(text)).toEqual(want);
  });
  it.each([
    ['serial', 'expected parallel, sequential'],
    ['sequential:a,a', 'named twice'],
    ['sequential:a,,b', 'not a label value'],
    ['sequential:-a', 'not a label value'],
  ])('refuses %s', (text, why) => {
    expect(() => groupOrder(text)).toThrow(why);
  });
});

describe('--health-check', () => {
  it.each([
    [
      'apps/v1/deployments web/api: self.status.readyReplicas == self.spec.replicas',
      {
        group: 'apps',
        version: 'v1',
        resource: 'deployments',
        namespace: 'web',
        name: 'api',
        expression: 'self.status.readyReplicas == self.spec.replicas',
      },
    ],
    [
      'core/v1/nodes cp1: self.spec.unschedulable != true',
      {
        group: '',
        version: 'v1',
        resource: 'nodes',
        name: 'cp1',
        expression: 'self.spec.unschedulable != true',
      },
    ],
    [
      "ceph.rook.io/v1/cephclusters rook-ceph/rook-ceph: self.status.ceph.health == 'HEALTH_OK'",
      {
        group: 'ceph.rook.io',
        version: 'v1',
        resource: 'cephclusters',
        namespace: 'rook-ceph',
        name: 'rook-ceph',
        expression: "self.status.ceph.health == 'HEALTH_OK'",
      },
    ],
    [
      "/v1/configmaps kube-system/x: self.data['a:b'] == 'c: d'",
      {
        group: '',
        version: 'v1',
        resource: 'configmaps',
        namespace: 'kube-system',
        name: 'x',
        expression: "self.data['a:b'] == 'c: d'",
      },
    ],
  ])('reads %s', (text, want) => {
    expect(healthCheck(text)).toEqual({ ...want, text });
  });
  it.each([
    ['apps/v1/deployments web/api', 'expected'],
    ['apps/v1/deployments web/api: ', 'expected'],
    ['apps/v1/deployments a/b/c: true', 'is not [NAMESPACE/]NAME'],
    ['apps/V1/deployments web/api: true', 'version "V1"'],
    ['apps/v1/deployments Web/api: true', 'DNS-1123'],
  ])('refuses %s', (text, why) => {
    expect(() => healthCheck(text)).toThrow(why);
  });
});

describe('--notify-events', () => {
  it.each([
    [[''], [...NOTIFY_EVENTS]],
    [['all'], [...NOTIFY_EVENTS]],
    [
      ['drain-failed,wave-halted', 'overdue'],
      ['drain-failed', 'wave-halted', 'overdue'],
    ],
    [['reboot', 'reboot'], ['reboot']],
  ])('reads %o', (values, want) => {
    expect(notifyEvents(values)).toEqual(want);
  });
  it('refuses a kind it does not know, listing those it does', () => {
    expect(() => notifyEvents(['halted'])).toThrow('halted is not one of all, drain, reboot');
  });
});

describe('--node-check', () => {
  it.each([
    [
      'longhorn.io/v1beta2/volumes longhorn-system: !self.items.exists(v, v.status.currentNodeID == node.metadata.name)',
      {
        group: 'longhorn.io',
        version: 'v1beta2',
        resource: 'volumes',
        namespace: 'longhorn-system',
        when: 'after-drain',
      },
    ],
    [
      "at-slot ceph.rook.io/v1/cephclusters: self.items.all(c, c.status.ceph.health == 'HEALTH_OK')",
      { group: 'ceph.rook.io', version: 'v1', resource: 'cephclusters', when: 'at-slot' },
    ],
    [
      'always core/v1/configmaps ops: self.items.size() == 0',
      { group: '', resource: 'configmaps', when: 'always' },
    ],
  ] as const)('reads %s', (text, want) => {
    expect(nodeCheck(text)).toMatchObject({ ...want, text });
  });

  it.each([
    ['volumes: true', 'expected'],
    ['sometimes longhorn.io/v1beta2/volumes ns: true', 'expected'],
    ['longhorn.io/v1beta2/volumes Bad_NS: true', 'not a valid DNS-1123 label'],
    ['longhorn.io/v1beta2/volumes ns:  ', 'expected'],
  ])('refuses %s, naming what is wrong', (text, why) => {
    expect(() => nodeCheck(text)).toThrow(why);
  });
});

describe('what the notify URL is told', () => {
  function recording(): { notifier: Notifier; sent: string[] } {
    const sent: string[] = [];
    return {
      sent,
      notifier: {
        notify: (event, node, message) => {
          sent.push(`${event} ${node}: ${message}`);
          return Promise.resolve();
        },
      },
    };
  }

  it('each failure kind at most once per node and period; the cycle steps every time', async () => {
    const clock = new FakeClock();
    const { notifier, sent } = recording();
    const filter = new NoticeFilter(notifier, { events: [...NOTIFY_EVENTS], periodMs: 3_600_000, clock });
    const send = (event: NotifyEvent, node: string): Promise<void> => filter.notify(event, node, 'm');
    await send('not-back', 'n1');
    await send('not-back', 'n1');
    await send('not-back', 'n2');
    await send('reboot', 'n1');
    await send('reboot', 'n1');
    await clock.advance(3_600_000);
    await send('not-back', 'n1');
    expect(sent).toEqual([
      'not-back n1: m',
      'not-back n2: m',
      'reboot n1: m',
      'reboot n1: m',
      'not-back n1: m',
    ]);
  });

  it('only the kinds --notify-events names', async () => {
    const { notifier, sent } = recording();
    const filter = new NoticeFilter(notifier, {
      events: ['wave-halted'],
      periodMs: 1,
      clock: new FakeClock(),
    });
    await filter.notify('drain', 'n1', 'm');
    await filter.notify('wave-halted', 'n1', 'm');
    expect(sent).toEqual(['wave-halted n1: m']);
  });
});
