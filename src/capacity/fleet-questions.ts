// What an acquisition asks of the fleet beyond the lock's own entries, and only when the answer can
// change it: the nodes in a cycle without a slot, the unavailable nodes that take slots
// (--count-unavailable), the size of this node's group (--group-concurrency N%), the fleet-wide caps
// (--max-unhealthy-nodes, --max-quarantined), and for a control-plane node the rest of the control
// plane (one at a time) and the workers it lets go first (--control-plane-last). A node that could
// not take a slot anyway (every slot held, or not its turn) asks none of it: on patch night the
// waiters read nothing of the fleet (DESIGN §13), and the node that goes reads it itself, from the
// cluster's records (fleet-census.ts), never from the coordinator (DESIGN §12).
import { budgetsOf, capsOf, groupSlotsOf } from './budget.js';
import type { Kube } from '../kube/kube.js';
import type { WaveResume } from '../node/wave.js';
import { groupBefore, unacknowledged, type WaveFacts } from './wave-gate.js';
import type { Census, CensusAsk, FleetCensus } from './fleet-census.js';
import type { WaveAsk, WaveCount, WaveGateOptions } from './wave-census.js';
import {
  OTHER_GROUP,
  type ControlPlaneQuestion,
  type FleetCap,
  type NodeInCycle,
  type Slot,
  type Unavailable,
} from './room.js';
import type { CapacitySettings } from './settings.js';
import { listControlPlane } from '../node/role.js';

/** What the questions read with: the flags, this node, the API server and the censuses. */
export interface FleetQuestionOptions extends Omit<CapacitySettings, 'wave'> {
  nodeId: string;
  kube: Kube;
  /** Required when a gate that reads it is configured: an acquisition that needs it fails without it. */
  census?: FleetCensus;
  wave?: WaveGateOptions;
}

/** The nodes in a reboot cycle by their label (the lock's holders look them up: lock-holders.ts). */
export interface CycleLookup {
  /**
   * The nodes in a cycle whose slot is missing from `live`, each with its group, and every node in a
   * cycle by label (`labelled`).
   */
  inCycleWithoutSlot(
    live: readonly Slot[],
    group: string | undefined,
    signal?: AbortSignal,
  ): Promise<{ withoutSlot: NodeInCycle[]; labelled: ReadonlySet<string> }>;
}

/** The acquisition as it stands when it asks. */
export interface FleetAsk {
  /** The other live slots. */
  live: readonly Slot[];
  /** Nodes in a cycle without a slot. */
  inCycle: readonly NodeInCycle[];
  /**
   * Every node in a kured-ts cycle by its label, which only its own agent may write (the agent
   * policy): the nodes the health cap leaves out. A lock entry is no such proof: any agent may
   * write one naming any node.
   */
  cycling: ReadonlySet<string>;
  /** This node's group under --group-concurrency; undefined without. */
  group: string | undefined;
  /** This node is a control-plane node. */
  controlPlane: boolean;
  /** It could take a slot now by the lock's entries and the queue. */
  goes: boolean;
  /** The nodes the DaemonSet runs on (LockState.matching), when known. */
  matching?: number;
  /** This node's wave (LockMetadata.wave), when it is in one. */
  wave?: string;
  /** The failures `kured-ts resume` acknowledged (LockState.resumed). */
  resumed?: WaveResume;
}

/** The answers, for the room question. */
export interface FleetAnswers {
  unavailable?: Unavailable;
  controlPlane?: ControlPlaneQuestion;
  /** --group-concurrency resolved for this node's group; undefined without groups. */
  groupSlots?: number;
  /** The nodes of this node's group by their label, when read (for which slots count against it). */
  groupMembers?: ReadonlySet<string>;
  health?: FleetCap;
  quarantine?: FleetCap;
  /** The wave's gates, counted from the nodes' labels (wave-census.ts). */
  wave?: WaveFacts;
}

/**
 * The workers the control plane lets go first: those the census names, and the agents that have not
 * said yet whether their node needs a reboot (fewer statuses than nodes the DaemonSet runs on: at
 * start-up, an agent that needs a reboot writes its first status only at its first lock attempt).
 */
export function workersAhead(
  workers: { count: number; names: readonly string[]; reported: number | undefined },
  matching: number | undefined,
): { count: number; names: string[] } {
  const silent =
    matching === undefined || workers.reported === undefined ? 0 : Math.max(0, matching - workers.reported);
  const named = { count: workers.count, names: [...workers.names] };
  if (silent === 0) return named;
  return {
    count: named.count + silent,
    names: [...named.names, `${silent} node(s) whose agent has not reported yet`],
  };
}

/** Which of the wave's gates one acquisition asks: the slow start, the group order, the budget. */
interface WaveQuestion {
  steps: boolean;
  order?: NonNullable<WaveAsk['order']>;
  budget?: number;
}

