// What one read of the lock's DaemonSet tells (LockState): the annotation parsed in kured's form,
// the slots the annotation allows, and the nodes the DaemonSet runs on (for --concurrency N%). Every
// holder seen, and an unparsable annotation, is a sighting for its lease (judged on the reader's clock).
import type { V1DaemonSet } from '../kube/kube.js';
import { nodesOfDaemonSet } from '../capacity/budget.js';
import { LockFormatError, entriesOf, parseLockAnnotation } from './kured-lock-format.js';
import { MALFORMED_KEY, declaredSlots, type LockState } from './lock-state.js';
import { WAVE_RESUMED_ANNOTATION, parseWaveResume } from '../node/wave.js';

/** What any read tells, whatever the annotation says. */
function baseOf(
  ds: V1DaemonSet,
  annotation: string,
): Pick<LockState, 'resourceVersion' | 'text' | 'matching' | 'resumed'> {
  const matching = nodesOfDaemonSet(ds);
  const meta = ds.metadata ?? {};
  const resumed = parseWaveResume(meta.annotations?.[WAVE_RESUMED_ANNOTATION]);
  return {
    resourceVersion: meta.resourceVersion ?? '',
    text: meta.annotations?.[annotation],
    ...(matching === undefined ? {} : { matching }),
    ...(resumed === undefined ? {} : { resumed }),
  };
}

/** `ds` as a lock state for `annotation`; `observe(key, text)` records each sighting. */
export function readLockState(
  ds: V1DaemonSet | undefined,
  annotation: string,
  observe: (key: string, text: string) => void,
): LockState {
  const none = Number.POSITIVE_INFINITY;
  if (ds === undefined) return { resourceVersion: '', text: undefined, entries: [], declared: none };
  const base = baseOf(ds, annotation);
  const text = base.text;
  if (text === undefined) return { ...base, entries: [], declared: none };
  try {
    const value = parseLockAnnotation(text);
    const entries = entriesOf(value);
    for (const e of entries) observe(e.nodeID, JSON.stringify(e));
    return { ...base, entries, declared: declaredSlots(value) };
  } catch (err) {
    if (!(err instanceof LockFormatError)) throw err;
    observe(MALFORMED_KEY, text);
    return { ...base, entries: [], malformed: err.message, declared: none };
  }
}
