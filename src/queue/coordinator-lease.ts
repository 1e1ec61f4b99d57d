// What an agent reads of the coordinator (src/coordinator): whether one is alive, and its advice
// (how many nodes it sees, and which gate holds every waiter back now). Both come from one small
// object, the coordinator's coordination.k8s.io Lease, read at most once per CACHE_MS.
//
// Liveness is judged as client-go's leader election judges it, on the reader's own monotonic clock:
// a Lease whose resourceVersion has not changed for its leaseDurationSeconds since this reader
// first saw it has no live holder. Its renewTime (another machine's wall clock) is never compared
// with ours (DESIGN §12). A reader that has just started cannot tell a fresh Lease from a dead one
// at the first look; it counts the duration from that look (never early).
//
// Every value here has a writer that may lie (DESIGN §12; docs/advisor.md): the coordinator's token,
// or anyone RBAC lets write Leases in the namespace where the admission policy is off. So the
// duration trusted is at most MAX_TRUSTED_LEASE_MS whatever the Lease says (an endless Lease would
// otherwise keep every waiter waiting for turns nobody gives); every string copied from it is
// bounded; and the advice counts only from the holder it names, for ADVICE_MAX_AGE_MS on this
// reader's clock from when it first saw that publication. The advice can only hold a node back or
// word its wait: no gate of the fleet's capacity is taken from it (fleet-census.ts judges them).
import { monotonicMs, type Clock } from '../clock/clock.js';
import { isNotFound, statusMessage } from '../kube/errors.js';
import type { Kube, V1Lease } from '../kube/kube.js';
import { LeaseObserver } from '../lock/lease.js';

/**
 * Lease annotation: the coordinator's advice (Advice as JSON, at most ADVICE_MAX_BYTES; the
 * coordinator's admission policy holds it to that).
 */
export const ADVICE_ANNOTATION = 'kured-ts.dev/fleet-advice';

/**
 * The annotation older coordinators published the fleet's health under, read by older agents as the
 * census of their gates: a new coordinator removes it, so that an older agent judges its own.
 */
export const LEGACY_HEALTH_ANNOTATION = 'kured-ts.dev/fleet-health';

/** The longest advice read; a longer text is not advice. */
export const ADVICE_MAX_BYTES = 2048;

/** The coordinator's own lease duration, and the longest any reader trusts: twice that. */
export const COORDINATOR_LEASE_MS = 30_000;
export const MAX_TRUSTED_LEASE_MS = 2 * COORDINATOR_LEASE_MS;

/**
 * Advice counts this long after this reader first saw its publication (the holder republishes with
 * every renewal, every 10 s): as long as the longest lease trusted (MAX_TRUSTED_LEASE_MS).
 */
export const ADVICE_MAX_AGE_MS = 60_000;

/** The longest holder identity copied into a reason (the policy allows 128). */
export const HOLDER_MAX_CHARS = 128;

/** The longest reason of the advice copied into a waiter's status. */
export const HELD_REASON_MAX_CHARS = 512;

/** The most nodes the advice may claim (Kubernetes' supported maximum): it sets the waiters' rechecks. */
const MAX_FLEET_NODES = 5_000;

/** How long a released Lease is waited on for a standby to take it (as long as COORDINATOR_LEASE_MS). */
export const RELEASED_GRACE_MS = 30_000;

/** A read is reused for this long: one pass of an agent reads the Lease once. */
export const CACHE_MS = 2_000;

/** What the coordinator publishes, beside its holder identity and a sequence number. */
export interface AdviceContent {
  /** The nodes it sees. */
  nodes: number;
  /** Why it gives no turn now (a gate holds every waiter back, or the lock does), when so. */
  held?: { gate?: string; reason: string };
}

/** The advice as published: by whom (the Lease's holder then) and which publication. */
export interface Advice extends AdviceContent {
  by: string;
  seq: number;
}

export type CoordinatorState =
  | {
      live: true;
      /** The holder identity, cut to HOLDER_MAX_CHARS (for words only). */
      holder: string;
      /** Its advice, when it is from this holder and fresh; undefined otherwise. */
      advice: AdviceContent | undefined;
      /** How long this reader trusts the Lease unrenewed: its duration, at most MAX_TRUSTED_LEASE_MS. */
      durationMs: number;
    }
  | { live: false; reason: string; /** the Lease could not be read (not judged dead) */ unread?: true };

export interface CoordinatorLeaseOptions {
  kube: Kube;
  namespace: string;
  /** The Lease's name (coordinatorLeaseName(dsName)). */
  name: string;
  clock: Clock;
}

/** The coordinator's Lease name for the DaemonSet `dsName`. */
export function coordinatorLeaseName(dsName: string): string {
  return `${dsName}-coordinator`;
}