function waveQuestion(o: FleetQuestionOptions & { wave: WaveGateOptions }, ask: FleetAsk): WaveQuestion {
  const group = ask.group ?? '';
  const w = o.wave;
  const budgets = budgetsOf(o, ask.matching);
  return {
    steps: budgets.slowStart,
    ...(w.order === undefined
      ? {}
      : { order: { label: w.order.label, group, before: groupBefore(w.order.order) } }),
    ...(budgets.failures === undefined ? {} : { budget: budgets.failures }),
  };
}

/** The wave's facts for roomFor from what the census counted (`ask.live`: the other slots). */
function waveFacts(
  w: WaveGateOptions,
  ask: FleetAsk & { wave: string },
  q: WaveQuestion,
  count: WaveCount,
): WaveFacts {
  // the other slots' holders have gone too, whatever their labels say yet
  const holders = ask.live.map((e) => e.nodeID);
  const steps = {
    start: w.start,
    growth: w.growth,
    soakMs: w.soakMs,
    entered: [...new Set([...count.entered, ...holders])].sort(),
    settled: count.settled,
  };
  return {
    wave: ask.wave,
    ...(q.steps ? { steps } : {}),
    ...(q.budget === undefined
      ? {}
      : { budget: { max: q.budget, failed: unacknowledged(count.failed, ask.wave, ask.resumed) } }),
    ...(count.order === undefined ? {} : { order: { group: q.order?.group ?? '', ...count.order } }),
  };
}

export class FleetQuestions {
  constructor(
    private readonly o: FleetQuestionOptions,
    private readonly holders: CycleLookup,
  ) {}

  /**
   * What counts against an acquisition beyond the lock's entries: the nodes in a cycle without a
   * slot and the fleet's answers. Not this node's turn: no slot whatever the room, so the nodes in a
   * cycle are not listed (a label-selected list still costs the API server every Node: only the
   * head of the queue pays it).
   */
  async around(
    at: {
      live: readonly Slot[];
      /** --concurrency resolved now (budgetsOf). */
      slots: number;
      /** The coordinator's turn is someone else's: this node waits whatever the room. */
      waits: boolean;
      /** This node's slot as it would record it: its group, control plane, wave. */
      metadata: { group?: string; controlPlane?: boolean; wave?: string };
      /** The lock's DaemonSet as read: the nodes it runs on, the failures `kured-ts resume` acknowledged. */
      state: { matching?: number | undefined; resumed?: WaveResume | undefined };
    },
    signal?: AbortSignal,
  ): Promise<{ inCycle: NodeInCycle[]; fleet: FleetAnswers }> {
    const { live, slots, waits, metadata } = at;
    const { matching, resumed } = at.state;
    const goes = live.length < slots && !waits;
    const cycle = goes
      ? await this.holders.inCycleWithoutSlot(live, metadata.group, signal)
      : { withoutSlot: [], labelled: new Set<string>() };
    const inCycle = cycle.withoutSlot;
    const ask: FleetAsk = {
      live,
      inCycle,
      cycling: cycle.labelled,
      group: metadata.group,
      controlPlane: metadata.controlPlane === true,
      goes,
      ...(matching === undefined ? {} : { matching }),
      ...(metadata.wave === undefined ? {} : { wave: metadata.wave }),
      ...(resumed === undefined ? {} : { resumed }),
    };
    return { inCycle, fleet: await this.answer(ask, signal) };
  }

  /** Does any gate that reads the census apply to a node that goes? */
  private get gated(): boolean {
    const o = this.o;
    return (
      o.countUnavailable === true ||
      o.groups !== undefined ||
      o.maxUnhealthy !== undefined ||
      o.maxQuarantined !== undefined
    );
  }

  /** What this acquisition asks of the census; undefined: nothing (it reads none). */
  private censusAsk(ask: FleetAsk): CensusAsk | undefined {
    if (!ask.goes) return undefined;
    const o = this.o;
    // judged by the node itself, turn or not: a forged turn must not send the control plane first
    const workers = ask.controlPlane && o.controlPlaneLast === true;
    if (!this.gated && !workers) return undefined;
    return {
      ...this.groupAsk(ask),
      ...(o.maxQuarantined === undefined ? {} : { quarantine: true }),
      ...(workers ? { workers: true } : {}),
      ...(ask.matching === undefined ? {} : { atLeast: ask.matching }),
    };
  }

  /**
   * This node's group: its members by their label decide which slots count against it (a lock
   * entry's recorded group is any agent's word), which unavailable nodes are in it, and its share.
   */
  private groupAsk(ask: FleetAsk): Pick<CensusAsk, 'group'> {
    return this.o.groups !== undefined && ask.group !== undefined ? { group: ask.group } : {};
  }

  async answer(ask: FleetAsk, signal?: AbortSignal): Promise<FleetAnswers> {
    const want = this.censusAsk(ask);
    const census = want === undefined ? undefined : await this.read(want, signal);
    const wave = await this.wave(ask, signal);
    return {
      ...(ask.controlPlane ? { controlPlane: await this.controlPlane(ask, census, signal) } : {}),
      ...this.groupSlots(ask, census),
      ...(census === undefined || !ask.goes ? {} : this.gates(census, ask)),
      ...(wave === undefined ? {} : { wave }),
    };
  }

