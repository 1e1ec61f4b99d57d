// The reboot lock kept, as kured keeps it, in an annotation of the kured DaemonSet.
//
// Every write is a merge patch carrying metadata.resourceVersion (the API server answers 409 when the
// DaemonSet changed since we read it), retried with a fresh read, bounded and jittered. Each write
// also prunes expired slots. A slot whose Node no longer exists is reclaimed when all slots are full.
//
// What holds a slot, besides the annotation:
// - Expiry (--lock-ttl, or a slot's own TTL) is judged by each reader on its own monotonic clock
//   from the holder's last sign of life (lease.ts), never by comparing wall clocks across nodes; the
//   holder renews its slot while its cycle goes on.
// - A node in a reboot cycle (label kured-ts.dev/rebooting, src/node/cycle.ts) holds a slot even
//   when its entry is missing: deleted, rewritten or expired while the node was down. Such a node
//   counts against --concurrency until its cycle ends (its agent removes the label), its Node is
//   deleted, or an operator removes the label: --lock-ttl does not free it, so neither a lock wiped
//   mid-wave nor a TTL shorter than a reboot lets more than --concurrency nodes out of service. It
//   takes its slot back when it returns. Only acquisitions look for such nodes (one list by label
//   selector); waiting does not.
// - kured's manual lock (an entry without a creation time, e.g. {"nodeID":"manual"}) holds every
//   slot, at any concurrency, until an operator removes it.
// - An entry is not proof (DESIGN §12): anyone who can write the annotation can name any node in it.
//   Every reader counts the live entries against the lock's own maxOwners and its --concurrency; a
//   lock that claims more is forged or corrupt and gives no new slot to anyone. A node's own entry
//   counts as its slot unchanged only while the node's own cycle record (which only its agent may
//   write, under the admission policy) proves it; otherwise it is judged as a new acquisition
//   (SlotProof). A forged lock can thus hold reboots back (loudly: the reason names the entries and
//   since when they stand), never let more than --concurrency nodes out.
// - An annotation we cannot parse is reported and treated as held by an unknown holder; with a TTL it
//   expires once it has gone unchanged for that long.
//
// Thousands of agents may wait for a slot at once (patch night, DESIGN §13). With the coordinated
// queue (--lock-queue fair, turn-gate.ts) a waiter follows only its own Node for its turn, named by
// the coordinator for each freed slot: one node wakes per hand-off and nobody lists the fleet.
// Without it (--lock-queue none, or no live coordinator) each waiter follows the DaemonSet
// (a reflector, src/kube/reflector.ts) and wakes only when a slot could be its own; a freed slot wakes them all, so each
// pauses a random moment and looks again before it sends anything (slot-wait.ts).
import { ReadinessWait } from './readiness-wait.js';
import { waitForTurn, waitOf } from './lock-wait.js';
import { isConflict, isInvalid, statusMessage } from '../kube/errors.js';
import type { V1DaemonSet } from '../kube/kube.js';
import { retry } from '../kube/retry.js';
import { formatMulti, formatSingle, newEntry, toHolder, type LockEntry } from './kured-lock-format.js';
import { LeaseObserver } from './lease.js';
import type {
  AcquireResult,
  Lock,
  LockHolder,
  LockMetadata,
  LockWait,
  Refusal,
  SlotProof,
  TurnVerdict,
} from './lock.js';
import { LockView } from './lock-view.js';
import { SlotWait, type WaitedLock } from './slot-wait.js';
import { LockHolders } from './lock-holders.js';
import { LockReasons } from './lock-reasons.js';
import { groupSlotsOf, multiForm } from '../capacity/budget.js';
import { allTaken, roomFor, type NodeInCycle, type NoRoom, type RoomQuestion } from '../capacity/room.js';
import { readLockState } from './lock-read.js';
import { FleetQuestions, type FleetAnswers } from '../capacity/fleet-questions.js';
import { FRESH_CENSUS_MS } from '../capacity/fleet-census.js';
import {
  FLEET_RECHECK_MS,
  UNPARSABLE_HOLDER,
  WAVE_RECHECK_MS,
  type DaemonSetLockOptions,
  type LockState,
} from './lock-state.js';

