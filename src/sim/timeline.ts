// The wave as data: per node, what it was doing from when to when (the phases its agent wrote, and
// the time its host was down), and how many lock slots and hosts were taken over time. Drawn by
// timeline-svg.ts (`kured-ts simulate --timeline FILE.svg`).
import { blockedGroup } from './blocked-group.js';
import type { PhaseChange } from './observer.js';

/** What a bar shows. `down` is the host's own outage, drawn over its `rebooting` phase. */
type SpanKind =
  | 'pending'
  | 'outside-window'
  | 'blocked'
  | 'waiting-for-lock'
  | 'awaiting-approval'
  | 'draining'
  | 'rebooting'
  | 'down'
  | 'verifying'
  | 'failed';

/** One bar: a node in one phase (virtual ms since the start). */
export interface Span {
  node: string;
  kind: SpanKind;
  /** The phase with its reason group ("blocked: pdb"), as the report's blocked-time table names it. */
  label: string;
  fromMs: number;
  toMs: number;
}

/** A count over time: `count` from `atMs` until the next step. */
export interface Step {
  atMs: number;
  count: number;
}

export interface Timeline {
  /** Virtual ms from the start to the end of the run. */
  endMs: number;
  concurrency: number;
  /** Every node, in the order of the report. */
  nodes: string[];
  spans: Span[];
  /** Lock slots taken (the lock's holders and nodes in a cycle). */
  slots: Step[];
  /** Hosts down. */
  down: Step[];
}

/** Phases that draw no bar: nothing is going on. */
const QUIET = new Set(['starting', 'idle', 'completed', 'unknown']);

const KINDS = new Set<string>([
  'pending',
  'outside-window',
  'blocked',
  'waiting-for-lock',
  'awaiting-approval',
  'draining',
  'rebooting',
  'verifying',
  'failed',
]);

function isKind(phase: string): phase is SpanKind {
  return KINDS.has(phase);
}

/** Each phase of a node lasts until its next phase change, or until the end. */
function phaseSpans(changes: readonly PhaseChange[], endMs: number): Span[] {
  const spans: Span[] = [];
  const byNode = new Map<string, PhaseChange[]>();
  for (const c of changes) byNode.set(c.node, [...(byNode.get(c.node) ?? []), c]);
  for (const [node, list] of byNode) {
    list.forEach((c, i) => {
      const toMs = list[i + 1]?.atMs ?? endMs;
      if (QUIET.has(c.phase) || !isKind(c.phase) || toMs <= c.atMs) return;
      spans.push({ node, kind: c.phase, label: blockedGroup(c.phase, c.reason), fromMs: c.atMs, toMs });
    });
  }
  return spans;
}

/** The count of open intervals at every change. */
function steps(intervals: readonly { fromMs: number; toMs: number }[]): Step[] {
  const edges = intervals.flatMap((i) => [
    { atMs: i.fromMs, delta: 1 },
    { atMs: i.toMs, delta: -1 },
  ]);
  edges.sort((a, b) => a.atMs - b.atMs || a.delta - b.delta);
  const out: Step[] = [{ atMs: 0, count: 0 }];
  let count = 0;
  for (const e of edges) {
    count += e.delta;
    const last = out.at(-1);
    if (last?.atMs === e.atMs) last.count = count;
    else out.push({ atMs: e.atMs, count });
  }
  return out;
}

export interface TimelineInput {
  endMs: number;
  concurrency: number;
  nodes: readonly string[];
  phases: readonly PhaseChange[];
  /** Host outages, virtual ms since the start. */
  outages: readonly { node: string; downAtMs: number; upAtMs?: number }[];
  slotChanges: readonly { atMs: number; slots: number }[];
}

/** The timeline of a run. */
export function buildTimeline(input: TimelineInput): Timeline {
  const { endMs } = input;
  const down: Span[] = input.outages.map((o) => ({
    node: o.node,
    kind: 'down',
    label: 'down',
    fromMs: o.downAtMs,
    toMs: o.upAtMs ?? endMs,
  }));
  const slots: Step[] = [{ atMs: 0, count: 0 }];
  for (const c of input.slotChanges) {
    const last = slots.at(-1);
    if (last?.atMs === c.atMs) last.count = c.slots;
    else slots.push({ atMs: c.atMs, count: c.slots });
  }
  return {
    endMs,
    concurrency: input.concurrency,
    nodes: [...input.nodes],
    spans: [...phaseSpans(input.phases, endMs), ...down],
    slots,
    down: steps(down),
  };
}
