// `kured-ts check --node NAME`: the decision the agent on that node would take now, and every reason
// holding it back: the agent's own pre-lock decision (decideBeforeLock) over its own window,
// blockers and lock (wouldAcquire). Changes nothing: the Kube it runs on refuses every write
// (ReadOnlyKube), so a mistake here cannot touch the cluster.
import { errorText } from '../text/error-text.js';
import { HealthCheckBlocker, failedCheck, objectOf } from '../blockers/health-check.js';
import { firstBlock, judges, type Blocker, type NamedVerdict } from '../blockers/blocker.js';
import { createBlockers } from '../blockers/index.js';
import type { Clock } from '../clock/clock.js';
import type { Kube, V1Node } from '../kube/kube.js';
import { ReadOnlyKube } from '../kube/read-only-kube.js';
import { decideBeforeLock, judgedAtSlot, type BeforeLock } from '../agent/decision/before-lock.js';
import type { Block } from '../agent/decision/misconfigured.js';
import type { Outcome } from '../agent/outcome.js';
import { silentLogger } from '../log/logger.js';
import { KubeNodeOps, toNodeState } from '../node/kube-node-ops.js';
import { STATUS_ANNOTATION } from '../node/status.js';
import { isControlPlane } from '../node/role.js';
import { PHASE_NEXT, cycleFacts, phaseOf } from '../agent/decision/phase.js';
import { approvalCheck, type ApprovalVerdict } from '../node/approval.js';
import { rebootRequestOf } from '../node/reboot-request.js';
import { evaluateRequest, needVerdict, passedByNow } from './check-request.js';
import { createSentinel } from '../sentinel/index.js';
import type { Sentinel } from '../sentinel/sentinel.js';
import { createWindow } from '../window/index.js';
import {
  commandSignal,
  describeApiError,
  EXIT_FAILURE,
  EXIT_OK,
  EXIT_HELD_BACK,
  readDaemonSet,
  type CommandIo,
} from './shared.js';
import { formatObject } from './output.js';
import { hideUserInfo } from '../text/redact.js';
import { formatCheck, type CheckItem, type CheckReport } from './check-report.js';
import { evaluateLock, type CheckConfig, type LockItem } from './check-lock.js';
import { evaluateDrain, withDrainFailure } from './check-drain.js';
import { evaluateAgent, reportedMisconfiguration } from './check-agent.js';
import { evaluatePackageManager, evaluateRepair, evaluateShutdown } from './check-host.js';
import type { HostView } from '../host/host-view.js';

export type { CheckConfig } from './check-lock.js';

export interface CheckOptions {
  /** The node to judge. */
  node: string;
  /** The agent's flags (the same values as the DaemonSet's, for a faithful answer). */
  config: CheckConfig;
  /** Evaluate the reboot sentinel: only meaningful on the node itself. Default false. */
  local?: boolean;
  /** `text` (default), `json` or `yaml`. */
  output?: CheckOutput;
}

/** Builds the agent's blockers for `node` over `kube` (the read-only one). */
type BlockerFactory = (kube: Kube, node: string, clock: Clock) => readonly Blocker[];

/** Injection points beyond CommandIo (tests). */
export interface CheckIo extends CommandIo {
  /** The blockers, in the agent's order; default built from the config over the read-only Kube. */
  blockers?: BlockerFactory;
  /** Default createSentinel(config), used only with `local`. */
  sentinel?: Sentinel;
  /** Default hostView(config), used only with `local`. */
  hostView?: HostView;
}

/** The agent's own blocker registry for `node`, over the (read-only) Kube. */
function defaultCheckBlockers(config: CheckConfig): BlockerFactory {
  return (kube, node, clock) =>
    createBlockers(
      { ...config, nodeId: node },
      {
        kube,
        node: new KubeNodeOps({ kube, nodeId: node, clock, log: silentLogger }),
        clock,
      },
    );
}

/** One item of a blocker, with the verdict the agent would take from it (firstBlock's). */
interface Judged {
  item: CheckItem;
  verdict: NamedVerdict;
}

/** Each --health-check with its result (the agent asks them at the slot, one GET each). */
async function healthItems(blocker: HealthCheckBlocker, signal: AbortSignal): Promise<Judged[]> {
  const { name } = blocker;
  try {
    return (await blocker.results(signal)).map((r) => ({
      item: {
        name: `${name} ${objectOf(r.check)}`,
        verdict: r.ok ? 'ok' : 'blocks',
        detail: `${r.check.expression}: ${r.reason}`,
      },
      // the agent's reason: the first failing check's (HealthCheckBlocker.check)
      verdict: r.ok
        ? { blocked: false }
        : { blocked: true, blocker: name, reason: failedCheck([r]) ?? r.reason },
    }));
  } catch (err) {
    const detail = errorText(err);
    return [
      {
        item: { name, verdict: 'blocks', detail },
        verdict: { blocked: true, blocker: name, reason: `${name}: ${detail}` },
      },
    ];
  }
}

