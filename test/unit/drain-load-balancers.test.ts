import { describe, expect, it } from '@jest/globals';
import {
  KubeLoadBalancers,
  lbWaitBeforeAsking,
  lbWaitGiven,
  SERVICES_PAGE,
} from '../../src/drain/load-balancers.js';
import type { ServicePage } from '../../src/kube/kube.js';
import { DO_NOT_REPAIR_ANNOTATION, EXCLUDE_LB_LABEL, marksFor, unmark } from '../../src/node/cycle-marks.js';

const page = (types: string[], more = false): ServicePage => ({
  items: types.map((type, i) => ({ metadata: { name: `s${i}`, namespace: 'ns' }, spec: { type } })),
  ...(more ? { continue: 'next' } : {}),
});

describe('is there a load balancer', () => {
  it('asks once, for one page from the watch cache, and names the first LoadBalancer Service', async () => {
    const asked: unknown[] = [];
    const lbs = new KubeLoadBalancers({
      listServicesPage: (options) => {
        asked.push(options);
        return Promise.resolve(page(['ClusterIP', 'LoadBalancer']));
      },
    });
    expect(await lbs.presence()).toEqual({ present: true, reason: 'Service ns/s1 is of type LoadBalancer' });
    expect(asked).toEqual([{ limit: SERVICES_PAGE, resourceVersion: '0' }]);
  });

  it('says none when the only page has none', async () => {
    const lbs = new KubeLoadBalancers({
      listServicesPage: () => Promise.resolve(page(['ClusterIP', 'NodePort'])),
    });
    expect(await lbs.presence()).toEqual({ present: false, reason: 'no Service of type LoadBalancer' });
  });

  it('assumes load balancers when more pages follow without one (bounded: one list)', async () => {
    const lbs = new KubeLoadBalancers({ listServicesPage: () => Promise.resolve(page(['ClusterIP'], true)) });
    expect((await lbs.presence()).present).toBe(true);
  });

  it('assumes load balancers when the Services cannot be listed', async () => {
    const lbs = new KubeLoadBalancers({ listServicesPage: () => Promise.reject(new Error('forbidden')) });
    expect(await lbs.presence()).toEqual({
      present: true,
      reason: 'the Services cannot be listed (forbidden): assuming load balancers',
    });
  });
});

describe('the wait before the drain', () => {
  const facts = { excludeFromLb: true, waitMs: 120_000, labelledAtMs: 1_000_000, nowMs: 1_000_000 };

  it('asks the cluster for the whole wait right after the label', () => {
    expect(lbWaitBeforeAsking(facts)).toEqual({ ask: true, remainingMs: 120_000 });
  });

  it('after a restart waits only what remains, and nothing once it has passed', () => {
    expect(lbWaitBeforeAsking({ ...facts, nowMs: 1_090_000 })).toEqual({ ask: true, remainingMs: 30_000 });
    expect(lbWaitBeforeAsking({ ...facts, nowMs: 1_200_000 })).toEqual({
      waitMs: 0,
      reason: '--lb-drain-wait 2m has passed since the label',
    });
  });

  it('never waits longer than --lb-drain-wait, whatever the recorded time says', () => {
    expect(lbWaitBeforeAsking({ ...facts, labelledAtMs: 9_000_000 })).toEqual({
      ask: true,
      remainingMs: 120_000,
    });
  });

  it('does not wait for a label that is not ours, or with the flag off', () => {
    expect(lbWaitBeforeAsking({ ...facts, labelledAtMs: undefined })).toMatchObject({ waitMs: 0 });
    expect(lbWaitBeforeAsking({ ...facts, excludeFromLb: false })).toEqual({
      waitMs: 0,
      reason: '--exclude-from-lb is off',
    });
  });

  it('does not wait without load balancers', () => {
    expect(lbWaitGiven({ present: false, reason: 'no Service of type LoadBalancer' }, 5000)).toEqual({
      waitMs: 0,
      reason: 'no Service of type LoadBalancer',
    });
    expect(lbWaitGiven({ present: true, reason: 'Service a/b is of type LoadBalancer' }, 5000).waitMs).toBe(
      5000,
    );
  });
});

describe('the marks of a cycle', () => {
  const bare = { labels: {}, annotations: {} };

  it('adds the label and do-not-repair only where absent, and the record owns what it added', () => {
    expect(marksFor(bare, { excludeFromLb: true, doNotRepair: true }, 'T')).toEqual({
      write: { labels: { [EXCLUDE_LB_LABEL]: 'true' }, annotations: { [DO_NOT_REPAIR_ANNOTATION]: 'true' } },
      record: { lbExcludedAt: 'T', doNotRepair: true },
    });
    const theirs = {
      labels: { [EXCLUDE_LB_LABEL]: '' },
      annotations: { [DO_NOT_REPAIR_ANNOTATION]: 'true' },
    };
    expect(marksFor(theirs, { excludeFromLb: true, doNotRepair: true }, 'T')).toEqual({
      write: { labels: {}, annotations: {} },
      record: {},
    });
  });

  it('removes only what the record owns and still carries our value', () => {
    const marked = {
      labels: { [EXCLUDE_LB_LABEL]: 'true' },
      annotations: { [DO_NOT_REPAIR_ANNOTATION]: 'true' },
    };
    expect(unmark(marked, { lbExcludedAt: 'T', doNotRepair: true })).toEqual({
      labels: { [EXCLUDE_LB_LABEL]: null },
      annotations: { [DO_NOT_REPAIR_ANNOTATION]: null },
    });
    expect(unmark(marked, {})).toEqual({ labels: {}, annotations: {} });
    const changed = {
      labels: { [EXCLUDE_LB_LABEL]: 'ops' },
      annotations: { [DO_NOT_REPAIR_ANNOTATION]: 'false' },
    };
    expect(unmark(changed, { lbExcludedAt: 'T', doNotRepair: true })).toEqual({
      labels: {},
      annotations: {},
    });
  });
});
