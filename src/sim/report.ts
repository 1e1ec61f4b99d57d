// The end-of-run report of a simulation, as lines of text.
import { THIEF_EVERY_MS } from './coordinator-thief.js';
import type { VolumeStats } from './volumes.js';
import { shortDuration } from '../text/duration.js';
import { costTotal, formatCost } from './api-cost.js';
import type { SimulationResult } from './simulation.js';

/** What the run was asked to do, for the headline. */
export interface ReportHeader {
  nodes: number;
  needed: number;
  concurrency: number;
  periodMs: number;
  seed: number;
  /** --group-concurrency per zone, when set. */
  groupConcurrency?: number;
  /** --group-order sequential: the zones go one after another, so need order holds only within one. */
  sequential?: boolean;
}

function nodesOf(r: SimulationResult): number {
  return Math.max(1, r.nodes.length);
}

function perNode(n: number, r: SimulationResult): string {
  return (n / nodesOf(r)).toFixed(0);
}

function megabytes(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

function kilobytes(bytes: number): string {
  return `${(bytes / 1e3).toFixed(0)} KB`;
}

function row(label: string, value: string): string {
  return `  ${label.padEnd(34)}${value}`;
}

function blockedText(blockedMs: Record<string, number>): string {
  const parts = Object.entries(blockedMs)
    .filter(([, ms]) => ms >= 1000)
    .sort((a, b) => b[1] - a[1])
    .map(([reason, ms]) => `${reason} ${shortDuration(ms)}`);
  return parts.length > 0 ? parts.join('; ') : 'none';
}

/** With zones: the most nodes down at once in each, against the group concurrency. */
function zoneRows(r: SimulationResult, h: ReportHeader): string[] {
  const zones = Object.entries(r.maxDownByZone);
  if (zones.length === 0) return [];
  const cap = h.groupConcurrency === undefined ? '' : ` (group concurrency ${h.groupConcurrency})`;
  return [row('max nodes down per zone', `${zones.map(([z, n]) => `${z} ${n}`).join(', ')}${cap}`)];
}

/** With control-plane nodes: when the first took a slot against the last worker. */
function controlPlaneRows(r: SimulationResult): string[] {
  const cp = r.controlPlane;
  if (cp === undefined) return [];
  const at = (ms: number | undefined): string => (ms === undefined ? 'never' : `+${shortDuration(ms)}`);
  return [
    row(
      'control plane',
      `${cp.nodes} nodes, one at a time: first slot ${at(cp.firstLockMs)}, last worker's slot ${at(cp.lastWorkerLockMs)}`,
    ),
  ];
}

function admissionText(a: SimulationResult['admission']): string {
  if (a === undefined) return 'not enforced';
  return `${a.admitted} admitted, ${a.denied} denied (the chart's policy; each agent as itself)`;
}

/**
 * How long the wave took against its lower bound; for a run cut by the wall limit, only how far it
 * got: a ratio of a wave that did not finish would mislead.
 */
function waveRows(r: SimulationResult): string[] {
  if (r.stop === 'wall-limit') {
    return [
      row(
        'stopped at the wall limit',
        `after ${r.rebooted} of ${r.needed} nodes, ${shortDuration(r.makespanMs)} simulated (raise --wall-limit)`,
      ),
    ];
  }
  const ratio = r.lowerBoundMs > 0 ? (r.rollingMs / r.lowerBoundMs).toFixed(2) : '-';
  return [
    row('makespan (simulated)', `${shortDuration(r.makespanMs)} from the start`),
    row(
      'rolling reboot',
      `${shortDuration(r.rollingMs)} from the first lock (taken after ${shortDuration(r.firstLockMs)})`,
    ),
    row('lower bound', `${shortDuration(r.lowerBoundMs)} (sum of drain+reboot+ready per node / concurrency)`),
    row('rolling reboot / lower bound', ratio),
  ];
}

/** Nodes quarantined (their drain failed), and a halt of new cycles (--max-quarantined); drain order. */
function quarantineRows(r: SimulationResult): string[] {
  const rows: string[] = [];
  if (r.drainOrder !== undefined)
    rows.push(
      row(
        'drain order (storage pods)',
        `${r.drainOrder.evicted} order-10 pods evicted, ${r.drainOrder.early} while a lower-order pod was on their node`,
      ),
    );
  if (r.volumes !== undefined) rows.push(row('volumes attached at reboot', volumesText(r.volumes)));
  const blocked = Object.entries(r.blockedNodes);
  if (blocked.length > 0)
    rows.push(
      row('not rebooted, last blocked by', blocked.map(([node, why]) => `${node}: ${why}`).join('; ')),
    );
  if (r.singleReplicas !== undefined)
    rows.push(row('single-replica Deployments', singleReplicaText(r.singleReplicas)));
  const drainFailed = r.quarantined.filter((n) => !r.rebootLoops.includes(n));
  if (drainFailed.length > 0)
    rows.push(row('nodes quarantined (drain failed)', `${drainFailed.length} (${drainFailed.join(', ')})`));
  if (r.rebootLoops.length > 0) {
    const reboots = r.rebootLoops.map(
      (n) => `${n}: ${r.nodes.find((x) => x.name === n)?.reboots ?? 0} reboots`,
    );
    rows.push(row('nodes quarantined (reboot loop)', `${r.rebootLoops.length} (${reboots.join(', ')})`));
  }
  if (r.halted !== undefined) rows.push(row('halted', r.halted));
  return [...rows, ...waveReportRows(r)];
}

/** The wave: failed nodes, touched nodes, a bad kernel's spread, the zones' order. */
function waveReportRows(r: SimulationResult): string[] {
  const w = r.wave;
  if (w === undefined) return [];
  const failed = w.failed.length === 0 ? 'none' : `${w.failed.length} (${w.failed.join(', ')})`;
  const rows = [row('wave: nodes failed', failed), row('wave: nodes touched', `${w.touched} took a slot`)];
  if (w.badKernel !== undefined)
    rows.push(
      row(
        'bad kernel',
        `${w.badKernel.node} never came back Ready; ${w.badKernel.rebootedAfter} node(s) rebooted after it`,
      ),
    );
  if (w.zones !== undefined)
    rows.push(
      row(
        'zones (first → last slot)',
        w.zones.map((z) => `${z.zone} +${shortDuration(z.firstMs)}→+${shortDuration(z.lastMs)}`).join(', '),
      ),
    );
  return rows;
}

/** The seconds single-replica Deployments had no ready replica, in all and by Deployment. */
function singleReplicaText(s: NonNullable<SimulationResult['singleReplicas']>): string {
  const down = Object.entries(s.unavailableSeconds);
  const total = down.reduce((sum, [, seconds]) => sum + seconds, 0);
  const which =
    down.length === 0 ? '' : ` (${down.map(([name, seconds]) => `${name} ${seconds}s`).join(', ')})`;
  return `${s.deployments}, ${total} seconds with no ready replica${which}`;
}

/** Nodes rebooted without needing it at the start: on an admin's request (simulate --reboot-now). */
function requestRows(r: SimulationResult): string[] {
  const asked = r.nodes.filter((n) => !n.neededReboot && n.reboots > 0).map((n) => n.name);
  return asked.length === 0 ? [] : [row('rebooted on request only', asked.join(', '))];
}

/** simulate --autoscaler: the nodes it removed, by when in their cycle. */
function autoscalerRows(r: SimulationResult): string[] {
  const removals = r.autoscalerRemovals;
  if (removals === undefined) return [];
  const count = (when: string): number => removals.filter((x) => x.when === when).length;
  return [
    row(
      'removed by the autoscaler',
      `${count('cycle')} in a reboot cycle, ${count('settle')} in its settle time, ${count('after')} after it (empty nodes)`,
    ),
  ];
}

/** simulate --hold-worker: the nodes held after their drain, and any rebooted while held. */
function holdRows(r: SimulationResult): string[] {
  const w = r.holdWorker;
  if (w === undefined) return [];
  return [
    row(
      'held after the drain',
      `${w.finished}/${w.worked} nodes held ${shortDuration(w.holdMs)} by ${w.key}, ${w.rebootedWhileHeld} rebooted while held`,
    ),
  ];
}

/** simulate --coordinator-thief: what it wrote, and when it acted. */
function thiefRows(r: SimulationResult): string[] {
  const t = r.coordinatorThief;
  if (t === undefined) return [];
  return [
    row(
      'coordinator thief',
      `${t.leaseWrites} Lease writes, ${t.turnsWritten} turns written (from +${shortDuration(t.fromMs)} for ${shortDuration(t.forMs)}, every ${shortDuration(t.everyMs ?? THIEF_EVERY_MS)}${t.stopped ? '' : ', cut short by the end of the wave'})`,
    ),
  ];
}

/** simulate --other-operator: the nodes it took out. */
function otherOperatorRows(r: SimulationResult): string[] {
  const o = r.otherOperator;
  if (o === undefined) return [];
  const names = o.taken.length === 0 ? 'none (no node was free of the wave)' : o.taken.join(', ');
  return [row(`other operator (${o.kind})`, `${o.taken.length} of ${o.nodes} nodes taken out: ${names}`)];
}

/** Accepted, refused by a PDB, and (when any) failed on the API server (--eviction-errors). */
function evictionsText(e: SimulationResult['evictions']): string {
  const failed = e.failed > 0 ? `, ${e.failed} answered 5xx by the API server` : '';
  return `${e.accepted} accepted, ${e.refused} refused by a PDB${failed}`;
}

/** The hand-offs out of need order, and how many are expected. */
function outOfOrderText(r: SimulationResult, h: ReportHeader): string {
  return h.sequential === true
    ? `${r.outOfOrder.length} (--group-order sequential: a later zone's nodes wait, whatever their need)`
    : `${r.outOfOrder.length} (the coordinated lock queue: 0 expected)`;
}

/** The report; the violations are listed one per line after it. */
export function formatReport(r: SimulationResult, h: ReportHeader): string[] {
  const lines = [
    `kured-ts simulate: ${h.nodes} nodes, ${h.needed} needing a reboot, concurrency ${h.concurrency}, ` +
      `period ${shortDuration(h.periodMs)}, seed ${h.seed}`,
    ...waveRows(r),
    row('nodes rebooted', `${r.rebooted}/${r.needed}${r.stop === 'done' ? '' : ` (stopped: ${r.stop})`}`),
    ...quarantineRows(r),
    row('max nodes down at once', String(r.maxDown)),
    row('hand-offs out of need order', outOfOrderText(r, h)),
    row('longest wait (required → lock)', shortDuration(r.longestWaitMs)),
    ...zoneRows(r, h),
    ...controlPlaneRows(r),
    ...(r.approvals > 0 ? [row('approvals (simulated operator)', String(r.approvals))] : []),
    ...autoscalerRows(r),
    ...holdRows(r),
    ...requestRows(r),
    ...(r.lockWipes > 0
      ? [row('lock deleted by a third party', `${r.lockWipes} times during the wave`)]
      : []),
    ...thiefRows(r),
    ...otherOperatorRows(r),
    row('evictions', evictionsText(r.evictions)),
    row(
      'pods evicted more than once',
      `${r.evictedMoreThanOnce} (placements onto nodes still to reboot: ${r.placementsOnPendingNodes})`,
    ),
    row('blocked time by reason', blockedText(r.blockedMs)),
    ...(r.churnJobs > 0
      ? [
          row(
            'blocking jobs (churn)',
            `${r.churnJobs} created, ${r.blockingOnPendingNodes} placed onto nodes needing a reboot`,
          ),
          row('preparation (required → lock)', `${shortDuration(r.meanPrepMs)} per node on average`),
        ]
      : []),
    row('kernel updated (reboot history)', `${r.kernelsUpdated}/${r.rebooted} rebooted nodes`),
    row(
      'API requests',
      `${r.apiRequests} (${r.watches} of them watches), ${perNode(r.apiRequests, r)} per node`,
    ),
    row(
      'response bytes',
      `${megabytes(r.responseBytes)} (${megabytes(r.watchBytes)} of watch events), ${kilobytes(r.responseBytes / nodesOf(r))} per node`,
    ),
    ...(r.coordinator.leaderships > 0
      ? [
          row(
            'coordinator',
            `${r.coordinator.granted} turns given, ${r.coordinator.lapsed} lapsed, ${r.coordinator.leaderships} leadership(s)`,
          ),
        ]
      : []),
    row('writes through admission policy', admissionText(r.admission)),
    row('agent warnings and errors logged', String(r.agentErrors.length)),
    row('invariant violations', String(r.violations.length)),
    row('wall time', `${(r.wallMs / 1000).toFixed(1)}s`),
  ];
  for (const o of h.sequential === true ? [] : r.outOfOrder.slice(0, 10))
    lines.push(
      `  OUT OF ORDER at +${shortDuration(o.atMs)}: ${o.node} took a slot while ${o.passedOver} had waited longer`,
    );
  for (const v of r.violations.slice(0, 50))
    lines.push(`  VIOLATION at +${shortDuration(v.atMs)} ${v.node}: ${v.rule}: ${v.detail}`);
  if (r.violations.length > 50) lines.push(`  … and ${r.violations.length - 50} more`);
  return lines;
}

/**
 * Passed = every needed reboot done or its node quarantined (passing it over is the point; a reboot
 * loop's node rebooted and is quarantined: counted once) and
 * no invariant broken; a halted wave did not pass.
 */
export function passed(r: SimulationResult): boolean {
  return (
    r.violations.length === 0 &&
    r.nodes.filter((n) => n.neededReboot && (n.reboots > 0 || r.quarantined.includes(n.name))).length ===
      r.needed &&
    r.halted === undefined &&
    r.stop === 'done'
  );
}

/**
 * What the wave cost the API server per node, by verb and resource: the agents' requests (each as its
 * own node's identity), then the rest (the coordinator's), the spread over the nodes' agents, and the
 * spread of one node's cycle (from its need), and the busiest agent's own table (with one node needing
 * a reboot: that node's whole run).
 */
export function formatCostReport(r: SimulationResult): string[] {
  const n = nodesOf(r);
  const agents = formatCost(r.cost.agents, n, 'API cost per node, the agents (by verb and resource)');
  const other = formatCost(r.cost.other, n, 'API cost per node, the coordinator and the simulated operators');
  const each = r.nodes
    .map((node) => ({ name: node.name, requests: costTotal(r.cost.byNode[node.name] ?? []).requests }))
    .sort((a, b) => a.requests - b.requests);
  const spread = `  one node's agent, requests over the run: ${spreadOf(each.map((e) => e.requests))}`;
  const cycles = Object.values(r.cost.cycles);
  // a node's cycle: from the moment its reboot became required (its agent's start-up, which every
  // agent pays idle or not, is in it only when the need was there at the start)
  const cycle =
    cycles.length === 0
      ? []
      : [`  one node's cycle, requests from its need to the end of the run: ${spreadOf(cycles)}`];
  const busiest = each[each.length - 1];
  const own =
    busiest === undefined
      ? []
      : formatCost(
          r.cost.byNode[busiest.name] ?? [],
          1,
          `API cost of the busiest agent (${busiest.name}) over the run`,
        );
  return [...agents, ...other, spread, ...cycle, ...own];
}

/** min, median, p99 and max of `values`. */
function spreadOf(values: readonly number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return `min ${at(0)}, median ${at(0.5)}, p99 ${at(0.99)}, max ${at(1)}`;
}

/** simulate --volumes-per-node: what was still attached when hosts went down, of how many volumes. */
function volumesText(v: VolumeStats): string {
  const stuck = v.stuck.length === 0 ? '' : `; never detach (--stuck-volume): ${v.stuck.join(', ')}`;
  return `${String(v.attachedAtReboot)} (${String(v.volumes)} volumes, ${String(v.rebootsWithVolumes)} reboots of nodes that had one)${stuck}`;
}