export { HERD_SPREAD_MS, UNPARSABLE_HOLDER, type DaemonSetLockOptions } from './lock-state.js';

/** Thrown inside a retried write when the DaemonSet changed under us. */
const retryable = (err: unknown): boolean => isConflict(err) || isInvalid(err);

/** After an acquisition that gave up on conflicts, the next try comes this long later (jittered ±50%). */
export const CONTENDED_RETRY_MS = 2_000;

/** After an acquisition refused because the fleet could not be read, the next try (jittered ±50%). */
const ERROR_RETRY_MS = 30_000;

export class DaemonSetLock implements Lock {
  private readonly holders: LockHolders;
  private readonly reasons: LockReasons;
  private readonly leases = new LeaseObserver();
  private readonly view: LockView;
  private readonly slotWait: SlotWait;
  /** The DaemonSet as last read, written or watched: where waitForChange starts from. */
  private watched: V1DaemonSet | undefined;
  /** Our group as the last acquisition gave it: a waiter wakes only for a slot its group may take. */
  private group: string | undefined;
  private readonly fleet: FleetQuestions;
  /** The wait for the unavailable nodes that fill the slots, with its back-off (readiness-wait.ts). */
  private readonly readiness: ReadinessWait;

  constructor(private readonly o: DaemonSetLockOptions) {
    this.view = new LockView(o, this.leases);
    this.holders = new LockHolders(o);
    this.reasons = new LockReasons(o, this.leases, this.holders);
    this.slotWait = new SlotWait(o, this.waited(), this.view);
    this.fleet = new FleetQuestions(o, this.holders);
    this.readiness = new ReadinessWait(o, FLEET_RECHECK_MS);
  }

  async acquire(metadata: LockMetadata, signal?: AbortSignal, proof?: SlotProof): Promise<AcquireResult> {
    let outcome: AcquireResult | undefined;
    let attempt = 0;
    try {
      await this.write(signal, async (state) => {
        // each attempt judges the fleet from a read of its moment (FRESH_CENSUS_MS; the resourceVersion
        // guards the lock's entries, not the Nodes): after a lost write, it reads again
        const reuse = attempt++ === 0 ? FRESH_CENSUS_MS : 0;
        this.o.census?.forget(reuse);
        this.o.wave?.census.forget(reuse);
        const decision = await this.decideAcquire(state, metadata, signal, proof);
        outcome = decision.result;
        return decision.entries;
      });
    } catch (err) {
      if (!retryable(err)) throw err;
      // our turn (or first come) was lost to other writers, not refused: try again soon, before
      // the turn lapses, instead of waiting for a change that our own turn will not make
      const reason = `lock still contended after ${this.o.attempts ?? 8} attempts: ${statusMessage(err)}`;
      this.o.log.warn('lock contended', { node: this.o.nodeId, reason });
      return { acquired: false, holders: [], reason, wait: { for: 'contended' } };
    }
    if (outcome === undefined) throw new Error('lock acquire decided nothing');
    if (outcome.acquired) {
      this.readiness.reset();
      this.o.log.info('lock acquired', { node: this.o.nodeId, holder: outcome.holder.nodeID });
    }
    return outcome;
  }

  async wouldAcquire(
    signal?: AbortSignal,
    as?: Pick<LockMetadata, 'group' | 'controlPlane' | 'wave'>,
  ): Promise<AcquireResult> {
    const metadata: LockMetadata = { unschedulable: false, ...as };
    const decision = await this.decideAcquire(await this.read(signal), metadata, signal);
    return decision.result;
  }

  async holding(signal?: AbortSignal): Promise<LockHolder | undefined> {
    const state = await this.read(signal);
    const ours = this.view.live(state.entries).find((e) => e.nodeID === this.o.nodeId);
    return ours === undefined ? undefined : toHolder(ours);
  }

  async renew(signal?: AbortSignal): Promise<boolean> {
    let held = false;
    await this.write(signal, (state) => {
      const live = this.view.live(state.entries);
      const index = live.findIndex((e) => e.nodeID === this.o.nodeId);
      const ours = live[index];
      held = ours !== undefined && state.malformed === undefined;
      if (ours === undefined || !held) return Promise.resolve(undefined);
      const renewed = newEntry(this.o.nodeId, toHolder(ours).metadata, this.o.clock.now(), this.o.ttlMs);
      live[index] = { ...renewed, metadata: ours.metadata };
      return Promise.resolve(live);
    });
    return held;
  }

