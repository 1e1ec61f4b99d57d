// Why DaemonSetLock gives no slot, in words an operator can act on: who holds the lock and since
// when (as this reader first saw each entry), and the command that frees a lock no agent will free.
import { monotonicMs } from '../clock/clock.js';
import { budgetText } from '../config/budget.js';
import { QUARANTINE_LABEL } from '../node/quarantine.js';
import type { LockEntry } from './kured-lock-format.js';
import type { LeaseObserver } from './lease.js';
import type { FleetGate } from '../capacity/gates.js';
import type { Refusal } from './lock.js';
import { gateOf, isManualSlot, type NoRoom } from '../capacity/room.js';
import { describeWaveRoom } from '../capacity/wave-gate.js';
import type { LockHolders } from './lock-holders.js';
import { STALE_ENTRY_MS, type DaemonSetLockOptions } from './lock-state.js';

/** `{ gate }` when there is one. */
function gateIf(gate: FleetGate | undefined): { gate?: FleetGate } {
  return gate === undefined ? {} : { gate };
}

/** "1 other node", "2 other nodes". */
export function othersNodes(count: number): string {
  return `${count} other node${count === 1 ? '' : 's'}`;
}
/** The nodes in a cycle without a slot in the lock, which still count ('' when none). */
function missingSlots(inCycle: readonly string[]): string {
  if (inCycle.length === 0) return '';
  const one = inCycle.length === 1;
  return `; ${inCycle.join(', ')} ${one ? 'is' : 'are'} in a reboot cycle without a slot in the lock and still count${one ? 's' : ''}`;
}

/** The unavailable nodes that take slots, named and not ('' when none). */
function unavailableNodes(down: readonly string[], unnamed: number): string {
  if (down.length + unnamed === 0) return '';
  const more = unnamed > 0 ? `${down.length > 0 ? ' and ' : ''}${unnamed} more` : '';
  return `; ${down.join(', ')}${more} unavailable (not ready, unreachable or cordoned by someone else: --count-unavailable)`;
}

/** How the reason of a halted wave begins (--max-quarantined; the simulator tells a halt by it). */
export const HALT_REASON = 'halted';

/** Names shown in a cap's reason before "and N more". */
const SHOWN = 10;

/** `nodes`, the first SHOWN of them and how many more. */
function shown(nodes: readonly string[]): string {
  const more = nodes.length > SHOWN ? `, and ${nodes.length - SHOWN} more` : '';
  return `${nodes.slice(0, SHOWN).join(', ')}${more}`;
}

export class LockReasons {
  constructor(
    private readonly o: DaemonSetLockOptions,
    private readonly leases: LeaseObserver,
    private readonly holders: LockHolders,
  ) {}

  /** The operator command that removes lock entries of `kind` (docs/troubleshooting.md). */
  removal(kind: '--manual' | '--stale'): string {
    return `kured-ts unlock ${kind} -n ${this.o.namespace} --ds-name ${this.o.name}`;
  }

  /** When this reader first saw `entry` as it is (its wall time). */
  since(entry: LockEntry | undefined): string {
    const at = entry === undefined ? undefined : this.leases.since(entry.nodeID);
    const ago = at === undefined ? 0 : Math.max(0, monotonicMs(this.o.clock) - at);
    return new Date(this.o.clock.now().getTime() - ago).toISOString();
  }

  unparsable(malformed: string): string {
    return `lock annotation ${this.o.annotation} cannot be parsed (treated as held): ${malformed}; an operator removes it with ${this.removal('--stale')}`;
  }

  manual(entry: LockEntry): string {
    const who = entry.nodeID === '' ? 'an operator' : entry.nodeID;
    return `lock held by ${who} (a manual lock: every slot is held until it is removed) since ${this.since(entry)}; an operator removes it with ${this.removal('--manual')}`;
  }

  /** Why a lock naming more live entries than its maxOwners (`declared`) or our --concurrency gives no slot. */
  forged(declared: number, live: readonly LockEntry[], slots: number): string {
    const claims =
      declared < live.length ? `its maxOwners ${declared}` : `--concurrency ${this.concurrency(slots)}`;
    const names = live.map((e) => e.nodeID);
    return `lock names ${live.length} holders (${names.join(', ')}), more than ${claims} allows: forged, corrupt or written with another --concurrency; no new slot is taken until an operator repairs it (${this.removal('--stale')} removes the entries no node is using), since ${this.since(live[0])}`;
  }

  /** --concurrency as configured, with what a percentage resolves to now. */
  private concurrency(slots: number): string {
    return budgetText(this.o.concurrency, slots);
  }

  /** Every slot taken: by live entries, by nodes in a cycle without one, and by unavailable nodes. */
  full(
    room: {
      others: readonly LockEntry[];
      inCycle: readonly string[];
      unavailable?: { names: readonly string[]; more: number };
    },
    slots: number,
  ): Refusal {
    const { others: live, inCycle } = room;
    const down = room.unavailable?.names ?? [];
    const unnamed = room.unavailable?.more ?? 0;
    const holders = [...live.map((e) => e.nodeID), ...inCycle, ...down];
    const named = holders.length === 0 ? `${unnamed} unavailable nodes` : holders.join(', ');
    const reason = `all ${this.concurrency(slots)} lock slot(s) held by ${named}${missingSlots(inCycle)}${unavailableNodes(down, unnamed)}${this.notInCycle(live)}`;
    const gate = down.length + unnamed > 0 ? { gate: 'count-unavailable' as const } : {};
    return { acquired: false, holders, reason, ...gate };
  }

