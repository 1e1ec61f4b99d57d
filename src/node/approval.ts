// The approval of a node's reboot (`--require-approval`): an annotation written by `kured-ts approve`,
// read by the node's agent before it takes a lock slot, and removed when the reboot it approved is
// done. One approval is for one reboot.
import { errorText } from '../text/error-text.js';

export const APPROVAL_ANNOTATION = 'kured-ts.dev/approved';

/** The annotation's value. */
export interface Approval {
  /** Who approved (user@host, or what --by said). */
  by: string;
  /** RFC 3339 time of the approval. */
  at: string;
}

export type ApprovalVerdict = { approved: true; approval: Approval } | { approved: false; reason: string };

export function formatApproval(approval: Approval): string {
  return JSON.stringify({ by: approval.by, at: approval.at });
}

/** Reads the annotation; a value that is not ours to read is no approval (fail safe). */
export function parseApproval(raw: string | undefined): Approval | { error: string } | undefined {
  if (raw === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(raw);
    if (typeof value === 'object' && value !== null) {
      const v = value as Record<string, unknown>;
      const at = typeof v.at === 'string' ? v.at : '';
      if (at !== '' && !Number.isNaN(Date.parse(at))) return { by: typeof v.by === 'string' ? v.by : '', at };
    }
  } catch (err) {
    return { error: `unreadable approval ${raw.slice(0, 60)}: ${errorText(err)}` };
  }
  return { error: `unreadable approval ${raw.slice(0, 60)}: expected {"by":…,"at":"RFC 3339 time"}` };
}

/**
 * Is the node approved now? Not without the annotation, not when it cannot be read, not once it is
 * older than `ttlMs` (0 = approvals do not expire).
 */
function judgeApproval(raw: string | undefined, now: Date, ttlMs: number, node: string): ApprovalVerdict {
  const parsed = parseApproval(raw);
  const how = `run kured-ts approve ${node}`;
  if (parsed === undefined) return { approved: false, reason: `waiting for approval: ${how}` };
  if ('error' in parsed) return { approved: false, reason: `${parsed.error}; ${how}` };
  const age = now.getTime() - Date.parse(parsed.at);
  if (ttlMs > 0 && age >= ttlMs) {
    return {
      approved: false,
      reason: `approval by ${parsed.by || 'unknown'} at ${parsed.at} expired (--approval-ttl); ${how}`,
    };
  }
  return { approved: true, approval: parsed };
}

/**
 * The approval part of the pre-lock decision (BeforeLock.approval): judged from the node's
 * annotations under --require-approval, absent without it. The agent and `kured-ts check` both use it.
 */
export function approvalCheck(
  config: { requireApproval: boolean; approvalTtlMs: number },
  node: { name: string; annotations: Readonly<Record<string, string>> },
  now: Date,
): { approval?: ApprovalVerdict } {
  if (!config.requireApproval) return {};
  return {
    approval: judgeApproval(node.annotations[APPROVAL_ANNOTATION], now, config.approvalTtlMs, node.name),
  };
}