/** Where a blocking item comes from: its blocker (`from`, as registered) and the agent's verdict. */
interface ItemSource {
  from: string;
  blocker: string;
  reason: string;
}

/** The blockers' items, and the source of each that blocks (by the item itself: names can repeat). */
interface BlockerItems {
  items: CheckItem[];
  sources: ReadonlyMap<CheckItem, ItemSource>;
}

/** One blocker's item; through firstBlock, so that a blocker that throws blocks as it does in the agent. */
async function blockerItem(blocker: Blocker, signal: AbortSignal): Promise<Judged> {
  const verdict = await firstBlock([blocker], signal);
  return {
    item: verdict.blocked
      ? { name: blocker.name, verdict: 'blocks', detail: verdict.reason }
      : { name: blocker.name, verdict: 'ok', detail: 'does not block' },
    verdict,
  };
}

/** Every blocker's own verdict (not only the first): the operator wants all the reasons at once. */
async function evaluateBlockers(blockers: readonly Blocker[], signal: AbortSignal): Promise<BlockerItems> {
  const items: CheckItem[] = [];
  const sources = new Map<CheckItem, ItemSource>();
  for (const blocker of blockers) {
    const judged =
      blocker instanceof HealthCheckBlocker
        ? await healthItems(blocker, signal)
        : [await blockerItem(blocker, signal)];
    for (const { item, verdict } of judged) {
      items.push(item);
      if (verdict.blocked)
        sources.set(item, { from: blocker.name, blocker: verdict.blocker, reason: verdict.reason });
    }
  }
  return { items, sources };
}

async function evaluateSentinel(
  options: CheckOptions,
  io: CheckIo,
  node: V1Node,
  signal: AbortSignal,
): Promise<CheckItem> {
  if (options.local !== true) {
    const raw = node.metadata?.annotations?.[STATUS_ANNOTATION];
    const last = raw === undefined ? 'no status recorded' : `last status ${raw}`;
    return {
      name: 'sentinel',
      verdict: 'skipped',
      detail: `not evaluated here (run with --local on the node); ${last}`,
    };
  }
  const sentinel = io.sentinel ?? createSentinel(options.config);
  const verdict = await sentinel.rebootRequired(signal);
  if (verdict.error !== undefined) {
    return {
      name: 'sentinel',
      verdict: 'error',
      detail: `sentinel failed (treated as no reboot): ${verdict.error}`,
    };
  }
  return verdict.required
    ? { name: 'sentinel', verdict: 'ok', detail: 'reboot required' }
    : { name: 'sentinel', verdict: 'no-reboot', detail: 'reboot not required' };
}

function evaluateWindow(config: CheckConfig, now: Date): CheckItem {
  const window = createWindow(config.window);
  const { inside, change } = window.next(now);
  const at = change ? ` (${inside ? 'closes' : 'opens'} ${change.toISOString()})` : '';
  const contains = window.contains(now);
  return {
    name: 'window',
    verdict: contains ? 'ok' : 'blocks',
    detail: `${contains ? 'inside' : 'outside'} maintenance window ${window.describe()}${at}`,
  };
}

/** Under --require-approval, the node's approval as its agent judges it now; {} without the flag. */
function approvalOf(config: CheckConfig, node: V1Node, now: Date): { approval?: ApprovalVerdict } {
  const annotations = node.metadata?.annotations ?? {};
  return approvalCheck(config, { name: node.metadata?.name ?? '', annotations }, now);
}

/** --require-approval: one item saying whether the node is approved (none without the flag). */
function evaluateApproval(config: CheckConfig, node: V1Node, now: Date): CheckItem[] {
  const { approval } = approvalOf(config, node, now);
  if (approval === undefined) return [];
  if (!approval.approved) return [{ name: 'approval', verdict: 'blocks', detail: approval.reason }];
  const { by, at } = approval.approval;
  return [{ name: 'approval', verdict: 'ok', detail: `approved by ${by || 'unknown'} at ${at}` }];
}

