// Is a reboot needed: the one answer the agent's pass (Pass.sentinel) and `kured-ts check` take.
import { rebootRequestOf } from '../../node/reboot-request.js';
import type { SentinelVerdict } from '../../sentinel/sentinel.js';

/**
 * The need: an admin's reboot request on the node (`kured-ts reboot`) is one, whatever the sentinel
 * says; else the sentinel's answer. `sentinel` undefined: not read (check away from the node, without
 * --local): the steps are judged as if a reboot were needed.
 */
export function needOf(
  sentinel: SentinelVerdict | undefined,
  annotations: Readonly<Record<string, string>>,
): SentinelVerdict {
  if (rebootRequestOf(annotations) !== undefined) return { required: true };
  return sentinel ?? { required: true };
}
