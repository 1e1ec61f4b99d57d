// Leader election over a coordination.k8s.io Lease (src/coordinator/lease-elector.ts), against an
// in-memory Lease store that answers as the API server does: 404 for a Lease that does not exist,
// 409 for a write whose resourceVersion is not the stored one.
import { afterEach, describe, expect, it } from '@jest/globals';
import type { V1Lease } from '../../src/kube/kube.js';
import { LeaseElector, type LeaseElectorOptions } from '../../src/coordinator/lease-elector.js';
import { MemoryLogger } from '../../src/log/logger.js';
import type { Clock } from '../../src/clock/clock.js';
import { FakeClock, flushMicrotasks, skewed } from '../fakes/fake-clock.js';
import { FakeKube } from '../fakes/fake-kube.js';

const NS = 'kube-system';
const NAME = 'kured-coordinator';
const LEASE_MS = 10_000;
const RENEW_DEADLINE_MS = 6_000;
const RETRY_MS = 2_000;

const apiError = (statusCode: number, message: string): Error =>
  Object.assign(new Error(message), { statusCode });

/**
 * One Lease, stored as the API server stores it: every write a new resourceVersion. (FakeKube
 * declares the Lease writes without parameters, hence the optional ones here.)
 */
class LeaseStore extends FakeKube {
  private version = 0;
  readonly calls = { get: 0, create: 0, replace: 0 };
  /** Writes (create and replace) fail with this while set. */
  failWrites: Error | undefined;

  override getLease(): Promise<V1Lease> {
    this.calls.get++;
    return super.getLease();
  }

  override createLease(_namespace?: string, lease: V1Lease = {}): Promise<V1Lease> {
    this.calls.create++;
    if (this.failWrites !== undefined) return Promise.reject(this.failWrites);
    if (this.lease !== undefined) return Promise.reject(apiError(409, 'already exists'));
    return Promise.resolve(this.store(lease));
  }

  override replaceLease(_namespace?: string, _name?: string, lease: V1Lease = {}): Promise<V1Lease> {
    this.calls.replace++;
    if (this.failWrites !== undefined) return Promise.reject(this.failWrites);
    if (this.lease === undefined) return Promise.reject(apiError(404, 'not found'));
    if (lease.metadata?.resourceVersion !== this.lease.metadata?.resourceVersion)
      return Promise.reject(apiError(409, 'the object has been modified'));
    return Promise.resolve(this.store(lease));
  }

  /** A write by someone else (another candidate, or a person with kubectl). */
  writeSpec(spec: Partial<NonNullable<V1Lease['spec']>>): void {
    const current = this.lease ?? { metadata: { name: NAME, namespace: NS } };
    this.store({ ...current, spec: { ...current.spec, ...spec } });
  }

  resetCalls(): void {
    Object.assign(this.calls, { get: 0, create: 0, replace: 0 });
  }

  private store(lease: V1Lease): V1Lease {
    this.version++;
    this.lease = structuredClone({
      ...lease,
      metadata: { ...lease.metadata, resourceVersion: String(this.version) },
    });
    return structuredClone(this.lease);
  }
}

const stops: AbortController[] = [];

afterEach(() => {
  for (const stop of stops.splice(0)) stop.abort();
});

function candidate(kube: LeaseStore, identity: string, clock: Clock): LeaseElector {
  const options: LeaseElectorOptions = {
    kube,
    namespace: NS,
    name: NAME,
    identity,
    clock,
    log: new MemoryLogger(),
    random: () => 0,
    leaseDurationMs: LEASE_MS,
    renewDeadlineMs: RENEW_DEADLINE_MS,
    retryPeriodMs: RETRY_MS,
  };
  return new LeaseElector(options);
}

