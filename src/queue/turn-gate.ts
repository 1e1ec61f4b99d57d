// The agent's side of the coordinated queue (src/coordinator): may this node take a free slot now,
// and the wait for its turn. A waiting node follows only its own Node for the coordinator's turn
// annotation (the agent's own view of it, subscribed to while it follows; else a watch of one object), so a freed slot wakes one node, not every waiter, and nobody
// lists the fleet. With no live coordinator (not installed, or its Lease not renewed) the queue
// falls back to first come, first served: a reboot must not wait for an optional advisor.
import type { Clock } from '../clock/clock.js';
import type { Followed } from '../kube/followed.js';
import type { Kube, V1Node } from '../kube/kube.js';
import { nodeListWatch } from '../kube/list-watch.js';
import { Reflector, latest } from '../kube/reflector.js';
import type { Logger } from '../log/logger.js';
import { fleetGate } from '../capacity/gates.js';
import type { TurnGate, TurnVerdict } from '../lock/lock.js';
import type { CoordinatorLease, CoordinatorState } from './coordinator-lease.js';
import { TURN_ANNOTATION, parseLapsedTurn, parseTurn, type Turn } from './turn.js';

/**
 * The wait's reason when this node's turn lapsed (the coordinator records it in the turn annotation:
 * LapsedTurn): this agent was slow, or its writes lost. Each lapse words it anew (the turn's time),
 * so the agent writes its status again: the coordinator, which sent the lapsed node to the back of
 * the queue, takes that write as the sign of life that gives the node its place in need order back.
 */
function lapsedTurnReason(turn: Turn, holder: string): string {
  return `waiting for its turn again: the one given at ${turn.since} by ${turn.by} lapsed before this node took its slot; the coordinator (${holder}) queues it in need order again`;
}

/**
 * While a node waits for its turn it reads the coordinator's Lease again every recheckMs: never more
 * often than the Lease's duration, and spread so that the whole fleet reads it about once a second
 * (N waiters, each every N seconds), so that the cost per hand-off does not grow with the fleet. A
 * coordinator that dies with a standby is replaced within a lease duration and the standby's turns
 * wake the waiters; this bounds the wait when no replica is left (the Deployment deleted, or every
 * replica failing): within 2 x max(lease, N s), or the wait's own timeout (--period) when sooner.
 */
const RECHECK_PER_NODE_MS = 1_000;

/**
 * The recheck while the coordinator has not published the fleet's size (it publishes its health only
 * once it sees the fleet): 5 minutes, so that 5,000 waiters that queued during its start-up read the
 * Lease 17 times a second at most, not 167.
 */
export const UNKNOWN_FLEET_RECHECK_MS = 5 * 60_000;

/**
 * The least recheck whatever the Lease says (issue 55): its duration and the advised fleet come from
 * whoever holds the coordinator's token, and they must not make a waiter read the Lease more than
 * once per RECHECK_MIN_MS. Nor can they make it wait longer than its own bounds: the trusted duration
 * is at most MAX_TRUSTED_LEASE_MS, the advised fleet at most 5,000 nodes (coordinator-lease.ts), and
 * the wait itself ends at the agent's --period. A ceiling below the fleet's own pace would cost more
 * reads than it saves: at 1,000 waiters, 5 minutes would be 3.3 reads a second instead of 1.
 */
const RECHECK_MIN_MS = 10_000;

/** The recheck for a fleet of `nodes` (undefined: not published yet), never under RECHECK_MIN_MS. */
export function recheckMs(leaseDurationMs: number, nodes: number | undefined): number {
  const wanted =
    nodes === undefined
      ? Math.max(leaseDurationMs, UNKNOWN_FLEET_RECHECK_MS)
      : Math.max(leaseDurationMs, nodes * RECHECK_PER_NODE_MS);
  return Math.max(RECHECK_MIN_MS, wanted);
}

/**
 * The wait for a turn, in words: with the coordinator's word on what holds every waiter back now
 * (its advice), else its rule. The advice's gate is shown as the coordinator's word in the reason
 * only: never as this node's own blocker in kured_ts_blocked, where a forged `max-failures` would
 * fire the wave-halted alert with no halt on the DaemonSet (issue 55). The node's own judgement at
 * its slot names its own gates.
 */
