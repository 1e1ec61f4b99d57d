// The wave's part of the agent's admission policy on the lock DaemonSet (src/lock/wave-store.ts): the
// id of the last wave started, set to an id and never removed; and the halt, a fleet pause that only
// `kured-ts/max-failures` may write, added where no pause stands, never changed or removed (an
// operator's pause, or a halt, is lifted by `kured-ts resume`). A stolen agent token can thus start
// a wave of its own naming or halt the fleet (hold reboots back), never lift a pause. On its own Node
// the agent writes its wave's labels only as a wave id and one of the states: no other word for the
// nodes counting them (src/capacity/wave-census.ts) to read.
import { WAVE_ANNOTATION, WAVE_ID, WAVE_LABEL, WAVE_STATES, WAVE_STATE_LABEL } from '../node/wave.js';
import { FLEET_PAUSE_ANNOTATION, HALT_BY } from '../pause/fleet-pause.js';

/** The node labels an agent writes on its own Node for its wave. */
export const WAVE_NODE_LABELS = [WAVE_LABEL, WAVE_STATE_LABEL];

/** The lock DaemonSet's annotations of the wave, as a suffix of the writable keys (`,a,b`). */
export const WAVE_WRITABLE = `,${WAVE_ANNOTATION},${FLEET_PAUSE_ANNOTATION}`;

/** A halt as the agent writes it (formatFleetPause of a FleetPause by HALT_BY): names, no quote, no backslash. */
const HALT_FORM = `^\\{"reason":"[^"\\\\]*","by":"${HALT_BY}","since":"[^"\\\\]*","wave":"${WAVE_ID.source.slice(1, -1)}","failed":\\[("[^"\\\\]*"(,"[^"\\\\]*")*)?\\]\\}$`;

/** Annotation `key` on `obj`: is it there, and its value (CEL). */
function annotationOf(obj: string, key: string): { present: string; value: string } {
  const present = `(has(${obj}.metadata.annotations) && '${key}' in ${obj}.metadata.annotations)`;
  return { present, value: `${obj}.metadata.annotations['${key}']` };
}

/** The validations, built with the policy's own `forbid` and `celString` (agent-policy.ts). */
export function waveAnnotationRules<V>(
  forbid: (expression: string, messageExpression: string) => V,
  celString: (text: string) => string,
): V[] {
  const [waveNow, waveBefore] = [
    annotationOf('object', WAVE_ANNOTATION),
    annotationOf('oldObject', WAVE_ANNOTATION),
  ];
  const [pauseNow, pauseBefore] = [
    annotationOf('object', FLEET_PAUSE_ANNOTATION),
    annotationOf('oldObject', FLEET_PAUSE_ANNOTATION),
  ];
  return [
    forbid(
      `(!${waveBefore.present} || ${waveNow.present}) && (!${waveNow.present} || (${waveBefore.present} && ${waveNow.value} == ${waveBefore.value}) || ${waveNow.value}.matches(${celString(WAVE_ID.source)}))`,
      `'the kured-ts agent may set ${WAVE_ANNOTATION} only to a wave id, and never remove it'`,
    ),
    forbid(
      `${pauseBefore.present} ? (${pauseNow.present} && ${pauseNow.value} == ${pauseBefore.value}) : (!${pauseNow.present} || ${pauseNow.value}.matches(${celString(HALT_FORM)}))`,
      `'the kured-ts agent may add ${FLEET_PAUSE_ANNOTATION} only as a halt of its wave (by ${HALT_BY}) where no pause stands, and never change or remove a pause'`,
    ),
  ];
}

/** The values the agent may write of each wave label on its Node (regular expressions). */
const WAVE_LABEL_VALUES: readonly [string, string][] = [
  [WAVE_LABEL, WAVE_ID.source],
  [WAVE_STATE_LABEL, `^(${WAVE_STATES.join('|')})$`],
];

/**
 * Node label `key`, when the agent sets or changes it, matches `pattern` (a value someone else left
 * on it may stay as it is), as the quarantine label's rule (agent-policy.ts).
 */
function labelValueOk(key: string, pattern: string, celString: (text: string) => string): string {
  const [now, before] = ['object.metadata.labels', 'oldObject.metadata.labels'];
  return [
    `!has(${now})`,
    `!('${key}' in ${now})`,
    `${now}['${key}'].matches(${celString(pattern)})`,
    `(has(${before}) && '${key}' in ${before} && ${before}['${key}'] == ${now}['${key}'])`,
  ].join(' || ');
}

/** The validations of the wave's labels on the agent's own Node, built as waveAnnotationRules are. */
export function waveLabelRules<V>(
  forbid: (expression: string, messageExpression: string) => V,
  celString: (text: string) => string,
): V[] {
  return [
    forbid(
      WAVE_LABEL_VALUES.map(([key, pattern]) => `(${labelValueOk(key, pattern, celString)})`).join(' && '),
      `'the kured-ts agent may set the label ${WAVE_LABEL} only to a wave id and ${WAVE_STATE_LABEL} only to ${WAVE_STATES.join(', ')} on node ' + object.metadata.name`,
    ),
  ];
}
