// The most each node annotation the agent writes may hold (issue 55): every write of an agent goes
// to every watcher of Nodes in the cluster, on every change, so a compromised or buggy agent must not
// make them large. Chosen from what the agent writes (bench/RESULTS.md, "Issue 55"): each bound is
// several times the largest value a wave writes, so that no legitimate write meets it. The writer
// refuses a write over its bound (KubeNodeOps.write) and the chart's admission policy refuses it for
// the agent's token (src/admission/agent-policy.ts); the writers keep their values within it (the
// history drops its oldest entries, the quarantine names at most QUARANTINE_PODS_MAX pods).
import { CYCLE_ANNOTATION } from './cycle.js';
import { HISTORY_ANNOTATION, HISTORY_MAX_BYTES } from './history.js';
import { KURED_IN_PROGRESS_ANNOTATION, KURED_REBOOT_NEEDED_ANNOTATION } from './node.js';
import { PROTECTION_ANNOTATION } from './autoscaler.js';
import { QUARANTINE_ANNOTATION, QUARANTINE_MAX_BYTES } from './quarantine.js';
import { STATUS_ANNOTATION } from './status.js';

/** Bytes (UTF-8) per annotation the agent writes; those not named here are tiny ("true", a time). */
export const ANNOTATION_MAX_BYTES: Readonly<Record<string, number>> = {
  [STATUS_ANNOTATION]: 4096,
  [CYCLE_ANNOTATION]: 4096,
  [HISTORY_ANNOTATION]: HISTORY_MAX_BYTES,
  [QUARANTINE_ANNOTATION]: QUARANTINE_MAX_BYTES,
  [PROTECTION_ANNOTATION]: 1024,
  [KURED_IN_PROGRESS_ANNOTATION]: 256,
  [KURED_REBOOT_NEEDED_ANNOTATION]: 256,
};

/** Any other annotation the agent writes. */
export const OTHER_ANNOTATION_MAX_BYTES = 256;

/** The bound of annotation `key`. */
function annotationBound(key: string): number {
  return ANNOTATION_MAX_BYTES[key] ?? OTHER_ANNOTATION_MAX_BYTES;
}

/** Why these annotations (null: removed) exceed their bounds, naming the first; undefined: within. */
export function overBound(annotations: Readonly<Record<string, string | null>>): string | undefined {
  for (const [key, value] of Object.entries(annotations)) {
    if (value === null) continue;
    const bytes = Buffer.byteLength(value);
    const bound = annotationBound(key);
    if (bytes > bound) return `annotation ${key} of ${bytes} bytes is over its bound of ${bound} bytes`;
  }
  return undefined;
}
