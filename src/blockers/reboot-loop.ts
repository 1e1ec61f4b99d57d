// RebootLoopBlocker: a node quarantined reboot-loop (its need survived --max-reboots-per-need reboots,
// src/agent/decision/reboot-loop.ts) takes no slot until an operator removes the quarantine label or
// the need goes. Its own name, so that kured_ts_blocked{blocker="reboot-loop"} and its alert tell a
// reboot loop from an undrainable node (the quarantine blocker's).
import type { NodeOps } from '../node/node.js';
import { QUARANTINE_LABEL, REBOOT_LOOP_VALUE, judgeQuarantine } from '../node/quarantine.js';
import type { Blocker, Verdict } from './blocker.js';

export class RebootLoopBlocker implements Blocker {
  readonly name = 'reboot-loop';

  constructor(private readonly node: NodeOps) {}

  async check(signal?: AbortSignal): Promise<Verdict> {
    const state = await this.node.get(signal);
    if (state.labels[QUARANTINE_LABEL] !== REBOOT_LOOP_VALUE) return { blocked: false };
    // no pods and no retry enter a reboot loop's verdict
    const verdict = judgeQuarantine({ node: state, pods: [], now: new Date(0), retryMs: 0 });
    return { blocked: true, reason: verdict.reason };
  }
}
