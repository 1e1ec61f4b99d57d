// What `kured-ts cleanup` takes off a node once kured-ts is uninstalled: every label and annotation
// under kured-ts.dev/, and the marks its records name as its own (the autoscaler annotations it
// added, the load-balancer label and karpenter.sh/do-not-repair of a cycle). Nothing else: the
// PreferNoSchedule taint's default key is kured's too, and an admin's annotation of the same name
// (another value than ours) stays.
//
// A node in a cycle (its record or label stands) is the agent's to finish: it is left whole unless
// the operator says to end the cycles, and then it is uncordoned only where the agent would uncordon
// it (our-cordon.ts: the record says the cordon was ours, nobody took it over since, the node is not
// paused). A quarantined node whose cordon was ours stays cordoned: the quarantine said why, and the
// operator who reads that reason uncordons it. Every node cleaned and left cordoned is named, with
// what its cordon is, since nothing of ours on it says so any more.
import { unprotect } from './autoscaler.js';
import { unmark } from './cycle-marks.js';
import { CYCLE_ANNOTATION, CYCLE_LABEL, parseCycle } from './cycle.js';
import { NODE_PAUSE_ANNOTATION, type NodeState } from './node.js';
import { foreignCordon, ourCordon } from './our-cordon.js';
import { parseQuarantine, QUARANTINE_ANNOTATION, QUARANTINE_LABEL, quarantineCordon } from './quarantine.js';

/** The prefix of every label and annotation kured-ts writes on a node. */
const OUR_PREFIX = 'kured-ts.dev/';

export type CleanupNode = Pick<
  NodeState,
  'name' | 'labels' | 'annotations' | 'unschedulable' | 'unschedulableOwners'
>;

export type NodeCleanup =
  | { kind: 'nothing'; node: string }
  | { kind: 'in-cycle'; node: string; reason: string }
  | {
      kind: 'clean';
      node: string;
      labels: string[];
      annotations: string[];
      /** The cycle's cordon was ours (the record says so): the write uncordons the node. */
      uncordon: boolean;
      /** Why the node stays cordoned after the write, when it does. */
      leftCordoned?: string;
      /** The write ends a reboot cycle (--end-cycles). */
      endsCycle: boolean;
    };

/** The keys of `map` under our prefix, sorted: what cleanup removes of a node's or a DaemonSet's. */
export function ourKeys(map: Readonly<Record<string, string>>): string[] {
  return Object.keys(map)
    .filter((k) => k.startsWith(OUR_PREFIX))
    .sort();
}

/** A merge patch's removal of each of `keys`. */
export function removing(keys: readonly string[]): Record<string, null> {
  return Object.fromEntries(keys.map((k) => [k, null]));
}

function inCycle(node: CleanupNode): boolean {
  return node.labels[CYCLE_LABEL] !== undefined || node.annotations[CYCLE_ANNOTATION] !== undefined;
}

/** The cycle as its record says, for the refusal. */
function cycleWords(node: CleanupNode): string {
  const record = parseCycle(node.annotations[CYCLE_ANNOTATION]);
  if (record === undefined) return 'in a kured-ts reboot cycle (its record cannot be read)';
  const cordon = record.cordoned ? 'cordoned by kured-ts' : 'was cordoned before the cycle';
  return `in a kured-ts reboot cycle since ${record.started} (${cordon})`;
}

/** The cycle's marks of its own (the load-balancer label, do-not-repair), when the record reads. */
function cycleMarks(node: CleanupNode): { labels: string[]; annotations: string[]; cordoned: boolean } {
  const record = parseCycle(node.annotations[CYCLE_ANNOTATION]);
  if (record === undefined) return { labels: [], annotations: [], cordoned: false };
  const marks = unmark(node, record);
  return {
    labels: Object.keys(marks.labels),
    annotations: Object.keys(marks.annotations),
    cordoned: ourCordon(node, record),
  };
}

/** The quarantine that keeps an uncordon back, if any. */
function quarantineWords(node: CleanupNode): string | undefined {
  if (node.labels[QUARANTINE_LABEL] === undefined) return undefined;
  const record = parseQuarantine(node.annotations[QUARANTINE_ANNOTATION]);
  const kind = record?.kind ?? 'unknown';
  return `quarantined (${kind}${record?.since === undefined ? '' : ` since ${record.since}`}): uncordon it once you have checked it`;
}

/** Why a cleaned node stays cordoned, when no quarantine says so: whose its cordon is. */
function cordonWords(node: CleanupNode): string {
  if (foreignCordon(node)) return `cordoned by ${node.unschedulableOwners.join(', ')}, not by kured-ts`;
  if (node.annotations[NODE_PAUSE_ANNOTATION] === 'true')
    return `paused by an operator (${NODE_PAUSE_ANNOTATION})`;
  return 'cordoned, and no record of kured-ts says the cordon was its own: uncordon it once you have checked it';
}

/**
 * What cleanup writes on `node`: nothing of ours, a refusal (a cycle stands and `endCycles` is
 * false), or the keys to remove and whether the write uncordons.
 */
export function planNodeCleanup(node: CleanupNode, endCycles: boolean): NodeCleanup {
  if (inCycle(node) && !endCycles) return { kind: 'in-cycle', node: node.name, reason: cycleWords(node) };
  const marks = inCycle(node) ? cycleMarks(node) : { labels: [], annotations: [], cordoned: false };
  const protection = Object.keys(unprotect(node.annotations));
  const labels = [...new Set([...ourKeys(node.labels), ...marks.labels])].sort();
  const annotations = [
    ...new Set([...ourKeys(node.annotations), ...marks.annotations, ...protection]),
  ].sort();
  if (labels.length === 0 && annotations.length === 0) return { kind: 'nothing', node: node.name };
  return {
    kind: 'clean',
    node: node.name,
    labels,
    annotations,
    endsCycle: inCycle(node),
    ...cordonAfter(node, marks.cordoned),
  };
}

/** Whether the cleanup uncordons (`ours`: the cycle's cordon, as the agent judges it), or why not. */
function cordonAfter(node: CleanupNode, ours: boolean): { uncordon: boolean; leftCordoned?: string } {
  // a quarantine's cordon (--quarantine-cordon, or a cycle's kept for it) stays, with its reason
  const held = ours || quarantineCordon(node) ? quarantineWords(node) : undefined;
  const uncordon = ours && held === undefined;
  if (uncordon || !node.unschedulable) return { uncordon };
  return { uncordon, leftCordoned: held ?? cordonWords(node) };
}

/** The merge patch of a plan, guarded by the node's resourceVersion. */
export function cleanupPatch(plan: Extract<NodeCleanup, { kind: 'clean' }>, resourceVersion: string): object {
  return {
    metadata: { resourceVersion, labels: removing(plan.labels), annotations: removing(plan.annotations) },
    ...(plan.uncordon ? { spec: { unschedulable: null } } : {}),
  };
}
