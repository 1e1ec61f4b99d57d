// Leader election over a coordination.k8s.io Lease, as client-go's leaderelection package does it:
// candidates try every retryPeriod; the holder renews every retryPeriod and gives up leading when it
// has not renewed for renewDeadline (before its Lease can lapse for others); a candidate takes over a
// Lease it has seen unchanged for leaseDuration on its own monotonic clock (never comparing the
// holder's renewTime with its own wall clock, DESIGN §12); a holder that stops releases the Lease so
// a standby takes over at once. Every write is a PUT guarded by resourceVersion.
import { monotonicMs, type Clock } from '../clock/clock.js';
import { isConflict, isNotFound, statusMessage } from '../kube/errors.js';
import type { Kube, V1Lease } from '../kube/kube.js';
import { backoffMs } from '../kube/retry.js';
import { LeaseObserver } from '../lock/lease.js';
import type { Logger } from '../log/logger.js';
import {
  ADVICE_ANNOTATION,
  COORDINATOR_LEASE_MS,
  LEGACY_HEALTH_ANNOTATION,
  formatAdvice,
  type AdviceContent,
} from '../queue/coordinator-lease.js';

export interface LeaseElectorOptions {
  kube: Kube;
  namespace: string;
  name: string;
  /** This candidate, unique among the candidates (pod name and a random suffix). */
  identity: string;
  clock: Clock;
  log: Logger;
  random: () => number;
  /** Default LEASE_DURATION_MS. */
  leaseDurationMs?: number;
  /** Default RENEW_DEADLINE_MS. */
  renewDeadlineMs?: number;
  /** Default RETRY_PERIOD_MS. */
  retryPeriodMs?: number;
}

/**
 * Longer than client-go's usual 15 s / 10 s / 2 s: a dead leader only stalls the queue (no slot
 * waits on it for safety), so a renewal every 10 s (one PUT; the standby one GET) is worth a standby
 * that takes over within 30-40 s. renewDeadline stays above the candidates' jittered retry (12 s).
 */
export const LEASE_DURATION_MS = COORDINATOR_LEASE_MS;
const RENEW_DEADLINE_MS = 20_000;
export const RETRY_PERIOD_MS = 10_000;
/** The longest a candidate that stepped down (it could not lead) waits before campaigning again. */
const MAX_SIT_OUT_MS = 10 * 60_000;

/** Read through a call so that the compiler does not narrow it across awaits. */
function aborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

/** `annotations` without `keys`. */
function withoutKeys(
  annotations: Record<string, string> | undefined,
  keys: readonly string[],
): Record<string, string> {
  const kept = { ...annotations };
  for (const key of keys) Reflect.deleteProperty(kept, key);
  return kept;
}

/** kube's MicroTime: RFC 3339 with microseconds. */
function microTime(date: Date): string {
  return date.toISOString().replace(/Z$/, '000Z');
}

export class LeaseElector {
  private readonly observed = new LeaseObserver();
  /** What this leader advises now; undefined: nothing (a new term, or a view it cannot trust). */
  private advice: AdviceContent | undefined;
  /** Publications of advice by this candidate (each renewal is one). */
  private seq = 0;
  private leading = false;
  /** The Lease as this leader last wrote it: a renewal PUTs from it without a GET first. */
  private mine: V1Lease | undefined;

  constructor(private readonly o: LeaseElectorOptions) {}

  get durationMs(): number {
    return this.o.leaseDurationMs ?? LEASE_DURATION_MS;
  }

  /** Is this candidate the leader now (as of its last renewal)? */
  get isLeader(): boolean {
    return this.leading;
  }

  /**
   * The advice written on the Lease with each renewal, under this candidate's identity and a new
   * sequence number each time (the agents judge its age from that); undefined withdraws it.
   */
  advise(advice: AdviceContent | undefined): void {
    this.advice = advice;
  }