  async release(signal?: AbortSignal): Promise<void> {
    const wrote = await this.write(signal, (state) => {
      const live = this.view.live(state.entries);
      if (state.malformed !== undefined || !live.some((e) => e.nodeID === this.o.nodeId)) {
        return Promise.resolve(undefined);
      }
      return Promise.resolve(live.filter((e) => e.nodeID !== this.o.nodeId));
    });
    if (wrote) this.o.log.info('lock released', { node: this.o.nodeId });
  }

  /**
   * As the last refusal said (`how`): for this node's turn annotation to change (the coordinated
   * queue), a short back-off (contended), an error retry, or until the lock shows a slot this node
   * could take (SlotWait.forChange, slot-wait.ts); a refusal from the fleet beyond the lock within
   * FLEET_RECHECK_MS.
   */
  async waitForChange(
    timeoutMs: number,
    signal?: AbortSignal,
    how: LockWait = { for: 'slot' },
  ): Promise<void> {
    const jitter = (ms: number): number => ms * (0.5 + (this.o.random ?? Math.random)());
    const recheckMs = how.soon === true ? WAVE_RECHECK_MS : FLEET_RECHECK_MS;
    const within = how.recheck === true ? Math.min(timeoutMs, jitter(recheckMs)) : timeoutMs;
    const pause = { contended: CONTENDED_RETRY_MS, retry: ERROR_RETRY_MS, turn: 0, slot: 0 }[how.for];
    if (pause > 0) {
      await this.o.clock.sleep(Math.min(within, jitter(pause)), signal);
      return;
    }
    await this.readiness.around(how.readiness ?? [], signal, (until) =>
      this.waitForTurnOrSlot(within, how, until),
    );
  }

  /** For this node's turn to change (the coordinated queue), or for a slot it could take. */
  private async waitForTurnOrSlot(within: number, how: LockWait, signal?: AbortSignal): Promise<void> {
    const turns = this.o.turns;
    if (turns !== undefined && how.for === 'turn') {
      const stop = signal ?? new AbortController().signal;
      if (await turns.waitForTurn(within, stop)) return;
    }
    return this.slotWait.forChange(within, signal);
  }

  /** The queue's verdict for a new acquisition (undefined: no queue, or a slot we prove). */
  private async turnVerdict(signal?: AbortSignal, proof?: SlotProof): Promise<TurnVerdict | undefined> {
    const turns = this.o.turns;
    if (proof !== undefined || turns === undefined) return undefined;
    const verdict = await turns.verdict(signal);
    if (verdict.kind === 'first-come')
      this.o.log.debug('no coordinator: first come', { node: this.o.nodeId, reason: verdict.reason });
    return verdict;
  }

  /** What the wait for a slot reads of this lock. */
  private waited(): WaitedLock {
    return {
      lastSeen: async (signal) => this.watched ?? (await this.fetch(signal)),
      see: (ds) => {
        const before = this.watched?.metadata?.annotations?.[this.o.annotation];
        this.watched = ds;
        return ds.metadata?.annotations?.[this.o.annotation] !== before;
      },
      current: () => this.current(),
      stateOf: (ds) => this.stateOf(ds),
      group: () => this.group,
    };
  }

  /** The lock as last seen (read, written or watched), judged now. */
  private current(): LockState {
    return this.stateOf(this.watched);
  }

  /**
   * Answers that need no look at the cluster beyond the lock: unparsable, ours (proven by our cycle),
   * or no room for anyone by the lock's own claim (a manual lock, more slots than it or we allow).
   */
  private settledWithoutWrite(
    state: LockState,
    group: string | undefined,
    proof: SlotProof | undefined,
  ): AcquireResult | undefined {
    if (state.malformed !== undefined && !this.view.malformedExpired(state)) {
      const reason = this.reasons.unparsable(state.malformed);
      this.o.log.warn('lock annotation unparsable', { node: this.o.nodeId, reason });
      return { acquired: false, holders: [UNPARSABLE_HOLDER], reason };
    }
    const live = this.view.live(state.entries);
    const ours = live.find((e) => e.nodeID === this.o.nodeId);
    if (ours !== undefined && proof?.inCycle === true) return { acquired: true, holder: toHolder(ours) };
    // the slots themselves are counted once deleted holders and the nodes in a cycle are known
    const claim = roomFor(this.question(state, live, group));
    return claim.room || claim.why === 'full' || claim.why === 'group-full'
      ? undefined
      : this.refusal(claim, state, live);
  }