function waitingForTurn(holder: string, held: { gate?: string; reason: string } | undefined): TurnVerdict {
  if (held === undefined)
    return {
      kind: 'wait',
      reason: `waiting for its turn: the coordinator (${holder}) gives each freed slot to the waiting node whose reboot has been needed longest`,
    };
  const gate = fleetGate(held.gate);
  const word = gate === undefined ? '' : ` (its gate: ${gate})`;
  return {
    kind: 'wait',
    reason: `waiting for its turn: the coordinator (${holder}) gives no turn now${word}: ${held.reason}`,
  };
}

/** The agent's own view of its Node (OwnViews.node.followed): what the wait subscribes to. */
export type OwnNodeView = Pick<Followed<V1Node>, 'get' | 'subscribe' | 'following'>;

export interface NodeTurnGateOptions {
  kube: Kube;
  /**
   * The agent's own view of its Node: while it follows, the wait for a turn subscribes to it (no
   * watch of its own); when it stops, the wait watches the Node itself. Default none: it watches.
   */
  ownNode?: OwnNodeView;
  nodeId: string;
  coordinator: CoordinatorLease;
  clock: Clock;
  log: Logger;
  random: () => number;
  /**
   * The staleness bound of the wait's watch of this Node (WATCH_SILENCE_MS): given up when silent this
   * long, the Node read again (from the agent's own view: no request while it follows). Default none.
   */
  silenceMs?: number;
}

/** Read through a call so that the compiler does not narrow it across awaits. */
function aborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

export class NodeTurnGate implements TurnGate {
  /** This node as the last verdict read it, when a coordinator was live; consumed by the wait. */
  private waitingFrom:
    { node: V1Node; turn: string | undefined; recheckMs: number; held: string | undefined } | undefined;

  constructor(private readonly o: NodeTurnGateOptions) {}

  async verdict(signal?: AbortSignal): Promise<TurnVerdict> {
    this.waitingFrom = undefined;
    const coordinator = await this.o.coordinator.read(signal);
    if (!coordinator.live) return { kind: 'first-come', reason: coordinator.reason };
    const node = await this.o.kube.getNode(this.o.nodeId, signal);
    const text = node.metadata?.annotations?.[TURN_ANNOTATION];
    const turn = parseTurn(text);
    this.waitingFrom = {
      node,
      turn: text,
      recheckMs: recheckMs(coordinator.durationMs, coordinator.advice?.nodes),
      held: coordinator.advice?.held?.reason,
    };
    if (turn !== undefined) return { kind: 'turn', by: turn.by };
    const lapsed = parseLapsedTurn(text);
    if (lapsed !== undefined)
      return { kind: 'wait', reason: lapsedTurnReason(lapsed.turn, coordinator.holder) };
    return waitingForTurn(coordinator.holder, coordinator.advice?.held);
  }

  async waitForTurn(timeoutMs: number, signal: AbortSignal): Promise<boolean> {
    const from = this.waitingFrom;
    this.waitingFrom = undefined;
    if (from === undefined) return false;
    const stop = new AbortController();
    const both = AbortSignal.any([signal, stop.signal]);
    const ended = { timeout: false };
    try {
      await Promise.race([
        this.o.clock.sleep(timeoutMs, both).then(
          () => (ended.timeout = true),
          () => undefined,
        ),
        this.follow(from, timeoutMs, both),
        this.untilCoordinatorChanges(from, both),
      ]);
    } finally {
      stop.abort();
    }
    signal.throwIfAborted();
    // nothing changed (no turn, the coordinator still there): a wait again starts from the same
    // verdict, so a waiter may wait again without a pass (issue 42: nothing new per waiter)
    if (ended.timeout) this.waitingFrom = from;
    return true;
  }

  /**
   * Reads the coordinator's Lease every recheckMs (jittered; the verdict's, then as each read tells)
   * and resolves once it is judged gone (released, deleted, or not renewed for its duration): the
   * waiter then goes first come instead of waiting out its whole timeout for a turn nobody will give.
   * A Lease that cannot be read is not judged gone. It resolves too when the coordinator says
   * something else of what holds every waiter back (its advice): the waiter's status then says it.
   */
  private async untilCoordinatorChanges(
    from: { recheckMs: number; held: string | undefined },
    signal: AbortSignal,
  ): Promise<void> {
    for (let everyMs = from.recheckMs; !signal.aborted;) {
      await this.o.clock.sleep(everyMs * (0.75 + 0.5 * this.o.random()), signal).catch(() => undefined);
      if (aborted(signal)) return;
      const state = await this.o.coordinator.read(signal).catch(() => undefined);
      const next = this.judgeWait(state, from.held);
      if (next === 'end') return;
      everyMs = next ?? everyMs;
    }
  }

