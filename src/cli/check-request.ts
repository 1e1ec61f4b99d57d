// What `kured-ts check` says of an admin's reboot request on the node (`kured-ts reboot`), as the
// agent judges it (Pass.sentinel, before-lock.ts bypassed).
import { bypassed } from '../agent/decision/before-lock.js';
import type { Blocker } from '../blockers/blocker.js';
import type { V1Node } from '../kube/kube.js';
import {
  describeRebootRequest,
  parseRebootRequest,
  REBOOT_REQUEST_ANNOTATION,
  rebootRequestOf,
} from '../node/reboot-request.js';

/** A line of `check` as this module reads and writes it (CheckItem). */
interface Item {
  name: string;
  verdict: string;
  detail: string;
}

/**
 * For the blockers: those an admin's --now request passes, where they would hold the reboot back, are
 * `skipped` (the agent does not ask them), saying so (the window's answer says it itself: to-slot.ts).
 */
export function passedByNow(
  node: V1Node,
  blockers: readonly Pick<Blocker, 'name'>[],
): <T extends Item>(items: T[]) => (T | (T & { verdict: 'skipped' }))[] {
  const request = rebootRequestOf(node.metadata?.annotations ?? {});
  const passed = new Set(blockers.filter((b) => bypassed(b, request)).map((b) => b.name));
  if (request?.now !== true) return (items) => items;
  return (items) =>
    items.map((i) =>
      i.verdict === 'blocks' && passed.has(i.name)
        ? {
            ...i,
            verdict: 'skipped' as const,
            detail: `${i.detail}; passed over: the reboot request says --now`,
          }
        : i,
    );
}

/** An admin's reboot request on the node: none, or one item saying it. */
export function evaluateRequest(node: V1Node): { name: string; verdict: 'ok' | 'error'; detail: string }[] {
  const parsed = parseRebootRequest(node.metadata?.annotations?.[REBOOT_REQUEST_ANNOTATION]);
  if (parsed === undefined) return [];
  if ('error' in parsed) {
    return [{ name: 'request', verdict: 'error', detail: `${parsed.error} (the agent ignores it)` }];
  }
  return [{ name: 'request', verdict: 'ok', detail: describeRebootRequest(parsed) }];
}