  /**
   * The room question for this lock (RoomQuestion: one rule with the wait for a slot), its budget
   * resolved for the fleet `state` shows, and for this node's group as `groupSlots` says (the floor
   * of a percentage when not asked), with its members by label when read.
   */
  private question(
    state: LockState,
    live: readonly LockEntry[],
    group: string | undefined,
    { groupSlots, groupMembers: members }: Pick<FleetAnswers, 'groupSlots' | 'groupMembers'> = {},
  ): RoomQuestion<LockEntry> {
    const { nodeId } = this.o;
    // a share not counted yet: its floor, 1 (the waiter's question; the acquisition counts)
    const slots = groupSlots ?? groupSlotsOf(this.o, undefined);
    const label = this.o.groups?.label;
    const groups =
      label === undefined || slots === undefined
        ? undefined
        : { label, concurrency: slots, ...(members === undefined ? {} : { members }) };
    const concurrency = this.view.slots(state);
    return { live, nodeId, declared: state.declared, group, concurrency, groups };
  }

  /** No room, in words an operator can act on (LockReasons.refusal). */
  private refusal(room: NoRoom<LockEntry>, state: LockState, live: readonly LockEntry[]): Refusal {
    return this.reasons.refusal(room, { declared: state.declared, live, slots: this.view.slots(state) });
  }

  private async decideAcquire(
    state: LockState,
    metadata: LockMetadata,
    signal?: AbortSignal,
    proof?: SlotProof,
  ): Promise<{ result: AcquireResult; entries: LockEntry[] | undefined }> {
    const group = metadata.group;
    if (group !== undefined) this.group = group;
    const settled = this.settledWithoutWrite(state, group, proof);
    if (settled !== undefined) return { result: settled, entries: undefined };
    // Our own entry, unproven by a cycle of ours, is judged as if we asked for the slot now.
    const unproven = state.entries.some((e) => e.nodeID === this.o.nodeId);
    const slots = this.view.slots(state);
    let live = this.view.live(state.entries).filter((e) => e.nodeID !== this.o.nodeId);
    // asked even when there is no room: a refused node with a live coordinator waits for its turn
    const turn = await this.turnVerdict(signal, proof);
    const waits = turn?.kind === 'wait';
    // a full lock's holders are looked up (a deleted Node's slot is reclaimed) only by a node that
    // could take the slot: a waiter whose turn has not come takes none whatever they are (issue 42:
    // up to --concurrency GETs per waiter's pass)
    if (allTaken(live.length, slots) && !waits) live = await this.holders.withoutDeleted(live, signal);
    const around = await this.fleet
      .around({ live, slots, waits, metadata, state }, signal)
      .catch((err: unknown) => {
        if (signal?.aborted === true) throw err;
        return this.unknownFleet(err);
      });
    const refused =
      'acquired' in around
        ? around
        : (this.noRoom(state, { live, ...around }, group, turn) ?? waitForTurn(turn));
    if (refused !== undefined) return this.refuse(refused, unproven ? live : undefined);
    const entry = newEntry(this.o.nodeId, metadata, this.o.clock.now(), this.o.ttlMs);
    return { result: { acquired: true, holder: toHolder(entry) }, entries: [...live, entry] };
  }

  /** The refusal when every slot, or every slot of our group, is taken; undefined when there is room. */
  private noRoom(
    state: LockState,
    taken: { live: readonly LockEntry[]; inCycle: readonly NodeInCycle[]; fleet: FleetAnswers },
    group: string | undefined,
    turn: TurnVerdict | undefined,
  ): AcquireResult | undefined {
    const { groupSlots, groupMembers, ...answers } = taken.fleet;
    const room = roomFor({
      ...this.question(state, taken.live, group, { groupSlots, groupMembers }),
      inCycle: taken.inCycle,
      ...answers,
    });
    if (room.room) return undefined;
    return { ...this.refusal(room, state, taken.live), ...waitOf(room, turn) };
  }

