// A blocker: something that can veto a reboot right now.
import { policyDenial, type PolicyDenial } from '../kube/errors.js';
import { errorText } from '../text/error-text.js';

/** A blocker's answer; `as`: the name kured_ts_blocked shows when not the blocker's own (a pause that is a wave's halt). */
export type Verdict = { blocked: false } | { blocked: true; reason: string; as?: string };

export interface Blocker {
  /** Short name, used as the `blocker` label of kured_ts_blocked. */
  readonly name: string;
  /**
   * Judged only for a node that would take a slot now (the PDB pre-flight): what it reads grows with
   * the cluster, and its answer matters only to the node about to drain. On patch night the waiters
   * then leave it to the head of the queue instead of each asking at every pass (DESIGN §13).
   */
  readonly atSlot?: boolean;
  /**
   * Judged again right before the reboot, after the drain and --reboot-delay (the control plane's
   * quorum): a block there aborts the cycle instead of rebooting.
   */
  readonly beforeReboot?: boolean;
  /** Judged only for a control-plane node (label node-role.kubernetes.io/control-plane): a worker skips it. */
  readonly controlPlaneOnly?: boolean;
  check(signal?: AbortSignal): Promise<Verdict>;
}

/** Does `blocker` judge a node of this role? */
export function judges(blocker: Pick<Blocker, 'controlPlaneOnly'>, controlPlane: boolean): boolean {
  return blocker.controlPlaneOnly !== true || controlPlane;
}

/**
 * The verdict of the first blocker that blocks, with its name; a blocker that fails blocks. `denied`:
 * it failed because an admission policy denied its request (the PDB pre-flight's dry run): the
 * caller judges whether that is a configuration error rather than a verdict on the reboot.
 */
export type NamedVerdict =
  { blocked: false } | { blocked: true; blocker: string; reason: string; denied?: PolicyDenial };

/** The first blocking verdict wins; a blocker that throws blocks with its error as reason. */
export async function firstBlock(blockers: readonly Blocker[], signal?: AbortSignal): Promise<NamedVerdict> {
  for (const blocker of blockers) {
    let verdict: Verdict;
    try {
      verdict = await blocker.check(signal);
    } catch (err: unknown) {
      const denied = policyDenial(err);
      const reason = `${blocker.name}: ${errorText(err)}`;
      return { blocked: true, blocker: blocker.name, reason, ...(denied === undefined ? {} : { denied }) };
    }
    if (verdict.blocked)
      return { blocked: true, blocker: verdict.as ?? blocker.name, reason: verdict.reason };
  }
  return { blocked: false };
}
