// What an agent reads of the coordinator's Lease (src/queue/coordinator-lease.ts): whether a
// coordinator is alive, judged on the reader's own clock, and its advice, trusted only from the
// holder that published it, fresh, bounded, whatever else the Lease says (DESIGN §12).
import { describe, expect, it } from '@jest/globals';
import type { V1Lease } from '../../src/kube/kube.js';
import {
  ADVICE_ANNOTATION,
  ADVICE_MAX_AGE_MS,
  CACHE_MS,
  CoordinatorLease,
  LEGACY_HEALTH_ANNOTATION,
  MAX_TRUSTED_LEASE_MS,
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

  const advice = (over: Record<string, unknown> = {}): string =>
    JSON.stringify({
      by: 'coordinator-0',
      seq: 4,
      nodes: 5,
      held: { gate: 'max-unhealthy-nodes', reason: 'n3 not ready' },
      ...over,
    });
  it.each([
    [
      'reads the advice its holder publishes',
      { [ADVICE_ANNOTATION]: advice() },
      { nodes: 5, held: { gate: 'max-unhealthy-nodes', reason: 'n3 not ready' } },
    ],
    [
      'ignores advice published under another name (an old leader, or a forgery)',
      { [ADVICE_ANNOTATION]: advice({ by: 'coordinator-1' }) },
      undefined,
    ],
    ['ignores advice that is not JSON', { [ADVICE_ANNOTATION]: 'not json' }, undefined],
    [
      'ignores advice without its fields',
      { [ADVICE_ANNOTATION]: '{"by":"coordinator-0","nodes":5}' },
      undefined,
    ],
    [
      'ignores advice larger than 2 KiB',
      { [ADVICE_ANNOTATION]: advice({ held: { reason: 'x'.repeat(3000) } }) },
      undefined,
    ],
    [
      'cuts a long reason to 512 characters and a claimed fleet to 5,000 nodes',
      { [ADVICE_ANNOTATION]: advice({ nodes: 1e9, held: { reason: 'r'.repeat(1500) } }) },
      { nodes: 5000, held: { reason: `${'r'.repeat(511)}…` } },
    ],
    [
      "takes nothing from an older coordinator's health annotation",
      { [LEGACY_HEALTH_ANNOTATION]: '{"total":5,"count":0,"unhealthy":[]}' },
      undefined,
    ],
    ['has no advice without the annotation', {}, undefined],
  ])('%s', async (_name, annotations, expected) => {
    const { kube, coordinator } = reader();
    kube.lease = lease('7', 'coordinator-0', annotations);

    expect(await coordinator.read()).toEqual({
      live: true,
      holder: 'coordinator-0',
      advice: expected,
      durationMs: 20_000,
    });
  });

  it('trusts one publication of advice for ADVICE_MAX_AGE_MS on its own clock, and a new one again', async () => {
    const { kube, clock, coordinator } = reader();
    // a Lease that keeps being renewed (its resourceVersion moves) but whose advice never does
    let rv = 7;
    kube.lease = lease(String(rv), 'coordinator-0', { [ADVICE_ANNOTATION]: advice() });
    expect((await coordinator.read()).live && (await coordinator.read())).toMatchObject({
      advice: { nodes: 5 },
    });
    for (let t = 0; t <= ADVICE_MAX_AGE_MS; t += 10_000) {
      await clock.advance(10_000);
      kube.lease = lease(String(++rv), 'coordinator-0', { [ADVICE_ANNOTATION]: advice() });
    }
    expect(await coordinator.read()).toMatchObject({ live: true, advice: undefined });
    kube.lease = lease(String(++rv), 'coordinator-0', { [ADVICE_ANNOTATION]: advice({ seq: 5 }) });
    await clock.advance(CACHE_MS);
    expect(await coordinator.read()).toMatchObject({ live: true, advice: { nodes: 5 } });
  });

  it.each([
    ['an endless Lease', 2147483647, MAX_TRUSTED_LEASE_MS],
    ['a Lease of a few hours', 14_400, MAX_TRUSTED_LEASE_MS],
    ['a Lease of 0 s', 0, 1_000],
  ])("trusts %s no longer than twice the coordinator's own duration", async (_name, seconds, trusted) => {
    const { kube, clock, coordinator } = reader();
    kube.lease = { ...lease('7'), spec: { holderIdentity: 'thief', leaseDurationSeconds: seconds } };
    expect(await coordinator.read()).toMatchObject({ live: true, durationMs: trusted });
    await clock.advance(trusted + CACHE_MS);
    expect(await coordinator.read()).toMatchObject({ live: false });
  });

  it('copies at most 128 characters of a holder identity into what it says', async () => {
    const { kube, coordinator } = reader();
    kube.lease = lease('7', 'h'.repeat(100_000));
    const state = await coordinator.read();
    expect(state.live && state.holder).toBe(`${'h'.repeat(127)}…`);
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
