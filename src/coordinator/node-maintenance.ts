// Other operators' NodeMaintenance objects (issue 56): medik8s' node-maintenance-operator
// (nodemaintenance.medik8s.io, cluster-scoped: the node is out while the object exists) and NVIDIA's
// maintenance-operator (maintenance.nvidia.com, namespaced: out from the moment the operator has
// scheduled it, its Ready condition past Pending). The coordinator reads them and counts their nodes
// as unavailable, from before their operator's cordon. They are discovered, not configured: a kind
// whose resource the API server does not serve (404) costs one list every ABSENT_RECHECK_MS and
// logs nothing; a kind it serves is listed every EVERY_MS, bounded (MAX_ITEMS, MAX_BYTES). A read
// that fails keeps what the last one said (a maintenance does not end because a list failed).
import { monotonicMs, type Clock } from '../clock/clock.js';
import { isForbidden, isNotFound, statusMessage } from '../kube/errors.js';
import type { CollectionRef, Kube } from '../kube/kube.js';
import type { Logger } from '../log/logger.js';
import { TAKEN_OUT } from '../node/other-operators.js';

/** How often a served kind is listed. */
const EVERY_MS = 30_000;
/** How often a kind the server does not serve is tried again (a CRD installed later is found). */
const ABSENT_RECHECK_MS = 10 * 60_000;
/** The most objects and bytes one read takes in (a fleet's maintenances are a handful). */
const MAX_ITEMS = 500;
const MAX_BYTES = 4 * 1024 * 1024;

interface MaintenanceObject {
  spec?: { nodeName?: unknown };
  status?: { conditions?: { type?: string; reason?: string }[] };
}

/** A kind of NodeMaintenance: where it is listed, who it is, and whether an object takes its node out. */
interface MaintenanceKind {
  ref: CollectionRef;
  by: string;
  out: (o: MaintenanceObject) => boolean;
}

const KINDS: readonly MaintenanceKind[] = [
  {
    ref: { group: 'nodemaintenance.medik8s.io', version: 'v1beta1', resource: 'nodemaintenances' },
    by: 'a medik8s NodeMaintenance',
    out: () => true,
  },
  {
    ref: { group: 'maintenance.nvidia.com', version: 'v1alpha1', resource: 'nodemaintenances' },
    by: 'an NVIDIA maintenance-operator NodeMaintenance',
    // Pending: requested, not yet let through by its operator's own limit
    out: (o) => (o.status?.conditions?.find((c) => c.type === 'Ready')?.reason ?? 'Pending') !== 'Pending',
  },
];

/** The nodes each kind's objects take out, to why ("taken out by a medik8s NodeMaintenance"). */
export type Maintained = ReadonlyMap<string, string>;

/** The nodes `items` of `kind` take out, to why. */
function takenOut(kind: MaintenanceKind, items: readonly MaintenanceObject[]): Map<string, string> {
  const nodes = new Map<string, string>();
  for (const item of items) {
    const node = item.spec?.nodeName;
    if (typeof node === 'string' && node !== '' && kind.out(item)) nodes.set(node, `${TAKEN_OUT}${kind.by}`);
  }
  return nodes;
}

export interface NodeMaintenancesOptions {
  kube: Pick<Kube, 'listObjects'>;
  clock: Clock;
  log: Logger;
}

export class NodeMaintenances {
  /** What each served kind said last (by group). */
  private readonly seen = new Map<string, Map<string, string>>();
  /** When each kind is read next (monotonic: the clock's ms). */
  private readonly due = new Map<string, number>();
  private readonly forbiddenSaid = new Set<string>();

  constructor(private readonly o: NodeMaintenancesOptions) {}

  /** The first read of every kind (before the coordinator's first plan): what they say. */
  async first(signal?: AbortSignal): Promise<Maintained> {
    await this.poll(signal);
    return this.maintained();
  }

  /** Reads the kinds when due until `signal` aborts, calling `changed` when what they say changed. Never rejects. */
  async run(changed: (maintained: Maintained) => void, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      if (await this.poll(signal)) changed(this.maintained());
      await this.o.clock.sleep(EVERY_MS, signal).catch(() => undefined);
    }
  }

  /** Reads the kinds that are due; true when what they say changed. */
  async poll(signal?: AbortSignal): Promise<boolean> {
    const before = JSON.stringify([...this.maintained()]);
    const now = monotonicMs(this.o.clock);
    for (const kind of KINDS) {
      if ((this.due.get(kind.ref.group) ?? 0) > now) continue;
      this.due.set(kind.ref.group, now + (await this.read(kind, signal)));
    }
    return JSON.stringify([...this.maintained()]) !== before;
  }

  /** Every node some kind takes out, to why. */
  maintained(): Maintained {
    const all = new Map<string, string>();
    for (const nodes of this.seen.values()) for (const [n, why] of nodes) if (!all.has(n)) all.set(n, why);
    return all;
  }

  /** Reads one kind; the wait before the next read of it. */
  private async read(kind: MaintenanceKind, signal?: AbortSignal): Promise<number> {
    const list = this.o.kube.listObjects?.bind(this.o.kube);
    if (list === undefined) return ABSENT_RECHECK_MS;
    try {
      const page = await list(kind.ref, { limit: MAX_ITEMS, maxBytes: MAX_BYTES }, signal);
      this.seen.set(kind.ref.group, takenOut(kind, page.items as MaintenanceObject[]));
      return EVERY_MS;
    } catch (err) {
      if (!isNotFound(err)) {
        this.failed(kind, err);
        return EVERY_MS;
      }
      this.seen.delete(kind.ref.group);
      return ABSENT_RECHECK_MS;
    }
  }

  /** A read that failed keeps what the last one said; a 403 is said once, with what to grant. */
  private failed(kind: MaintenanceKind, err: unknown): void {
    const resource = `${kind.ref.resource}.${kind.ref.group}`;
    if (!isForbidden(err)) {
      this.o.log.debug('NodeMaintenance list failed; keeping what the last one said', {
        resource,
        error: statusMessage(err),
      });
    } else if (!this.forbiddenSaid.has(kind.ref.group)) {
      this.forbiddenSaid.add(kind.ref.group);
      this.o.log.warn("cannot read other operators' NodeMaintenance objects: grant list on them", {
        resource,
        error: statusMessage(err),
      });
    }
  }
}
