// What an acquisition asks of the fleet beyond the lock's own entries, and only when the answer can
// change it: the unavailable nodes that take slots (--count-unavailable), the size of this node's
// group (--group-concurrency N%), and for a control-plane node the rest of the control plane (one
// at a time) and the workers it lets go first (--control-plane-last). A node that could not take a
// slot anyway (every slot held, or not its turn) asks none of it, except a control-plane node, which
// reads the census to say why it waits (from the coordinator's Lease, already read for the turn).
import { CONTROL_PLANE_LABEL } from '../node/role.js';
import { resolveBudget } from './budget.js';
import type { FleetHealth, GroupHealth } from './fleet-health.js';
import type { LockEntry } from './kured-lock-format.js';
import type { LockHolders } from './lock-holders.js';
import type { LockMetadata } from './lock.js';
import type { DaemonSetLockOptions } from './lock-state.js';
import type { TurnVerdict } from './lock.js';
import type { ControlPlaneQuestion, NodeInCycle, Unavailable } from './room.js';

/** The acquisition as it stands when it asks. */
export interface FleetAsk {
  /** The other live slots. */
  live: readonly LockEntry[];
  /** Nodes in a cycle without a slot. */
  inCycle: readonly NodeInCycle[];
  /** This node's group under --group-concurrency; undefined without. */
  group: string | undefined;
  /** This node is a control-plane node. */
  controlPlane: boolean;
  /** It could take a slot now by the lock's entries and the queue. */
  goes: boolean;
  /** The coordinator gave it its turn (the coordinator has judged the order: workers first). */
  turn: boolean;
  /** The nodes the DaemonSet runs on (LockState.matching), when known. */
  matching?: number;
}

/** The answers, for the room question. */
export interface FleetAnswers {
  unavailable?: Unavailable;
  controlPlane?: ControlPlaneQuestion;
  /** --group-concurrency resolved for this node's group; undefined without groups. */
  groupSlots?: number;
}

/** A census entry "n3 not ready": its node. */
function nameOf(entry: string): string {
  return entry.split(' ')[0] ?? entry;
}

/** The unavailable nodes of `health` that take slots of this acquisition (those holding or cycling left out). */
function unavailableOf(health: FleetHealth, ask: FleetAsk, nodeId: string): Unavailable {
  const skip = new Set([nodeId, ...ask.live.map((e) => e.nodeID), ...ask.inCycle.map((n) => n.name)]);
  const named = (g: GroupHealth, group: string): NodeInCycle[] =>
    g.unhealthy.map((s) => ({ name: nameOf(s), group }));
  const groups = health.groups;
  const nodes =
    groups === undefined
      ? named(health, '')
      : Object.entries(groups).flatMap(([group, g]) => named(g, group));
  const mine = ask.group === undefined ? undefined : groups?.[ask.group];
  return {
    nodes: nodes.filter((n) => !skip.has(n.name)),
    more: Math.max(0, health.count - nodes.length),
    moreInGroup: mine === undefined ? 0 : Math.max(0, mine.count - mine.unhealthy.length),
  };
}

/**
 * The workers the control plane lets go first: those the census names, and the agents that have not
 * said yet whether their node needs a reboot (fewer statuses than nodes the DaemonSet runs on: at
 * start-up, an agent that needs a reboot writes its first status only at its first lock attempt).
 */
export function workersAhead(
  health: FleetHealth,
  matching: number | undefined,
): { count: number; names: string[] } {
  const named = health.workersAhead ?? { count: 0, names: [] };
  const silent =
    matching === undefined || health.reported === undefined ? 0 : Math.max(0, matching - health.reported);
  if (silent === 0) return named;
  return {
    count: named.count + silent,
    names: [...named.names, `${silent} node(s) whose agent has not reported yet`],
  };
}

export class FleetQuestions {
  constructor(
    private readonly o: DaemonSetLockOptions,
    private readonly holders: LockHolders,
  ) {}

  /**
   * What counts against an acquisition beyond the lock's entries: the nodes in a cycle without a
   * slot and the fleet's answers. Not this node's turn: no slot whatever the room, so the nodes in a
   * cycle are not listed (a label-selected list still costs the API server every Node: only the
   * head of the queue pays it).
   */
  async around(
    at: {
      live: readonly LockEntry[];
      slots: number;
      turn: TurnVerdict | undefined;
      metadata: LockMetadata;
      matching: number | undefined;
    },
    signal?: AbortSignal,
  ): Promise<{ inCycle: NodeInCycle[]; fleet: FleetAnswers }> {
    const { live, slots, turn, metadata } = at;
    const goes = live.length < slots && turn?.kind !== 'wait';
    const inCycle = goes ? await this.holders.inCycleWithoutSlot(live, signal) : [];
    const ask: FleetAsk = {
      live,
      inCycle,
      group: metadata.group,
      controlPlane: metadata.controlPlane === true,
      goes,
      turn: turn?.kind === 'turn',
      ...(at.matching === undefined ? {} : { matching: at.matching }),
    };
    return { inCycle, fleet: await this.answer(ask, signal) };
  }

  private get groupPercent(): number {
    return this.o.groups?.percent ?? 0;
  }

  /** Does this acquisition need the census? */
  private needsCensus(ask: FleetAsk): boolean {
    const budget = ask.goes && (this.o.countUnavailable === true || this.groupPercent > 0);
    return budget || (ask.controlPlane && this.o.controlPlaneLast === true && !ask.turn);
  }

  async answer(ask: FleetAsk, signal?: AbortSignal): Promise<FleetAnswers> {
    const census = this.o.census;
    const health = census !== undefined && this.needsCensus(ask) ? await census.read(signal) : undefined;
    return {
      ...(health !== undefined && ask.goes && this.o.countUnavailable === true
        ? { unavailable: unavailableOf(health, ask, this.o.nodeId) }
        : {}),
      ...(ask.controlPlane ? { controlPlane: await this.controlPlane(ask, health, signal) } : {}),
      ...this.groupSlots(ask, health),
    };
  }

  /** --group-concurrency for this node's group: the number, or the share of the group's nodes. */
  private groupSlots(ask: FleetAsk, health: FleetHealth | undefined): { groupSlots?: number } {
    const groups = this.o.groups;
    if (groups === undefined || ask.group === undefined) return {};
    const size = health?.groups === undefined ? undefined : (health.groups[ask.group]?.total ?? 0);
    return { groupSlots: resolveBudget({ count: groups.concurrency, percent: this.groupPercent }, size) };
  }

  /** The rest of the control plane (listed only for a node that could go now) and the workers ahead. */
  private async controlPlane(
    ask: FleetAsk,
    health: FleetHealth | undefined,
    signal?: AbortSignal,
  ): Promise<ControlPlaneQuestion> {
    const peers = ask.goes ? await this.peers(signal) : [];
    const judged = this.o.controlPlaneLast === true && !ask.turn && health !== undefined;
    return { peers, workersAhead: judged ? workersAhead(health, ask.matching) : undefined };
  }

  /** The other control-plane nodes: one list by label (a handful of Nodes). */
  private async peers(signal?: AbortSignal): Promise<string[]> {
    const nodes = await this.o.kube.listNodes({ labelSelector: CONTROL_PLANE_LABEL }, signal);
    return nodes.map((n) => n.metadata?.name ?? '').filter((n) => n !== '' && n !== this.o.nodeId);
  }
}
