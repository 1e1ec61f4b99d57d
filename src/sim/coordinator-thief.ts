// A thief with the coordinator's token (simulate --coordinator-thief, issue 41): from `fromMs` into
// the run and for `forMs`, every THIEF_EVERY_MS it replaces the coordinator's Lease with its own (held
// for 68 years, the older coordinators' "the fleet is all healthy", and advice under its own name
// that nothing holds the queue) and writes a turn on every node whose status says it waits for the
// lock. It writes straight into the fake API server, as the admission policy being off would let it
// (docs/security.md: the coordinator's policies refuse most of this); then it stops and leaves its
// Lease as it is, unrenewed. The real coordinator replicas keep running and the agents judge every
// capacity gate themselves (DESIGN §12): the observer's invariants must hold all along.
import type { FleetHealth, GroupHealth } from '../capacity/fleet-health.js';
import { STATUS_ANNOTATION, parseStatus } from '../node/status.js';
import {
  ADVICE_ANNOTATION,
  LEGACY_HEALTH_ANNOTATION,
  coordinatorLeaseName,
  formatAdvice,
} from '../queue/coordinator-lease.js';
import { TURN_ANNOTATION, formatTurn } from '../queue/turn.js';
import { DS_NAME, DS_NAMESPACE } from './cluster-spec.js';
import type { ObjectMeta } from './objects.js';
import type { OperatorContext } from './sim-operators.js';

/** How often the thief writes (virtual ms) unless told: as often as a leader renews. */
export const THIEF_EVERY_MS = 10_000;

/** The holder identity and turn author the thief writes. */
const THIEF_IDENTITY = 'thief';

/** The longest lease duration the API accepts: 68 years. */
const ENDLESS_SECONDS = 2_147_483_647;

/** When the thief acts: from this long after the start, for this long (virtual ms). */
export interface ThiefSettings {
  fromMs: number;
  forMs: number;
  /** How often it writes; default THIEF_EVERY_MS (a storm of turns: 1s). */
  everyMs?: number;
}

/** What the thief wrote, for the report. */
export interface ThiefStats extends ThiefSettings {
  /** Its Lease written (created or replaced). */
  leaseWrites: number;
  /** Turn annotations written on waiting nodes. */
  turnsWritten: number;
  /** Its time was up (false: the wave ended, or had not reached fromMs, before it was). */
  stopped: boolean;
}

interface SimLease {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec: {
    holderIdentity: string;
    leaseDurationSeconds: number;
    acquireTime: string;
    renewTime: string;
  };
}

/** kube's MicroTime: RFC 3339 with microseconds. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/Z$/, '000Z');
}

/** A group of `total` nodes, all healthy. */
function healthy(total: number): GroupHealth {
  return { total, count: 0, unhealthy: [] };
}

export class SimCoordinatorThief {
  private leaseWrites = 0;
  private turnsWritten = 0;
  private acquiredAtMs: number | undefined;
  private stopped = false;

  constructor(
    private readonly ctx: OperatorContext,
    private readonly settings: ThiefSettings,
  ) {}

  /** Schedules the thief's writes: every everyMs (THIEF_EVERY_MS) from fromMs while within forMs. */
  start(): void {
    const { time, startMs } = this.ctx;
    const from = startMs + this.settings.fromMs;
    const until = from + this.settings.forMs;
    const tick = (): void => {
      if (this.ctx.finished()) return;
      if (time.nowMs() >= until) {
        this.stopped = true;
        return;
      }
      this.writeLease();
      this.writeTurns();
      time.schedule(time.nowMs() + (this.settings.everyMs ?? THIEF_EVERY_MS), tick);
    };
    time.schedule(from, tick);
  }

  stats(): ThiefStats {
    const { leaseWrites, turnsWritten, stopped } = this;
    return { ...this.settings, leaseWrites, turnsWritten, stopped };
  }

  /** Its own Lease in the coordinator's place, unconditionally (no resourceVersion: no conflict). */
  private writeLease(): void {
    const { server, time } = this.ctx;
    const now = time.nowMs();
    this.acquiredAtMs ??= now;
    const name = coordinatorLeaseName(DS_NAME);
    const lease: SimLease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name, namespace: DS_NAMESPACE, annotations: this.annotations() },
      spec: {
        holderIdentity: THIEF_IDENTITY,
        leaseDurationSeconds: ENDLESS_SECONDS,
        acquireTime: microTime(this.acquiredAtMs),
        renewTime: microTime(now),
      },
    };
    if (server.get('leases', DS_NAMESPACE, name) === undefined) server.create('leases', lease);
    else server.update('leases', lease);
    this.leaseWrites++;
  }

  /** The older coordinators' "all healthy", every field filled, and its advice: nothing holds the queue. */
  private annotations(): Record<string, string> {
    const { cluster } = this.ctx;
    const total = cluster.names.length;
    const groups: Record<string, GroupHealth> = {};
    for (const name of cluster.names) {
      const zone = cluster.outages.zoneOf(name);
      if (zone !== undefined) groups[zone] = { ...healthy(0), total: (groups[zone]?.total ?? 0) + 1 };
    }
    const health: Required<FleetHealth> = {
      ...healthy(total),
      groups,
      workersAhead: { count: 0, names: [] },
      reported: total,
      quarantined: [],
      quarantinedCount: 0,
    };
    const advice = formatAdvice({ by: THIEF_IDENTITY, seq: this.leaseWrites + 1, nodes: total });
    return { [LEGACY_HEALTH_ANNOTATION]: JSON.stringify(health), [ADVICE_ANNOTATION]: advice };
  }

  /** A turn on every node whose status says waiting-for-lock. */
  private writeTurns(): void {
    const { cluster, server, time } = this.ctx;
    const turn = formatTurn({ since: new Date(time.nowMs()).toISOString(), by: THIEF_IDENTITY });
    for (const node of cluster.nodeList()) {
      const annotations = node.metadata.annotations ?? {};
      if (parseStatus(annotations[STATUS_ANNOTATION])?.phase !== 'waiting-for-lock') continue;
      const next = { ...annotations, [TURN_ANNOTATION]: turn };
      server.update('nodes', { ...node, metadata: { ...node.metadata, annotations: next } });
      this.turnsWritten++;
    }
  }
}