function evaluateBootId(node: V1Node): CheckItem {
  const bootID = node.status?.nodeInfo?.bootID ?? '';
  return bootID === ''
    ? { name: 'node', verdict: 'blocks', detail: 'node reports no bootID: a reboot could not be proven' }
    : {
        name: 'node',
        verdict: 'ok',
        detail: `bootID ${bootID}${node.spec?.unschedulable === true ? ', cordoned' : ''}`,
      };
}

/**
 * With --fleetlock-url: what check cannot tell. FleetLock has no question that reads without taking:
 * its only call before a reboot (pre-reboot) takes a slot, so check does not ask, and says so.
 */
function evaluateFleetLock(config: CheckConfig): CheckItem[] {
  if (config.fleetlockUrl === '') return [];
  const detail =
    `group ${config.fleetlockGroup} at ${hideUserInfo(config.fleetlockUrl)}: asked by the agent before the ` +
    'lock; not asked here (FleetLock cannot be asked without taking a slot)';
  return [{ name: 'fleetlock', verdict: 'skipped', detail }];
}

/** Our wall time (for the window) and the API server's (for approvals, written on its clock). */
interface CheckTimes {
  now: Date;
  server: Date;
}

/** Where the lock stands for the node, and what holds back only a node that would take a slot. */
interface SlotView {
  node: V1Node;
  lock: LockItem;
  /** The blockers judged at the slot (by name, as registered). */
  atSlot: ReadonlySet<string>;
  /** Each blocking item's blocker and the agent's verdict from it (evaluateBlockers). */
  sources: ReadonlyMap<CheckItem, ItemSource>;
}

/** The first item that holds the node back before the lock, as the agent's Block (firstBlock, blockOf). */
function blockOfItems(items: readonly CheckItem[], { lock, atSlot, sources }: SlotView): Block {
  const own = new Set(['lock', 'window', 'approval']);
  // as the agent (before-lock.ts, atSlot): a blocker judged at the slot (the PDB pre-flight, the
  // health checks) holds back only a node that would take one now; a node that would not waits for
  // the lock. Judged by the blocker each item came from (one item per --health-check). Not for an
  // entry naming the node that no cycle proves: the agent judges those blockers before it asks.
  const noSlot = lock.verdict === 'blocks' && lock.held === undefined;
  const atSlotItem = (i: CheckItem): boolean => noSlot && atSlot.has(sources.get(i)?.from ?? i.name);
  const item = items.find((i) => i.verdict === 'blocks' && !own.has(i.name) && !atSlotItem(i));
  if (item === undefined) return { blocked: false };
  // in the agent's words: the blocker as its outcome names it, and its reason, prefixed with that name
  const { blocker, reason } = sources.get(item) ?? { blocker: item.name, reason: item.detail };
  return { blocked: true, blocker, reason: `${blocker}: ${reason}` };
}

/** What the items say, in the agent's own terms (BeforeLock), for its own decideBeforeLock. */
function beforeLock(
  items: readonly CheckItem[],
  { now, server }: CheckTimes,
  config: CheckConfig,
  at: SlotView,
): BeforeLock {
  const { node } = at;
  const request = rebootRequestOf(node.metadata?.annotations ?? {});
  const verdict = needVerdict(items, request);
  const window = createWindow(config.window);
  // a configuration error the agent reported holds it back as it holds the agent back (check-agent.ts)
  const misconfigured = reportedMisconfiguration(node);
  return {
    verdict,
    window: { inside: window.contains(now), describe: window.describe(), next: window.next(now).change },
    block: misconfigured
      ? { blocked: true, blocker: 'agent', reason: misconfigured.reason, misconfigured }
      : blockOfItems(items, at),
    bootID: node.status?.nodeInfo?.bootID ?? '',
    ...approvalOf(config, node, server),
    ...(request === undefined ? {} : { request }),
  };
}

function decide(
  items: readonly CheckItem[],
  inProgress: string | undefined,
  before: BeforeLock,
): CheckReport['decision'] {
  if (inProgress !== undefined) return { kind: 'in-progress', reason: inProgress };
  const early = decideBeforeLock(before);
  if (early !== undefined) return earlyDecision(early, items);
  const lock = items.find((i) => i.name === 'lock');
  if (lock?.verdict === 'blocks') return { kind: 'waiting-for-lock', reason: lock.detail };
  const required = items.some((i) => (i.name === 'sentinel' || i.name === 'request') && i.verdict === 'ok');
  const fleet = items.some((i) => i.name === 'fleetlock') ? ', once the FleetLock server grants a slot' : '';
  return {
    kind: 'would-reboot',
    reason: `the agent would take the lock, drain and reboot${required ? '' : ' if a reboot is required'}${fleet}`,
  };
}

