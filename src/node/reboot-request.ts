// An admin's request to reboot one node (`kured-ts reboot NODE --reason TEXT [--now]`, kured #110):
// an annotation on the Node, written by the command and read by the node's agent as a reboot need
// beside its sentinel. `now` also lets the node pass the maintenance window and the blockers, never
// the lock, the PodDisruptionBudgets or the drain. The agent removes the request at the end of the
// cycle in which the node rebooted; `kured-ts reboot NODE --cancel` takes it back before.
import { errorText } from '../text/error-text.js';

export const REBOOT_REQUEST_ANNOTATION = 'kured-ts.dev/reboot-requested';

/** The annotation's value. */
export interface RebootRequest {
  /** Who asked: the user the API server authenticated (SelfSubjectReview), or a stand-in. */
  by: string;
  /** Why the identity is a stand-in (the review was refused or failed); absent when the server said. */
  byUnverified?: string;
  /** The admin's reason. */
  reason: string;
  /** RFC 3339 time of the request (the API server's clock). */
  at: string;
  /** Past the maintenance window and the blockers (not the lock, the PDBs, the health checks or the drain). */
  now: boolean;
}

export function formatRebootRequest(r: RebootRequest): string {
  return JSON.stringify({
    by: r.by,
    ...(r.byUnverified === undefined ? {} : { byUnverified: r.byUnverified }),
    reason: r.reason,
    at: r.at,
    now: r.now,
  });
}

/** Reads the annotation; a value we cannot read is no request (fail safe: no reboot on its word). */
export function parseRebootRequest(raw: string | undefined): RebootRequest | { error: string } | undefined {
  if (raw === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    return { error: `unreadable reboot request ${raw.slice(0, 60)}: ${errorText(err)}` };
  }
  const v = typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  if (typeof v.by !== 'string' || typeof v.reason !== 'string' || typeof v.at !== 'string') {
    return { error: `unreadable reboot request ${raw.slice(0, 60)}: expected {"by","reason","at","now"}` };
  }
  return {
    by: v.by,
    ...(typeof v.byUnverified === 'string' ? { byUnverified: v.byUnverified } : {}),
    reason: v.reason,
    at: v.at,
    now: v.now === true,
  };
}

/** The request on a node's annotations, if there is one that can be read. */
export function rebootRequestOf(annotations: Readonly<Record<string, string>>): RebootRequest | undefined {
  const parsed = parseRebootRequest(annotations[REBOOT_REQUEST_ANNOTATION]);
  return parsed === undefined || 'error' in parsed ? undefined : parsed;
}

/** The request in words, for reasons, Events and `kured-ts check`. */
export function describeRebootRequest(r: RebootRequest): string {
  const who = r.byUnverified === undefined ? r.by : `${r.by} (unverified: ${r.byUnverified})`;
  return `reboot requested by ${who} at ${r.at}${r.now ? ' (--now: past the window and the blockers)' : ''}: ${r.reason}`;
}