  /**
   * Campaigns until `signal` aborts; runs `lead` with a signal that aborts when leadership is lost.
   * Leadership lost is campaigned for again. When `lead` ends (or fails) by itself, this candidate
   * cannot lead (it cannot see the fleet): it releases the Lease, so that the standby takes over at
   * once (with none, the agents go first come once the Lease has stayed released for 30 s), and sits out a back-off that doubles
   * with each such step-down (from one lease duration up to MAX_SIT_OUT_MS) before campaigning again.
   * Releases the Lease when stopped while leading.
   */
  async run(lead: (signal: AbortSignal) => Promise<void>, signal: AbortSignal): Promise<void> {
    let stepDowns = 0;
    while (!signal.aborted) {
      // a new term advises nothing until its own view of the fleet says something
      this.advice = undefined;
      if (!(await this.campaign(signal))) break;
      this.o.log.info('coordinator leading', { identity: this.o.identity });
      const leadership = new AbortController();
      const both = AbortSignal.any([signal, leadership.signal]);
      const renewing = new AbortController();
      const term = { steppedDown: false };
      const work = lead(both)
        .catch((err: unknown) => {
          if (!both.aborted) this.o.log.error('coordinator failed', { error: statusMessage(err) });
        })
        .then(() => {
          term.steppedDown = !both.aborted;
          renewing.abort();
        });
      await this.keepRenewing(AbortSignal.any([signal, renewing.signal]));
      this.leading = false;
      leadership.abort();
      await work;
      if (aborted(signal) || term.steppedDown) await this.release();
      if (!term.steppedDown) {
        stepDowns = 0;
        if (!aborted(signal)) this.o.log.warn('coordinator lost its lease', { identity: this.o.identity });
        continue;
      }
      stepDowns++;
      const pause = backoffMs(stepDowns, this.durationMs, MAX_SIT_OUT_MS, this.o.random);
      this.o.log.warn('coordinator stepped down', {
        identity: this.o.identity,
        sitsOut: `${Math.round(pause / 1000)}s`,
      });
      await this.o.clock.sleep(pause, signal).catch(() => undefined);
    }
  }