  /**
   * The wave's gates for a node that goes, counted from the nodes' labels: the failure budget, the
   * group order, the slow start (only while a step can be smaller than the slots). undefined: none
   * configured, a node in no wave, or one that does not go.
   */
  private async wave(ask: FleetAsk, signal?: AbortSignal): Promise<WaveFacts | undefined> {
    const w = this.o.wave;
    if (w === undefined || ask.wave === undefined || !ask.goes) return undefined;
    const q = waveQuestion({ ...this.o, wave: w }, ask);
    if (!q.steps && q.order === undefined && q.budget === undefined) return undefined;
    const count = await w.census.read(
      {
        wave: ask.wave,
        steps: q.steps,
        failed: q.budget !== undefined,
        ...(q.order === undefined ? {} : { order: q.order }),
      },
      signal,
    );
    const others = ask.live.filter((e) => e.nodeID !== this.o.nodeId);
    return waveFacts(w, { ...ask, wave: ask.wave, live: others }, q, count);
  }

  private async read(want: CensusAsk, signal?: AbortSignal): Promise<Census> {
    const census = this.o.census;
    if (census === undefined)
      throw new Error(
        'the fleet census is needed (--count-unavailable, group shares, caps) but not configured',
      );
    return census.read(want, signal);
  }

  /** The unavailable nodes and the caps, from the census, for a node that goes. */
  private gates(census: Census, ask: FleetAsk): Pick<FleetAnswers, 'unavailable' | 'health' | 'quarantine'> {
    const { countUnavailable, nodeId } = this.o;
    const caps = capsOf(this.o, census.total);
    const down = this.unavailableOf(census, ask);
    const holds = new Set(ask.live.map((e) => e.nodeID));
    const why = new Map(census.unhealthy.map((u) => [u.name, u.why]));
    return {
      ...(countUnavailable === true ? { unavailable: { nodes: down, more: 0, moreInGroup: 0 } } : {}),
      ...(caps.maxUnhealthy === undefined
        ? {}
        : {
            health: {
              max: caps.maxUnhealthy,
              nodes: census.unhealthy
                // a node in its cycle is down for the reboot that holds its slot; one that only
                // labels itself in a cycle (its own token can) is judged by its readiness (issue 55)
                .filter((n) => n.name !== nodeId && !(ask.cycling.has(n.name) && holds.has(n.name)))
                .map((n) => `${n.name} ${why.get(n.name) ?? 'unhealthy'}`),
            },
          }),
      ...(caps.maxQuarantined === undefined
        ? {}
        : {
            quarantine: {
              max: caps.maxQuarantined,
              nodes: (census.quarantined ?? []).filter((n) => n !== nodeId),
            },
          }),
    };
  }

  /**
   * The unhealthy nodes of `census` that take slots of this acquisition: not this node, none
   * holding a slot or in a cycle (those count already), each with its group when the census knows it
   * to be this node's (OTHER_GROUP otherwise: it counts against the fleet, not this group).
   */
  private unavailableOf(census: Census, ask: FleetAsk): NodeInCycle[] {
    const skip = new Set([
      this.o.nodeId,
      ...ask.live.map((e) => e.nodeID),
      ...ask.inCycle.map((n) => n.name),
    ]);
    const group = census.group;
    return census.unhealthy
      .filter((n) => !skip.has(n.name))
      .map((n) => ({ name: n.name, group: group?.members.has(n.name) === true ? group.name : OTHER_GROUP }));
  }

  /**
   * --group-concurrency for this node's group: the number, or the share of the group's nodes; and
   * its members by label, when read.
   */
  private groupSlots(
    ask: FleetAsk,
    census: Census | undefined,
  ): Pick<FleetAnswers, 'groupSlots' | 'groupMembers'> {
    const members = census?.group?.members;
    const groupSlots = groupSlotsOf(this.o, members?.size);
    if (groupSlots === undefined || ask.group === undefined) return {};
    return {
      groupSlots,
      ...(members === undefined ? {} : { groupMembers: members }),
    };
  }

  /** The rest of the control plane (listed only for a node that could go now) and the workers ahead. */
  private async controlPlane(
    ask: FleetAsk,
    census: Census | undefined,
    signal?: AbortSignal,
  ): Promise<ControlPlaneQuestion> {
    const peers = ask.goes ? await this.peers(signal) : [];
    const workers = census?.workers;
    const judged = this.o.controlPlaneLast === true && workers !== undefined;
    return { peers, workersAhead: judged ? workersAhead(workers, ask.matching) : undefined };
  }

  /** The other control-plane nodes: one list by label (a handful of Nodes). */
  private async peers(signal?: AbortSignal): Promise<string[]> {
    const nodes = await listControlPlane((labelSelector) => this.o.kube.listNodes({ labelSelector }, signal));
    return nodes.map((n) => n.metadata?.name ?? '').filter((n) => n !== '' && n !== this.o.nodeId);
  }
}