/** The agent's pre-lock outcome in check's words, with the item that says why. */
function earlyDecision(early: Outcome, items: readonly CheckItem[]): CheckReport['decision'] {
  const detail = (name: string): string => items.find((i) => i.name === name)?.detail ?? early.reason;
  switch (early.kind) {
    case 'sentinel-error':
      return { kind: 'sentinel-error', reason: detail('sentinel') };
    case 'idle':
      return { kind: 'idle', reason: 'reboot not required' };
    case 'outside-window':
      return { kind: 'outside-window', reason: detail('window') };
    case 'awaiting-approval':
    case 'misconfigured':
      return { kind: early.kind, reason: early.reason };
    default:
      return { kind: 'blocked', reason: early.reason };
  }
}

/**
 * The node's phase as the agent finds it (phaseOf, the agent's own table): past the pre-lock decision
 * when a cycle of its own is in progress, with what the agent does next; undefined before the lock
 * (an entry naming the node that no cycle proves is asked for anew, as the agent does).
 */
function inProgress(node: V1Node, lock: LockItem, config: CheckConfig, now: Date): string | undefined {
  const phase = phaseOf(cycleFacts(toNodeState(node), lock.held, config, now));
  if (phase.name === 'before-lock' || phase.name === 'unproven-entry') return undefined;
  return `a reboot cycle is in progress on this node (${phase.name}: ${phase.reason}); ${PHASE_NEXT[phase.name]}`;
}

/** Evaluates everything for one node, reading only. */
export async function evaluateCheck(
  options: CheckOptions,
  io: CheckIo,
  signal: AbortSignal,
): Promise<CheckReport> {
  const kube = new ReadOnlyKube(io.kube);
  const node = await kube.getNode(options.node, signal);
  const now = io.clock.now();
  const times: CheckTimes = { now, server: io.kube.serverTime?.at(now) ?? now };
  await readDaemonSet(kube, options.config, signal);
  // as the agent: a blocker of control-plane nodes only (their quorum) is not asked for a worker
  const blockers = (io.blockers ?? defaultCheckBlockers(options.config))(kube, options.node, io.clock).filter(
    (b) => judges(b, isControlPlane(node.metadata?.labels)),
  );
  const passed = passedByNow(node, blockers);
  const sentinel = await evaluateSentinel(options, io, node, signal);
  const judged = await evaluateBlockers(blockers, signal);
  const items: CheckItem[] = [
    sentinel,
    ...evaluateRequest(node),
    ...evaluateAgent(node),
    ...passed([
      evaluateWindow(options.config, now),
      ...judged.items,
      await evaluatePackageManager(options, io, signal),
    ]),
    evaluateBootId(node),
    ...evaluateApproval(options.config, node, times.server),
  ];
  const lock = await evaluateLock(options, io.clock, { kube, node }, signal);
  items.push(
    lock,
    ...evaluateFleetLock(options.config),
    ...evaluateRepair(node, options.config.postRebootTimeoutMs),
    evaluateShutdown(node),
  );
  const decision = decide(
    items,
    inProgress(node, lock, options.config, now),
    beforeLock(items, times, options.config, {
      node,
      lock,
      atSlot: new Set(blockers.filter((b) => judgedAtSlot(b, options.config.taintTiming)).map((b) => b.name)),
      sources: judged.sources,
    }),
  );
  const drain = await evaluateDrain(kube, options.node, options.config, signal);
  return { node: options.node, items, drain, decision: withDrainFailure(decision, drain) };
}

/** The -o values `check` accepts. */
export const CHECK_OUTPUTS = ['text', 'json', 'yaml'] as const;
type CheckOutput = (typeof CHECK_OUTPUTS)[number];

/**
 * `kured-ts check`: prints the evaluation; 0 = the agent would reboot the node now (or is rebooting
 * it), 3 = it would not (held back, or with --local no reboot is required), 1 = cannot tell.
 */
export async function runCheck(options: CheckOptions, io: CheckIo): Promise<number> {
  const err = io.err ?? io.out;
  let report: CheckReport;
  try {
    report = await evaluateCheck(options, io, commandSignal(io.timeoutMs));
  } catch (e: unknown) {
    err(describeApiError(e, `check node ${options.node}`));
    return EXIT_FAILURE;
  }
  const output = options.output ?? 'text';
  if (output === 'text') for (const line of formatCheck(report)) io.out(line);
  else io.out(formatObject(report, output));
  const goes = report.decision.kind === 'would-reboot' || report.decision.kind === 'in-progress';
  return goes ? EXIT_OK : EXIT_HELD_BACK;
}