  /** Tries every retryPeriod until this candidate leads (true) or `signal` aborts (false). */
  private async campaign(signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted) {
      if (await this.tryAcquireOrRenew(signal)) return true;
      await this.pause(signal);
    }
    return false;
  }

  /** Renews every retryPeriod; returns when a renewal has not succeeded for renewDeadline, or on abort. */
  private async keepRenewing(signal: AbortSignal): Promise<void> {
    const deadline = this.o.renewDeadlineMs ?? RENEW_DEADLINE_MS;
    let renewed = monotonicMs(this.o.clock);
    while (!signal.aborted) {
      await this.pause(signal);
      if (aborted(signal)) return;
      if (await this.tryAcquireOrRenew(signal)) renewed = monotonicMs(this.o.clock);
      else if (monotonicMs(this.o.clock) - renewed >= deadline) return;
    }
  }

  private async pause(signal: AbortSignal): Promise<void> {
    const period = this.o.retryPeriodMs ?? RETRY_PERIOD_MS;
    // client-go's JitterUntil with factor 1.2 for candidates; renewals keep the plain period
    const ms = this.leading ? period : period * (1 + 0.2 * this.o.random());
    await this.o.clock.sleep(ms, signal).catch(() => undefined);
  }

  /**
   * One round: true when this candidate holds the Lease afterwards. Never throws. A leader renews
   * from the Lease it last wrote (one PUT; a 409 means someone else wrote it: read and judge anew).
   */
  async tryAcquireOrRenew(signal?: AbortSignal): Promise<boolean> {
    try {
      if (await this.renew(signal)) return true;
      return (this.leading = await this.acquire(signal));
    } catch (err) {
      if (!isConflict(err) && signal?.aborted !== true) {
        this.o.log.debug('coordinator lease round failed', { error: statusMessage(err) });
      }
      this.mine = undefined;
      return (this.leading = false);
    }
  }

  /**
   * A leader's renewal: one PUT of the Lease it last wrote. False when it must read instead (not
   * leading, or a 409: someone else wrote it); other failures throw.
   */
  private async renew(signal?: AbortSignal): Promise<boolean> {
    if (!this.leading || this.mine === undefined) return false;
    const { kube, namespace, name } = this.o;
    try {
      this.mine = await kube.replaceLease(namespace, name, this.record(this.mine), signal);
      return true;
    } catch (err) {
      this.mine = undefined;
      if (!isConflict(err)) throw err;
      return false;
    }
  }

  /** Reads the Lease and takes it when absent (a create) or when mayTake allows; true when taken. */
  private async acquire(signal?: AbortSignal): Promise<boolean> {
    const { kube, namespace, name } = this.o;
    const lease = await kube.getLease(namespace, name, signal).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
    if (lease === undefined) {
      this.mine = await kube.createLease(namespace, this.record(undefined), signal);
      return true;
    }
    if (!this.mayTake(lease)) return false;
    this.mine = await kube.replaceLease(namespace, name, this.record(lease), signal);
    return true;
  }

  /** Ours, free (released), or unchanged for leaseDuration since we first saw it so. */
  private mayTake(lease: V1Lease): boolean {
    const holder = lease.spec?.holderIdentity ?? '';
    const key = lease.metadata?.resourceVersion ?? '';
    const now = monotonicMs(this.o.clock);
    this.observed.observe('lease', key, now);
    if (holder === '' || holder === this.o.identity) return true;
    // an endless Lease (a stolen token, a bad write) must not lock the replicas out for good
    const given = (lease.spec?.leaseDurationSeconds ?? this.durationMs / 1000) * 1000;
    const durationMs = Math.max(1_000, Math.min(2 * this.durationMs, given));
    return this.observed.expired('lease', durationMs, now);
  }

  /** The Lease with this candidate as holder, renewed now. */
  private record(current: V1Lease | undefined): V1Lease {
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: this.recordMetadata(current),
      spec: this.recordSpec(current),
    };
  }

  /**
   * `current`'s metadata (its resourceVersion guards the PUT; labels, owners and finalizers kept)
   * with this leader's advice in place of any other's, and the older coordinators' health annotation
   * gone (an older agent then judges its gates itself).
   */
  private recordMetadata(current: V1Lease | undefined): NonNullable<V1Lease['metadata']> {
    const meta = current?.metadata ?? {};
    const { resourceVersion, labels, finalizers, ownerReferences } = meta;
    const annotations = withoutKeys(meta.annotations, [ADVICE_ANNOTATION, LEGACY_HEALTH_ANNOTATION]);
    if (this.advice !== undefined)
      annotations[ADVICE_ANNOTATION] = formatAdvice({ by: this.o.identity, seq: ++this.seq, ...this.advice });
    return {
      name: this.o.name,
      namespace: this.o.namespace,
      ...(resourceVersion === undefined ? {} : { resourceVersion }),
      ...(labels === undefined ? {} : { labels }),
      ...(finalizers === undefined ? {} : { finalizers }),
      ...(ownerReferences === undefined ? {} : { ownerReferences }),
      annotations,
    };
  }

  /** This candidate as holder since now, or since it took `current` over; a take-over is a transition. */
  private recordSpec(current: V1Lease | undefined): NonNullable<V1Lease['spec']> {
    const now = microTime(this.o.clock.now());
    const spec = current?.spec;
    const ours = spec?.holderIdentity === this.o.identity;
    const transitions = spec?.leaseTransitions ?? 0;
    return {
      holderIdentity: this.o.identity,
      leaseDurationSeconds: Math.ceil(this.durationMs / 1000),
      acquireTime: ours ? (spec.acquireTime ?? now) : now,
      renewTime: now,
      leaseTransitions: current === undefined ? 0 : ours ? transitions : transitions + 1,
    };
  }

  /** Gives the Lease up (holder '' and a 1 s duration), so a standby takes over at once. */
  private async release(): Promise<void> {
    const { kube, namespace, name } = this.o;
    try {
      const lease = await kube.getLease(namespace, name);
      if (lease.spec?.holderIdentity !== this.o.identity) return;
      const spec = { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1 };
      const annotations = withoutKeys(lease.metadata?.annotations, [ADVICE_ANNOTATION]);
      await kube.replaceLease(namespace, name, {
        ...lease,
        metadata: { ...lease.metadata, annotations },
        spec,
      });
      this.o.log.info('coordinator lease released', { identity: this.o.identity });
    } catch (err) {
      this.o.log.warn('coordinator lease not released', { error: statusMessage(err) });
    }
  }
}