/** Runs `elector` until the returned stop; `terms` holds the signal of each term it led. */
function running(elector: LeaseElector): { terms: AbortSignal[]; stop: () => Promise<void> } {
  const terms: AbortSignal[] = [];
  const controller = new AbortController();
  stops.push(controller);
  const lead = (signal: AbortSignal): Promise<void> =>
    new Promise((resolve) => {
      terms.push(signal);
      signal.addEventListener(
        'abort',
        () => {
          resolve();
        },
        { once: true },
      );
    });
  const done = elector.run(lead, controller.signal);
  return {
    terms,
    stop: async () => {
      controller.abort();
      await done;
    },
  };
}

describe('LeaseElector', () => {
  it('creates the Lease when there is none, and leads', async () => {
    const kube = new LeaseStore();
    const a = candidate(kube, 'a', new FakeClock());

    expect(await a.tryAcquireOrRenew()).toBe(true);

    expect(a.isLeader).toBe(true);
    expect(kube.calls.create).toBe(1);
    expect(kube.lease?.spec).toMatchObject({
      holderIdentity: 'a',
      leaseDurationSeconds: 10,
      leaseTransitions: 0,
    });
  });

  it('does not take a Lease that keeps being renewed', async () => {
    const clock = new FakeClock();
    const kube = new LeaseStore();
    const a = candidate(kube, 'a', clock);
    const b = candidate(kube, 'b', clock);
    await a.tryAcquireOrRenew();

    for (let t = 0; t < 6 * LEASE_MS; t += RETRY_MS) {
      expect(await b.tryAcquireOrRenew()).toBe(false);
      await clock.advance(RETRY_MS);
      expect(await a.tryAcquireOrRenew()).toBe(true);
    }

    expect(b.isLeader).toBe(false);
    expect(kube.lease?.spec?.holderIdentity).toBe('a');
  });

  it('takes a Lease over once it has seen it unchanged for leaseDuration on its own clock, never earlier', async () => {
    const clock = new FakeClock();
    const kube = new LeaseStore();
    await candidate(kube, 'a', clock).tryAcquireOrRenew();
    // a dies; much later b starts, its wall clock an hour ahead: the Lease's old renewTime is no proof
    await clock.advance(5 * LEASE_MS);
    const b = candidate(kube, 'b', skewed(clock, 3_600_000));

    expect(await b.tryAcquireOrRenew()).toBe(false);
    await clock.advance(LEASE_MS - 1);
    expect(await b.tryAcquireOrRenew()).toBe(false);
    await clock.advance(1);
    expect(await b.tryAcquireOrRenew()).toBe(true);

    expect(kube.lease?.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
  });

  it('takes over a Lease that claims an endless duration once unchanged for twice its own duration: a thief cannot lock the replicas out', async () => {
    const clock = new FakeClock();
    const kube = new LeaseStore();
    kube.writeSpec({ holderIdentity: 'thief', leaseDurationSeconds: 2147483647 });
    const b = candidate(kube, 'b', clock);
    expect(await b.tryAcquireOrRenew()).toBe(false);
    await clock.advance(2 * LEASE_MS - 1);
    expect(await b.tryAcquireOrRenew()).toBe(false);
    await clock.advance(1);
    expect(await b.tryAcquireOrRenew()).toBe(true);
    expect(kube.lease?.spec).toMatchObject({ holderIdentity: 'b', leaseDurationSeconds: 10 });
  });

  it("publishes its advice under its own name, a new number each write, and never carries another's or the older health", async () => {
    const clock = new FakeClock();
    const kube = new LeaseStore();
    kube.lease = {
      metadata: {
        name: NAME,
        namespace: NS,
        resourceVersion: '0',
        labels: { team: 'infra' },
        annotations: {
          'kured-ts.dev/fleet-advice': JSON.stringify({
            by: 'old',
            seq: 9,
            nodes: 3,
            held: { reason: 'stale' },
          }),
          'kured-ts.dev/fleet-health': '{"total":3,"count":0,"unhealthy":[]}',
          'other.example/keep': 'yes',
        },
      },
      spec: { holderIdentity: '', leaseDurationSeconds: 1 },
    };
    /** The Lease as stored now (read through a call: the store changes it). */
    const stored = (): V1Lease => kube.lease ?? {};
    const a = candidate(kube, 'a', clock);
    expect(await a.tryAcquireOrRenew()).toBe(true);
    // a new leader says nothing until its own view does; what others put on the Lease stays
    expect(stored().metadata?.annotations).toEqual({ 'other.example/keep': 'yes' });
    expect(stored().metadata?.labels).toEqual({ team: 'infra' });
    a.advise({ nodes: 5, held: { gate: 'max-unhealthy-nodes', reason: 'n3 not ready' } });
    expect(await a.tryAcquireOrRenew()).toBe(true);
    const first = JSON.parse(stored().metadata?.annotations?.['kured-ts.dev/fleet-advice'] ?? '{}') as {
      by: string;
      seq: number;
    };
    expect(first).toMatchObject({ by: 'a', nodes: 5, held: { reason: 'n3 not ready' } });
    expect(await a.tryAcquireOrRenew()).toBe(true);
    const second = JSON.parse(stored().metadata?.annotations?.['kured-ts.dev/fleet-advice'] ?? '{}') as {
      seq: number;
    };
    expect(second.seq).toBe(first.seq + 1);
    a.advise(undefined);
    expect(await a.tryAcquireOrRenew()).toBe(true);
    expect(stored().metadata?.annotations).toEqual({ 'other.example/keep': 'yes' });
  });

  it('stops leading when its renewals have failed for renewDeadline: the lead signal aborts', async () => {
    const clock = new FakeClock();
    const kube = new LeaseStore();
    const a = running(candidate(kube, 'a', clock));
    await flushMicrotasks();
    expect(a.terms).toHaveLength(1);
    kube.failWrites = apiError(500, 'etcd timeout');

    await clock.advance(RENEW_DEADLINE_MS - 1);
    expect(a.terms[0]?.aborted).toBe(false);
    await clock.advance(RETRY_MS);
    expect(a.terms[0]?.aborted).toBe(true);

    await a.stop();
  });

  it('releases the Lease when stopped, so a standby takes over on its next round', async () => {
    const clock = new FakeClock();
    const kube = new LeaseStore();
    const a = running(candidate(kube, 'a', clock));
    await flushMicrotasks();
    const b = candidate(kube, 'b', clock);
    expect(await b.tryAcquireOrRenew()).toBe(false);

    await a.stop();

    expect(kube.lease?.spec).toMatchObject({ holderIdentity: '', leaseDurationSeconds: 1 });
    expect(await b.tryAcquireOrRenew()).toBe(true);
    expect(kube.lease?.spec?.holderIdentity).toBe('b');
  });

  it('renews with one PUT and no GET while nobody else writes the Lease', async () => {
    const clock = new FakeClock();
    const kube = new LeaseStore();
    const a = candidate(kube, 'a', clock);
    await a.tryAcquireOrRenew();
    kube.resetCalls();

    for (let i = 0; i < 3; i++) {
      await clock.advance(RETRY_MS);
      expect(await a.tryAcquireOrRenew()).toBe(true);
    }

    expect(kube.calls).toEqual({ get: 0, create: 0, replace: 3 });
    expect(kube.lease?.spec?.renewTime).toBe('2026-01-05T10:00:06.000000Z');
  });

  it.each([
    ['gives way when another candidate took the Lease', 'c', false, { get: 1, create: 0, replace: 1 }],
    [
      'renews from a fresh read when the Lease is still its own',
      'a',
      true,
      { get: 1, create: 0, replace: 2 },
    ],
  ])('on a 409 to its renewal, reads and judges again: %s', async (_name, holder, leads, calls) => {
    const clock = new FakeClock();
    const kube = new LeaseStore();
    const a = candidate(kube, 'a', clock);
    await a.tryAcquireOrRenew();
    kube.writeSpec({ holderIdentity: holder });
    kube.resetCalls();

    expect(await a.tryAcquireOrRenew()).toBe(leads);

    expect(a.isLeader).toBe(leads);
    expect(kube.calls).toEqual(calls);
    expect(kube.lease?.spec?.holderIdentity).toBe(holder);
  });
});