  /**
   * A look at the coordinator while waiting: 'end' (gone, or it says something else of what holds
   * the waiters back), or the next recheck (its advised fleet's; undefined: as before).
   */
  private judgeWait(
    state: CoordinatorState | undefined,
    held: string | undefined,
  ): 'end' | number | undefined {
    if (state === undefined) return undefined;
    if (!state.live) {
      if (state.unread === true) return undefined;
      this.o.log.info('coordinator gone while waiting for a turn', {
        node: this.o.nodeId,
        reason: state.reason,
      });
      return 'end';
    }
    // the fleet's size as the coordinator advises it now, when it does (not a released Lease's)
    if (state.advice === undefined) return undefined;
    if (state.advice.held?.reason !== held) return 'end';
    return recheckMs(state.durationMs, state.advice.nodes);
  }

  /**
   * Follows this node until its turn annotation changes or it is deleted: through the agent's own
   * view while it follows (no request), else with a reflector of its own (back-off, relist).
   */
  private async follow(
    from: { node: V1Node; turn: string | undefined },
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<void> {
    const own = this.o.ownNode;
    if (own !== undefined && (await this.subscribed(own, from.turn, signal)) !== 'unfollowed') return;
    const stop = new AbortController();
    const both = AbortSignal.any([signal, stop.signal]);
    // one watch per wait: the server would otherwise end it every 5-10 minutes
    const timeoutSeconds = Math.max(60, Math.ceil(timeoutMs / 1000));
    const reflector = new Reflector(nodeListWatch(this.o.kube, this.o.nodeId, { timeoutSeconds }), this.o);
    const seen = latest<V1Node>((node) => {
      if (node === undefined || node.metadata?.annotations?.[TURN_ANNOTATION] !== from.turn) stop.abort();
    });
    const resourceVersion = from.node.metadata?.resourceVersion ?? '';
    await reflector.run(seen, both, { from: { items: [from.node], resourceVersion } });
  }

  /**
   * Waits on the agent's own view of this Node until its turn annotation is no longer `turn`, the
   * Node is gone, or `signal` aborts ('ended'); 'unfollowed' at once, or as soon as, the view does not
   * follow the Node (the caller watches it itself then). What the view took in between the verdict's
   * read and now is judged first. A view can stop following without a change to tell (its watch
   * hangs, and only its staleness bound says so): it is looked at again every half silence bound.
   */
  private subscribed(
    own: OwnNodeView,
    turn: string | undefined,
    signal: AbortSignal,
  ): Promise<'ended' | 'unfollowed'> {
    const name = this.o.nodeId;
    const judge = (): 'ended' | 'unfollowed' | undefined => {
      if (signal.aborted) return 'ended';
      if (!own.following) return 'unfollowed';
      const node = own.get(name);
      if (node === undefined) return 'unfollowed';
      return node.metadata?.annotations?.[TURN_ANNOTATION] === turn ? undefined : 'ended';
    };
    const now = judge();
    if (now !== undefined) return Promise.resolve(now);
    const looks = new AbortController();
    return new Promise((resolve) => {
      const end = (how: 'ended' | 'unfollowed'): void => {
        looks.abort();
        unsubscribe();
        signal.removeEventListener('abort', aborted);
        resolve(how);
      };
      const aborted = (): void => {
        end('ended');
      };
      signal.addEventListener('abort', aborted, { once: true });
      const unsubscribe = own.subscribe((change) => {
        // a Node deleted from the view: gone for the wait too (it reads it again)
        const how = change.type === 'DELETED' ? 'ended' : judge();
        if (how !== undefined) end(how);
      });
      void this.lookAgain(judge, end, looks.signal);
    });
  }

  /** Every half silence bound (none without one), `judge` asked again; its answer ends the wait. */
  private async lookAgain(
    judge: () => 'ended' | 'unfollowed' | undefined,
    end: (how: 'ended' | 'unfollowed') => void,
    signal: AbortSignal,
  ): Promise<void> {
    const everyMs = (this.o.silenceMs ?? 0) / 2;
    if (everyMs <= 0) return;
    while (!aborted(signal)) {
      await this.o.clock.sleep(everyMs, signal).catch(() => undefined);
      if (aborted(signal)) return;
      const how = judge();
      if (how !== undefined) end(how);
    }
  }
}
