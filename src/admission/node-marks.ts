// What the agent's node policy (agent-policy.ts) says of the marks the agent puts on its node for
// others, and removes again: the autoscaler protection (src/node/autoscaler.ts) and the cycle's marks
// (src/node/cycle-marks.ts). Each is added only where absent, as "true", with the record that owns
// it, and removed only where the record before the write owned it.
import { PROTECTION_ANNOTATION } from '../node/autoscaler.js';
import { CYCLE_ANNOTATION } from '../node/cycle.js';
import { MARK_VALUE } from '../node/cycle-marks.js';

/** Is annotation `key` on `obj` (CEL)? */
function hasAnnotation(obj: string, key: string): string {
  return `(has(${obj}.metadata.annotations) && '${key}' in ${obj}.metadata.annotations)`;
}

/**
 * An autoscaler annotation (src/node/autoscaler.ts) stays as it is, is added only where absent, as
 * "true" and named in the new protection record, or is removed only as "true" and named in the old
 * record: an admin's annotation is never changed or removed, a value other than "true" never written.
 */
export function autoscalerAnnotationOk(key: string): string {
  const now = `object.metadata.annotations['${key}']`;
  const before = `oldObject.metadata.annotations['${key}']`;
  const recorded = (obj: string): string =>
    `(${hasAnnotation(obj, PROTECTION_ANNOTATION)} && ${obj}.metadata.annotations['${PROTECTION_ANNOTATION}'].contains('"${key}"'))`;
  const [inNow, inBefore] = [hasAnnotation('object', key), hasAnnotation('oldObject', key)];
  return `(${inNow} && ${inBefore} ? ${now} == ${before} : ${inNow} ? ${now} == 'true' && ${recorded('object')} : ${inBefore} ? ${before} == 'true' && ${recorded('oldObject')} : true)`;
}

/**
 * A mark of the cycle (src/node/cycle-marks.ts: the load-balancer exclusion label, do-not-repair)
 * stays as it is, is added only where absent, as "true" and with the cycle record naming it
 * (`field` in it), or is removed only as "true" and named by the record before the write: someone
 * else's is never changed or removed.
 */
export function cycleMarkOk(map: 'labels' | 'annotations', key: string, field: string): string {
  const has = (obj: string): string => `(has(${obj}.metadata.${map}) && '${key}' in ${obj}.metadata.${map})`;
  const now = `object.metadata.${map}['${key}']`;
  const before = `oldObject.metadata.${map}['${key}']`;
  const recorded = (obj: string): string =>
    `(${hasAnnotation(obj, CYCLE_ANNOTATION)} && ${obj}.metadata.annotations['${CYCLE_ANNOTATION}'].contains('"${field}":'))`;
  return `(${has('object')} && ${has('oldObject')} ? ${now} == ${before} : ${has('object')} ? ${now} == '${MARK_VALUE}' && ${recorded('object')} : ${has('oldObject')} ? ${before} == '${MARK_VALUE}' && ${recorded('oldObject')} : true)`;
}
