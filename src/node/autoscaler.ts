// Autoscaler protection: while a node is in a reboot cycle, and for --settle-time after it ends, the
// node carries the annotations the cluster autoscaler and Karpenter honour, so that a drained node,
// which looks empty, is not removed (kured #1309, #707; Azure/AKS #1773; karpenter #3185).
//
// The agent adds each annotation only where it is absent, and records in PROTECTION_ANNOTATION the
// ones it added: at the end it removes exactly those (and only while they still say "true"), so an
// annotation an admin set stays. The record lives on the Node, so an agent restarted mid-cycle or
// mid-settle removes what its predecessor added. The record also says until when the settle lasts
// (RFC 3339, on this agent's clock: the same host wrote it).

/** cluster-autoscaler: never scale this node down while "true". */
export const CLUSTER_AUTOSCALER_ANNOTATION = 'cluster-autoscaler.kubernetes.io/scale-down-disabled';
/** Karpenter: never voluntarily disrupt (consolidate, drift) this node while "true". */
export const KARPENTER_ANNOTATION = 'karpenter.sh/do-not-disrupt';
/** The annotations that protect a node from autoscalers, each set to "true". */
export const AUTOSCALER_ANNOTATIONS: readonly string[] = [
  CLUSTER_AUTOSCALER_ANNOTATION,
  KARPENTER_ANNOTATION,
];
/** What the agent added, and until when the protection lasts after the cycle. */
export const PROTECTION_ANNOTATION = 'kured-ts.dev/autoscaler-protection';

/** The record in PROTECTION_ANNOTATION. */
export interface Protection {
  /** The autoscaler annotations this agent added (and removes at the end). */
  added: string[];
  /** RFC 3339 end of the settle period; absent while the node is in its cycle. */
  until?: string;
}

function formatProtection(p: Protection): string {
  return JSON.stringify(p.until === undefined ? { added: p.added } : { added: p.added, until: p.until });
}

/**
 * Reads the record. A value that cannot be read names nothing as ours (fail safe: no annotation is
 * removed on its word) and has no end (it is settled at once: the record goes, the annotations stay).
 */
export function parseProtection(raw: string | undefined): Protection | undefined {
  if (raw === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(raw);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      const v = value as Record<string, unknown>;
      const added = Array.isArray(v.added)
        ? v.added.filter((k): k is string => typeof k === 'string' && AUTOSCALER_ANNOTATIONS.includes(k))
        : [];
      const until = typeof v.until === 'string' && !Number.isNaN(Date.parse(v.until)) ? v.until : undefined;
      return until === undefined ? { added } : { added, until };
    }
  } catch {
    // unreadable: below
  }
  return { added: [], until: new Date(0).toISOString() };
}

type Annotations = Readonly<Record<string, string>>;

/**
 * The annotations that protect the node for a cycle: each autoscaler annotation that is absent, set
 * to "true", and the record naming them (with those a settle still pending had added: the node is in
 * a cycle again, so the settle ends without removing them). {} when there is nothing to add or record.
 */
export function protect(annotations: Annotations): Record<string, string> {
  const before = parseProtection(annotations[PROTECTION_ANNOTATION]);
  const ours = (before?.added ?? []).filter((k) => annotations[k] === 'true');
  const adding = AUTOSCALER_ANNOTATIONS.filter((k) => annotations[k] === undefined);
  // already protected for a cycle, or nothing to add and nothing of ours to record
  if (adding.length === 0 && (before === undefined || before.until === undefined)) return {};
  const change: Record<string, string> = Object.fromEntries(adding.map((k) => [k, 'true']));
  change[PROTECTION_ANNOTATION] = formatProtection({ added: [...new Set([...ours, ...adding])].sort() });
  return change;
}

/**
 * The end of a cycle: the settle period starts (the record gets its end), or with a settle of 0 the
 * protection goes at once. {} without a record.
 */
export function settleFrom(
  annotations: Annotations,
  now: Date,
  settleMs: number,
): Record<string, string | null> {
  const record = parseProtection(annotations[PROTECTION_ANNOTATION]);
  if (record === undefined) return {};
  if (settleMs <= 0) return unprotect(annotations);
  const until = new Date(now.getTime() + settleMs).toISOString();
  return { [PROTECTION_ANNOTATION]: formatProtection({ added: record.added, until }) };
}

/**
 * Removes the protection: the annotations the record names that still say "true" (someone who set
 * another value owns it now), and the record.
 */
export function unprotect(annotations: Annotations): Record<string, string | null> {
  const record = parseProtection(annotations[PROTECTION_ANNOTATION]);
  if (record === undefined) return {};
  const change: Record<string, string | null> = { [PROTECTION_ANNOTATION]: null };
  for (const key of record.added) if (annotations[key] === 'true') change[key] = null;
  return change;
}

/**
 * What the agent does about the protection outside a cycle, at `now`: nothing (no record, or the
 * settle goes on until `until`), start the settle (a record without an end outside a cycle: the cycle
 * record was removed by hand), or end it.
 */
export type SettleStep =
  | { step: 'none' }
  | { step: 'wait'; until: number }
  | { step: 'start'; change: Record<string, string | null> }
  | { step: 'end'; change: Record<string, string | null> };

export function settleStep(annotations: Annotations, now: Date, settleMs: number): SettleStep {
  const record = parseProtection(annotations[PROTECTION_ANNOTATION]);
  if (record === undefined) return { step: 'none' };
  if (record.until === undefined) return { step: 'start', change: settleFrom(annotations, now, settleMs) };
  const until = Date.parse(record.until);
  if (now.getTime() < until) return { step: 'wait', until };
  return { step: 'end', change: unprotect(annotations) };
}
