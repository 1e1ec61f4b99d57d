// Managed node auto-repair, and how long it lets a node stay NotReady. A planned reboot makes the node
// NotReady for as long as it takes to come back; where the provider's repair acts on a node NotReady
// for less than --post-reboot-timeout, a slow reboot can be "repaired" (the instance replaced) in the
// middle of it. Recognised by the node's spec.providerID (the cloud provider sets it); the thresholds
// are the providers' documented ones. karpenter.sh/do-not-repair (cycle-marks.ts) keeps Karpenter's
// own repair off; the managed ones below have no such annotation: check warns instead.
import { shortDuration } from '../text/duration.js';

/** One provider's repair: which nodes, after how long NotReady. */
interface RepairThreshold {
  /** spec.providerID prefix. */
  prefix: string;
  /** Who repairs. */
  repairer: string;
  /** A node NotReady for this long may be repaired. */
  thresholdMs: number;
}

const MINUTE = 60_000;

/** The providers whose repair threshold is known (README, "Node auto-repair"). */
const REPAIR_THRESHOLDS: readonly RepairThreshold[] = [
  { prefix: 'aws://', repairer: 'EKS node auto-repair', thresholdMs: 30 * MINUTE },
  { prefix: 'gce://', repairer: 'GKE node auto-repair', thresholdMs: 10 * MINUTE },
];

/** Would a reboot that takes up to --post-reboot-timeout risk a repair? With its reason. */
export type RepairRisk =
  | { risk: 'none'; reason: string }
  | { risk: 'unknown'; reason: string }
  | { risk: 'repair'; reason: string; threshold: RepairThreshold };

/** The risk for a node of `providerID` with --post-reboot-timeout `timeoutMs` (0 = none). */
export function repairRisk(providerID: string | undefined, timeoutMs: number): RepairRisk {
  const threshold = REPAIR_THRESHOLDS.find((t) => providerID?.startsWith(t.prefix) === true);
  if (threshold === undefined) {
    const id =
      providerID === undefined || providerID === ''
        ? 'no spec.providerID'
        : `providerID ${providerID.split('/')[0] ?? ''}//…`;
    return { risk: 'unknown', reason: `${id}: no known repair threshold` };
  }
  const limit = shortDuration(threshold.thresholdMs);
  if (timeoutMs > 0 && timeoutMs <= threshold.thresholdMs) {
    return {
      risk: 'none',
      reason: `--post-reboot-timeout ${shortDuration(timeoutMs)} is within ${threshold.repairer}'s ${limit} NotReady`,
    };
  }
  const timeout = timeoutMs > 0 ? shortDuration(timeoutMs) : '0 (no bound)';
  return {
    risk: 'repair',
    threshold,
    reason: `--post-reboot-timeout ${timeout} is longer than ${threshold.repairer}'s ${limit} NotReady: a slow reboot may be repaired (the node replaced) mid-cycle; set it to ${limit} or less`,
  };
}
