// What `kured-ts check` reports (one item per thing the agent judges, and the decision it would
// take), and the report as text: one line per item, then the decision.

import { formatDrainPlan, type DrainPlanItem } from './check-drain.js';

/**
 * What one item says: `ok`, `blocks` (holds the reboot back), `no-reboot` (the sentinel says none
 * is needed), `error` (the sentinel failed: the agent treats it as no reboot), `skipped`, `warn`
 * (does not hold the reboot back, but something the operator should change).
 */
type CheckVerdict = 'ok' | 'blocks' | 'no-reboot' | 'error' | 'skipped' | 'warn';

/** One line of the evaluation. */
export interface CheckItem {
  /** 'sentinel', 'agent', 'window', a blocker's name, 'node', 'lock'. */
  name: string;
  verdict: CheckVerdict;
  detail: string;
  /** The fleet gate that holds the node back (the lock item), as kured_ts_blocked names it. */
  gate?: string;
}

/** The decision the agent would take, in its own outcome words. */
export type CheckDecisionKind =
  | 'idle'
  | 'sentinel-error'
  | 'outside-window'
  | 'blocked'
  | 'awaiting-approval'
  /** The agent reported that its own admission policy denies it: a configuration error. */
  | 'misconfigured'
  | 'waiting-for-lock'
  | 'would-reboot'
  | 'in-progress';

export interface CheckReport {
  node: string;
  /** Whose configuration the judgement used (the deployed agent's, the command line's). */
  configuration?: string;
  items: CheckItem[];
  /** What the drain would do with each pod of the node, in its order, and why. */
  drain: DrainPlanItem[];
  decision: { kind: CheckDecisionKind; reason: string };
}

const VERDICT_LABEL: Record<CheckVerdict, string> = {
  ok: 'ok',
  blocks: 'BLOCKS',
  'no-reboot': 'no reboot',
  error: 'ERROR',
  skipped: 'skipped',
  warn: 'WARNING',
};

/** The report in lines: one per item ("BLOCKS" where it holds the reboot back), then the decision. */
export function formatCheck(report: CheckReport): string[] {
  const width = Math.max(...report.items.map((i) => i.name.length));
  return [
    `node ${report.node}`,
    ...(report.configuration === undefined ? [] : [`configuration: ${report.configuration}`]),
    ...report.items.map(
      (i) =>
        `  ${i.name.padEnd(width)}  ${VERDICT_LABEL[i.verdict].padEnd(9)}  ${i.gate === undefined ? '' : `[${i.gate}] `}${i.detail}`,
    ),
    ...formatDrainPlan(report.drain),
    `decision: ${report.decision.kind}: ${report.decision.reason}`,
  ];
}