  /** More other nodes unhealthy than --max-unhealthy-nodes allows (`nodes`: "n3 not ready"). */
  unhealthy(max: number, nodes: readonly string[]): string {
    return `${othersNodes(nodes.length)} unhealthy (max ${max}): ${shown(nodes)}`;
  }

  /** More other nodes quarantined than --max-quarantined allows: the wave halts. */
  quarantined(max: number, nodes: readonly string[]): string {
    return `${HALT_REASON}: ${othersNodes(nodes.length)} quarantined (--max-quarantined ${max}): ${shown(nodes)}; no new cycle starts anywhere until fewer are (an operator removes the label ${QUARANTINE_LABEL} from a node to release it)`;
  }

  /**
   * No room (roomFor's answer), in words an operator can act on, with the fleet gate that held the
   * node back when one did: one place turns every "why not" into words.
   */
  refusal(
    room: NoRoom<LockEntry>,
    lock: { declared: number; live: readonly LockEntry[]; slots: number },
  ): Refusal {
    const { declared, live, slots } = lock;
    switch (room.why) {
      case 'manual':
        return { acquired: false, holders: [room.entry.nodeID], reason: this.manual(room.entry) };
      case 'forged': {
        const reason = this.forged(declared, live, slots);
        this.o.log.warn('lock claims too many slots', { node: this.o.nodeId, reason });
        return { acquired: false, holders: live.map((e) => e.nodeID), reason };
      }
      case 'full':
        return this.full(room, slots);
      case 'group-full':
        return {
          acquired: false,
          holders: room.holders,
          reason: this.groupFull(room.group, room.holders),
          gate: 'group-concurrency',
        };
      case 'control-plane-busy':
        return {
          acquired: false,
          holders: [room.holder],
          reason: this.controlPlaneBusy(room.holder),
          gate: 'control-plane',
        };
      case 'workers-first':
        return {
          acquired: false,
          holders: [],
          reason: this.workersFirst(room.count, room.names),
          gate: 'control-plane-last',
        };
      case 'unhealthy':
        return {
          acquired: false,
          holders: [],
          reason: this.unhealthy(room.max, room.nodes),
          gate: 'max-unhealthy-nodes',
        };
      case 'quarantined':
        return {
          acquired: false,
          holders: [],
          reason: this.quarantined(room.max, room.nodes),
          gate: 'max-quarantined',
        };
      default:
        // the wave's own refusals (wave-gate.ts): describeWaveRoom takes only those, so a new
        // refusal without its case above does not compile
        return { acquired: false, holders: [], reason: describeWaveRoom(room), ...gateIf(gateOf(room)) };
    }
  }

  /** Another control-plane node holds a slot or is in its cycle. */
  controlPlaneBusy(holder: string): string {
    return `control plane one at a time: control-plane node ${holder} holds a slot or is in its reboot cycle`;
  }

  /** Workers still wait for a reboot (control plane last). */
  workersFirst(count: number, names: readonly string[]): string {
    const shown = names.slice(0, 5);
    const rest = count > shown.length ? ` and ${count - shown.length} more` : '';
    return `control plane last: ${count} worker(s) still waiting for a reboot or rebooting (${shown.join(', ')}${rest}); --control-plane-last`;
  }

  /** Every slot of `group` taken (--group-concurrency), by `holders`. */
  groupFull(group: string, holders: readonly string[]): string {
    const label = this.o.groups?.label ?? '';
    const name = group === '' ? `nodes without label ${label}` : `group ${label}=${group}`;
    const all = this.o.groups === undefined ? '0' : budgetText(this.o.groups.concurrency);
    return `${name}: all ${all} slot(s) of the group held by ${holders.join(', ')}`;
  }

  /**
   * The entries whose Node, when last looked up, was in no kured-ts cycle: kured's slots during a
   * migration, an acquisition under way, or entries written by hand or with a stolen token.
   */
  private notInCycle(live: readonly LockEntry[]): string {
    const now = monotonicMs(this.o.clock);
    const idle = live.filter((e) => {
      const standing = now - (this.leases.since(e.nodeID) ?? now);
      return !isManualSlot(e) && standing >= STALE_ENTRY_MS && this.holders.seenOutsideCycle(e.nodeID);
    });
    if (idle.length === 0) return '';
    const names = idle.map((e) => `${e.nodeID} (since ${this.since(e)})`).join(', ');
    return `; ${idle.length} ${idle.length === 1 ? 'entry names a node' : 'entries name nodes'} in no kured-ts cycle: ${names} (kured's, or written by hand or with a stolen token; ${this.removal('--stale')} removes those whose node is not cordoned)`;
  }
}
