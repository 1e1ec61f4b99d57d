// A FleetLock server's rules in memory (simulate --clusters shares one across its clusters; the
// tests serve it over loopback, test/fakes/fleetlock-server.ts): groups of a fixed number of slots,
// ids holding them, pre-reboot idempotent for a holder, steady-state releasing (idempotent too).
import { FLEETLOCK_HEADER, FLEETLOCK_PATHS } from '../fleetlock/fleetlock.js';
import type { HttpExchange } from '../fleetlock/http-fleetlock.js';

/** One request as the server reads it. */
export interface FleetLockRequest {
  method: string;
  path: string;
  /** Header names lower-cased. */
  headers: Record<string, string | undefined>;
  body: string;
}

/** The server's answer: status and JSON body text. */
export interface FleetLockReply {
  status: number;
  body: string;
}

/** What the server has done, for tests and the simulator's report. */
export interface FleetLockCounts {
  preReboot: number;
  steadyState: number;
  granted: number;
  refused: number;
}

export class FakeFleetLock {
  /** Holders by group. */
  private readonly holders = new Map<string, Set<string>>();
  readonly counts: FleetLockCounts = { preReboot: 0, steadyState: 0, granted: 0, refused: 0 };
  /** Called after each change of a group's holders (the simulator's observer checks them). */
  onChange: ((group: string, holders: readonly string[]) => void) | undefined;

  /** `slots` per group (every group alike). */
  constructor(readonly slots: number) {}

  /** The ids holding a slot of `group` now. */
  holding(group: string): string[] {
    return [...(this.holders.get(group) ?? [])];
  }

  /** Forgets every slot (a restart without persistent state). */
  reset(): void {
    this.holders.clear();
  }

  /** Answers one request by the protocol. */
  answer(request: FleetLockRequest): FleetLockReply {
    if (request.method !== 'POST') return error(405, 'method_not_allowed', `${request.method} not allowed`);
    if (request.headers[FLEETLOCK_HEADER] !== 'true') {
      return error(400, 'missing_header', `missing "${FLEETLOCK_HEADER}: true" header`);
    }
    const client = clientParams(request.body);
    if (client === undefined) return error(400, 'bad_request', 'malformed client_params');
    if (request.path === FLEETLOCK_PATHS.preReboot) return this.preReboot(client.id, client.group);
    if (request.path === FLEETLOCK_PATHS.steadyState) return this.steadyState(client.id, client.group);
    return error(404, 'not_found', `no such operation ${request.path}`);
  }

  /**
   * The server as an in-process HTTP exchange (no socket: the simulator's virtual time stays exact).
   * `idPrefix` qualifies each client's id (clusters whose nodes share names are distinct machines).
   */
  exchange(idPrefix = ''): HttpExchange {
    return (url, request) => {
      request.signal?.throwIfAborted();
      const reply = this.answer({
        method: request.method ?? 'GET',
        path: new URL(url).pathname,
        headers: Object.fromEntries(
          Object.entries(request.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
        ),
        body: idPrefix === '' ? (request.body ?? '') : qualified(request.body ?? '', idPrefix),
      });
      return Promise.resolve({ status: reply.status, text: reply.body });
    };
  }

  private preReboot(id: string, group: string): FleetLockReply {
    this.counts.preReboot++;
    const held = this.holders.get(group) ?? new Set<string>();
    if (!held.has(id) && held.size >= this.slots) {
      this.counts.refused++;
      return error(409, 'failed_lock', `all ${this.slots} slot(s) of group ${group} are held`);
    }
    if (!held.has(id)) {
      held.add(id);
      this.holders.set(group, held);
      this.onChange?.(group, [...held]);
    }
    this.counts.granted++;
    return { status: 200, body: '{}' };
  }

  private steadyState(id: string, group: string): FleetLockReply {
    this.counts.steadyState++;
    const held = this.holders.get(group);
    if (held?.delete(id) === true) this.onChange?.(group, [...held]);
    return { status: 200, body: '{}' };
  }
}

function error(status: number, kind: string, value: string): FleetLockReply {
  return { status, body: JSON.stringify({ kind, value }) };
}

function clientParams(body: string): { id: string; group: string } | undefined {
  try {
    const parsed = JSON.parse(body) as { client_params?: { id?: unknown; group?: unknown } };
    const { id, group } = parsed.client_params ?? {};
    if (typeof id !== 'string' || id === '' || typeof group !== 'string' || group === '') return undefined;
    return { id, group };
  } catch {
    return undefined;
  }
}

/** The body with its client id prefixed (an unreadable body is left for answer() to refuse). */
function qualified(body: string, prefix: string): string {
  const client = clientParams(body);
  return client === undefined
    ? body
    : JSON.stringify({ client_params: { ...client, id: `${prefix}${client.id}` } });
}