  /**
   * No slot when the fleet's gates could not be judged (a read of the Nodes failed): unknown is not
   * healthy (DESIGN §12). The node asks again after an error retry.
   */
  private unknownFleet(err: unknown): Refusal {
    const reason = `cannot judge the fleet's capacity, so no slot is taken: ${statusMessage(err)}`;
    this.o.log.warn('fleet census failed', { node: this.o.nodeId, reason });
    return { acquired: false, holders: [], reason, gate: 'fleet-census', wait: { for: 'retry' } };
  }

  /** No slot; an entry naming us that no cycle of ours proves and no room allows goes (`rest` kept). */
  private refuse(
    result: AcquireResult,
    rest: LockEntry[] | undefined,
  ): { result: AcquireResult; entries: LockEntry[] | undefined } {
    if (rest === undefined || result.acquired) return { result, entries: undefined };
    const reason = `${result.reason}; the entry naming this node, not proven by a cycle of its own, is removed`;
    this.o.log.warn('unproven lock entry removed', { node: this.o.nodeId, reason: result.reason });
    return { result: { ...result, reason }, entries: rest };
  }

  /**
   * Read, decide, write guarded by resourceVersion; on 409/422 read again (bounded, jittered).
   * `decide` returns the live slots to store, or undefined for "no write". Expired slots are never
   * passed to it, so every write prunes them.
   */
  private async write(
    signal: AbortSignal | undefined,
    decide: (state: LockState) => Promise<LockEntry[] | undefined>,
  ): Promise<boolean> {
    return retry(
      async () => {
        const state = await this.read(signal);
        const entries = await decide(state);
        if (entries === undefined) return false;
        const text = this.format(entries, this.view.slots(state));
        if (text === state.text) return false;
        const ds = await this.o.kube.mergePatchDaemonSet(
          this.o.namespace,
          this.o.name,
          {
            metadata: {
              resourceVersion: state.resourceVersion,
              annotations: { [this.o.annotation]: text ?? null },
            },
          },
          signal,
        );
        this.remember(ds);
        return true;
      },
      {
        attempts: this.o.attempts ?? 8,
        baseMs: 50,
        maxMs: 2000,
        retryOn: retryable,
        clock: this.o.clock,
        random: this.o.random,
        signal,
        onRetry: (err, attempt, delayMs) => {
          this.o.log.debug('lock write conflict, retrying', { attempt, delayMs, error: statusMessage(err) });
        },
      },
    );
  }

  /**
   * kured's form for our concurrency; undefined (delete the annotation) for an empty single lock. A
   * percentage is always the multi form, its maxOwners the number it resolves to now (`slots`).
   */
  private format(entries: readonly LockEntry[], slots: number): string | undefined {
    if (multiForm(this.o, slots)) return formatMulti(slots, entries);
    const [only, ...rest] = entries;
    if (only === undefined) return undefined;
    // more entries than --concurrency 1 allows (a forged lock we leave as it is, less our own slot)
    return rest.length === 0 ? formatSingle(only) : formatMulti(slots, entries);
  }

  private remember(ds: V1DaemonSet): void {
    this.watched = ds;
    this.stateOf(ds);
  }

  private async read(signal?: AbortSignal): Promise<LockState> {
    return this.stateOf(await this.fetch(signal));
  }

  /** GETs the DaemonSet (and remembers it). */
  private async fetch(signal?: AbortSignal): Promise<V1DaemonSet> {
    const ds = await this.o.kube.getDaemonSet(this.o.namespace, this.o.name, signal);
    this.remember(ds);
    return ds;
  }

  /** What the DaemonSet tells about the lock; every holder seen is a sighting for its lease. */
  private stateOf(ds: V1DaemonSet | undefined): LockState {
    const now = this.view.nowMs();
    return readLockState(ds, this.o.annotation, (key, text) => {
      this.leases.observe(key, text, now);
    });
  }
}