/** `text` cut to `max` characters (an ellipsis says so). */
export function bounded(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** The reason of why no turn is given, bounded; undefined when there is none. */
function heldOf(value: unknown): AdviceContent['held'] {
  const h = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  if (typeof h.reason !== 'string') return undefined;
  const reason = bounded(h.reason, HELD_REASON_MAX_CHARS);
  return typeof h.gate === 'string' ? { reason, gate: bounded(h.gate, 64) } : { reason };
}

/** The advice in an annotation's text, as published; undefined when it is not one (or too large). */
export function parseAdvice(text: string | undefined): Advice | undefined {
  if (text === undefined || Buffer.byteLength(text) > ADVICE_MAX_BYTES) return undefined;
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const { by, seq, nodes } = v;
  if (typeof by !== 'string' || typeof seq !== 'number' || typeof nodes !== 'number') return undefined;
  const held = heldOf(v.held);
  return {
    by,
    seq,
    nodes: Math.max(0, Math.min(MAX_FLEET_NODES, Math.floor(nodes))),
    ...(held === undefined ? {} : { held }),
  };
}

/** The advice as the coordinator publishes it. */
export function formatAdvice(advice: Advice): string {
  return JSON.stringify(advice);
}

export class CoordinatorLease {
  private readonly observed = new LeaseObserver();
  private readonly advised = new LeaseObserver();
  private cached: { at: number; state: CoordinatorState } | undefined;

  constructor(private readonly o: CoordinatorLeaseOptions) {}

  /** The coordinator as its Lease tells now (a read of the last CACHE_MS is reused). */
  async read(signal?: AbortSignal): Promise<CoordinatorState> {
    const now = monotonicMs(this.o.clock);
    if (this.cached !== undefined && now - this.cached.at < CACHE_MS) return this.cached.state;
    const state = await this.fetch(now, signal);
    this.cached = { at: now, state };
    return state;
  }

  private async fetch(now: number, signal?: AbortSignal): Promise<CoordinatorState> {
    const where = `Lease ${this.o.namespace}/${this.o.name}`;
    let lease: V1Lease;
    try {
      lease = await this.o.kube.getLease(this.o.namespace, this.o.name, signal);
    } catch (err) {
      if (isNotFound(err)) return { live: false, reason: `no coordinator: ${where} does not exist` };
      if (signal?.aborted === true) throw err;
      return {
        live: false,
        reason: `cannot read the coordinator's ${where}: ${statusMessage(err)}`,
        unread: true,
      };
    }
    return this.judge(lease, where, now);
  }

  private judge(lease: V1Lease, where: string, now: number): CoordinatorState {
    const holder = lease.spec?.holderIdentity ?? '';
    this.observed.observe(where, lease.metadata?.resourceVersion ?? '', now);
    if (holder === '') return this.released(lease, where, now);
    const stale = this.staleSeconds(lease, where, now);
    const shown = bounded(holder, HOLDER_MAX_CHARS);
    if (stale !== undefined) {
      return { live: false, reason: `no coordinator: ${where} of ${shown} not renewed for ${stale}s` };
    }
    return {
      live: true,
      holder: shown,
      advice: this.advice(lease, holder, now),
      durationMs: this.durationMs(lease),
    };
  }

  /**
   * The Lease's advice when it is the holder's own (`by` names it: a new leader's Lease carries no
   * old leader's word) and this reader first saw its publication at most ADVICE_MAX_AGE_MS ago.
   */
  private advice(lease: V1Lease, holder: string, now: number): AdviceContent | undefined {
    const advice = parseAdvice(lease.metadata?.annotations?.[ADVICE_ANNOTATION]);
    if (advice?.by !== holder) return undefined;
    const since = this.advised.observe('advice', `${advice.by}\u0000${advice.seq}`, now);
    if (now - since > ADVICE_MAX_AGE_MS) return undefined;
    return { nodes: advice.nodes, ...(advice.held === undefined ? {} : { held: advice.held }) };
  }

  /**
   * A released Lease (a leader that stopped, or stepped down because it could not see the fleet) is
   * waited on for RELEASED_GRACE_MS since this reader first saw it so: its standby takes it within a
   * retry period, and a fleet that went first come meanwhile would herd on the lock (at 5,000 nodes,
   * every waiter reading and watching the DaemonSet) only to queue again moments later.
   */
  private released(lease: V1Lease, where: string, now: number): CoordinatorState {
    if (this.observed.expired(where, RELEASED_GRACE_MS, now))
      return { live: false, reason: `no coordinator: ${where} has no holder` };
    return {
      live: true,
      holder: 'none: released, its standby expected',
      advice: undefined,
      durationMs: RELEASED_GRACE_MS,
    };
  }

  /** The duration this reader trusts: the Lease's (15 s when it gives none), at most MAX_TRUSTED_LEASE_MS. */
  private durationMs(lease: V1Lease): number {
    const seconds = lease.spec?.leaseDurationSeconds ?? 15;
    return Math.max(1_000, Math.min(MAX_TRUSTED_LEASE_MS, seconds * 1000));
  }

  /** Seconds the Lease has gone unchanged, once that is its trusted duration or more. */
  private staleSeconds(lease: V1Lease, where: string, now: number): number | undefined {
    if (!this.observed.expired(where, this.durationMs(lease), now)) return undefined;
    return Math.round((now - (this.observed.since(where) ?? now)) / 1000);
  }
}
