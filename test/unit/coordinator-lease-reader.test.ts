// What an agent reads of the coordinator's Lease (src/queue/coordinator-lease.ts): whether a
// coordinator is alive, judged on the reader's own clock, and the fleet's health it publishes.
import { describe, expect, it } from '@jest/globals';
import type { V1Lease } from '../../src/kube/kube.js';
import {
  CACHE_MS,
  CoordinatorLease,
  HEALTH_ANNOTATION,
  RELEASED_GRACE_MS,
} from '../../src/queue/coordinator-lease.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { FakeKube } from '../fakes/fake-kube.js';

const NS = 'kube-system';
const NAME = 'kured-coordinator';

/** FakeKube's Lease, with its reads counted. */
class CountingKube extends FakeKube {
  reads = 0;

  override getLease(): Promise<V1Lease> {
    this.reads++;
    return super.getLease();
  }
}

function lease(
  resourceVersion: string,
  holder = 'coordinator-0',
  annotations: Record<string, string> = {},
): V1Lease {
  return {
    metadata: { name: NAME, namespace: NS, resourceVersion, annotations },
    spec: { holderIdentity: holder, leaseDurationSeconds: 20 },
  };
}

function reader(): { kube: CountingKube; clock: FakeClock; coordinator: CoordinatorLease } {
  const kube = new CountingKube();
  const clock = new FakeClock();
  return { kube, clock, coordinator: new CoordinatorLease({ kube, namespace: NS, name: NAME, clock }) };
}

describe('CoordinatorLease', () => {
  it('tells of no coordinator when its Lease does not exist, naming the Lease', async () => {
    const { coordinator } = reader();

    expect(await coordinator.read()).toEqual({
      live: false,
      reason: 'no coordinator: Lease kube-system/kured-coordinator does not exist',
    });
  });

  it('waits on a released Lease for its standby, and tells of no coordinator once it stays released for the grace', async () => {
    const { kube, clock, coordinator } = reader();
    kube.lease = lease('7', '');
    expect(await coordinator.read()).toMatchObject({
      live: true,
      holder: 'none: released, its standby expected',
    });
    await clock.advance(RELEASED_GRACE_MS - 1000);
    expect((await coordinator.read()).live).toBe(true);
    await clock.advance(CACHE_MS);
    expect(await coordinator.read()).toEqual({
      live: false,
      reason: 'no coordinator: Lease kube-system/kured-coordinator has no holder',
    });
    // the standby takes it: a coordinator again at once
    kube.lease = lease('8', 'coordinator-1');
    await clock.advance(CACHE_MS);
    expect(await coordinator.read()).toMatchObject({ live: true, holder: 'coordinator-1' });
  });

  it('tells of no coordinator once the Lease has gone unchanged for its duration since first seen, and of one again when it changes', async () => {
    const { kube, clock, coordinator } = reader();
    kube.lease = lease('7');
    expect(await coordinator.read()).toMatchObject({ live: true, holder: 'coordinator-0' });

    await clock.advance(20_000 - 1);
    expect(await coordinator.read()).toMatchObject({ live: true });
    await clock.advance(CACHE_MS);
    expect(await coordinator.read()).toEqual({
      live: false,
      reason: 'no coordinator: Lease kube-system/kured-coordinator of coordinator-0 not renewed for 22s',
    });

    kube.lease = lease('8');
    await clock.advance(CACHE_MS);
    expect(await coordinator.read()).toMatchObject({ live: true, holder: 'coordinator-0' });
  });

  it.each([
    [
      'reads the health the coordinator publishes',
      '{"total":5,"count":1,"unhealthy":["n3 not ready"]}',
      { total: 5, count: 1, unhealthy: ['n3 not ready'] },
    ],
    ['ignores a health annotation that is not JSON', 'not json', undefined],
    ['ignores a health annotation without its fields', '{"total":"5","count":1}', undefined],
    ['has no health without the annotation', undefined, undefined],
  ])('%s', async (_name, text, health) => {
    const { kube, coordinator } = reader();
    kube.lease = lease('7', 'coordinator-0', text === undefined ? {} : { [HEALTH_ANNOTATION]: text });

    expect(await coordinator.read()).toEqual({
      live: true,
      holder: 'coordinator-0',
      health,
      durationMs: 20_000,
    });
  });

  it('reuses a read for CACHE_MS: one GET per pass of an agent', async () => {
    const { kube, clock, coordinator } = reader();
    kube.lease = lease('7');

    await coordinator.read();
    await clock.advance(CACHE_MS - 1);
    await coordinator.read();
    expect(kube.reads).toBe(1);

    await clock.advance(1);
    await coordinator.read();
    expect(kube.reads).toBe(2);
  });
});
