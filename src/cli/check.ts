// `kured-ts check --node NAME`: the decision the agent on that node would take now, and every reason
// holding it back. The decision is the agent's own: check runs the agent's steps before the lock
// (judgeBeforeLock, decideBeforeLock, judgeAtSlot, then the lock's wouldAcquire) on a read-only view
// of the cluster and only renders what they return; the lines beside it show every blocker's answer,
// not only the first. Changes nothing: the Kube it runs on refuses every write (ReadOnlyKube), so a
// mistake here cannot touch the cluster.
import { judges, type Blocker } from '../blockers/blocker.js';
import { createBlockers } from '../blockers/index.js';
import type { Clock } from '../clock/clock.js';
import type { Kube, V1Node } from '../kube/kube.js';
import { ReadOnlyKube } from '../kube/read-only-kube.js';
import {
  decideBeforeLock,
  judgeAtSlot,
  judgeBeforeLock,
  type BeforeLock,
  type BeforeLockView,
} from '../agent/decision/before-lock.js';
import { slotMetaOf } from '../agent/decision/acquisition.js';
import { waitingFor, type Misconfigured, type Outcome } from '../agent/outcome.js';
import type { LockMetadata } from '../lock/lock.js';
import { waveTracked } from '../capacity/settings.js';
import { silentLogger } from '../log/logger.js';
import { KubeNodeOps, toNodeState } from '../node/kube-node-ops.js';
import { STATUS_ANNOTATION } from '../node/status.js';
import { isControlPlane } from '../node/role.js';
import { PHASE_NEXT, cycleFacts, phaseOf, type CyclePhase } from '../agent/decision/phase.js';
import { approvalCheck, type ApprovalVerdict } from '../node/approval.js';
import { rebootRequestOf } from '../node/reboot-request.js';
import { evaluateRequest, needVerdict, passedByNow } from './check-request.js';
import { createSentinel } from '../sentinel/index.js';
import type { Sentinel, SentinelVerdict } from '../sentinel/sentinel.js';
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
import { checkLock, evaluateLock } from './check-lock.js';
import { blockerLines, keepAnswers } from './check-blockers.js';
import { evaluateDrain, withDrainFailure } from './check-drain.js';
import { evaluateAgent, reportedMisconfiguration } from './check-agent.js';
import { evaluateRepair, evaluateShutdown, packageManagerHost } from './check-host.js';
import { evaluateNodeChecks, evaluateVolumes } from './check-storage.js';
import type { HostView } from '../host/host-view.js';
import type { HostFiles } from '../host/host.js';
import type { CheckConfig } from './check-lock.js';

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
  /** Whose configuration `config` is, in words (deployed-config.ts). */
  configuration?: string;
}

/**
 * Builds the agent's blockers for `node` over `kube` (the read-only one); with `host`, the host's
 * files where check can read them (--local), for the package-manager blocker.
 */
type BlockerFactory = (kube: Kube, node: string, clock: Clock, host?: HostFiles) => readonly Blocker[];

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
  return (kube, node, clock, host) =>
    createBlockers(
      { ...config, nodeId: node },
      {
        kube,
        node: new KubeNodeOps({ kube, nodeId: node, clock, log: silentLogger }),
        clock,
        host,
      },
    );
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

/** What `check` runs the agent's steps on: the read-only view, the sentinel's answer, the node's acquisition. */
interface Look {
  view: BeforeLockView;
  verdict: SentinelVerdict;
  /** The need is known (the sentinel read with --local, or an admin's request), not assumed. */
  needKnown: boolean;
  meta: LockMetadata;
  /** The node's phase when it is past the pre-lock decision (inProgress), else undefined. */
  inProgress: string | undefined;
  /** An entry naming the node that no cycle of its own proves (phase unproven-entry). */
  unproven: boolean;
  /** A configuration error the agent reported: it holds the agent back as it holds it here. */
  misconfigured: Misconfigured | undefined;
}

/**
 * The agent's decision, taken by its own steps (before-lock.ts) over check's read-only view, in the
 * order of its first pass: the pre-lock decision, what holds back a node at the slot, then the lock
 * (asked whether it would give a slot: check takes none).
 */
async function decide(look: Look, signal: AbortSignal): Promise<CheckReport['decision']> {
  if (look.inProgress !== undefined) return { kind: 'in-progress', reason: look.inProgress };
  const judged = await judgeBeforeLock(look.view, look.verdict, signal);
  const early = decideBeforeLock(withReported(judged, look.misconfigured));
  if (early !== undefined) return decisionOf(early);
  const atSlot = await judgeAtSlot(look.view, look.meta, look.unproven, signal);
  if (atSlot !== undefined) return decisionOf(atSlot.outcome);
  const would = await look.view.lock.wouldAcquire(signal, look.meta);
  if (!would.acquired) return decisionOf(waitingFor(would));
  const required = look.needKnown;
  const fleet = look.view.fleetLock ? ', once the FleetLock server grants a slot' : '';
  return {
    kind: 'would-reboot',
    reason: `the agent would take the lock, drain and reboot${required ? '' : ' if a reboot is required'}${fleet}`,
  };
}

/**
 * A configuration error the agent reported holds it back as it holds the agent back: its own
 * admission policy denies the agent's requests, which check (asking with its user's rights) cannot.
 */
function withReported(judged: BeforeLock, misconfigured: Misconfigured | undefined): BeforeLock {
  if (misconfigured === undefined) return judged;
  return {
    ...judged,
    block: { blocked: true, blocker: 'agent', reason: misconfigured.reason, misconfigured },
  };
}

/** The agent's outcome in check's words: a blocker's reason is prefixed with its name. */
function decisionOf(outcome: Outcome): CheckReport['decision'] {
  switch (outcome.kind) {
    case 'blocked':
      return { kind: 'blocked', reason: `${outcome.blocker}: ${outcome.reason}` };
    case 'sentinel-error':
    case 'idle':
    case 'outside-window':
    case 'awaiting-approval':
    case 'misconfigured':
    case 'waiting-for-lock':
      return { kind: outcome.kind, reason: outcome.reason };
    default:
      return { kind: 'blocked', reason: outcome.reason };
  }
}

/**
 * The node's phase as the agent finds it (phaseOf, the agent's own table): past the pre-lock decision
 * when a cycle of its own is in progress, with what the agent does next; undefined before the lock
 * (an entry naming the node that no cycle proves is asked for anew, as the agent does).
 */
function inProgress(phase: CyclePhase): string | undefined {
  if (phase.name === 'before-lock' || phase.name === 'unproven-entry') return undefined;
  return `a reboot cycle is in progress on this node (${phase.name}: ${phase.reason}); ${PHASE_NEXT[phase.name]}`;
}

/** Evaluates everything for one node, reading only. */
export async function evaluateCheck(
  options: CheckOptions,
  io: CheckIo,
  signal: AbortSignal,
): Promise<CheckReport> {
  const { config } = options;
  const kube = new ReadOnlyKube(io.kube);
  const node = await kube.getNode(options.node, signal);
  const now = io.clock.now();
  await readDaemonSet(kube, config, signal);
  const packageManager = packageManagerHost(options, io);
  const host = 'host' in packageManager ? packageManager.host : undefined;
  // as the agent: a blocker of control-plane nodes only (their quorum) is not asked for a worker
  const blockers = keepAnswers(
    (io.blockers ?? defaultCheckBlockers(config))(kube, options.node, io.clock, host).filter((b) =>
      judges(b, isControlPlane(node.metadata?.labels)),
    ),
    signal,
  );
  const server = io.kube.serverTime?.at(now) ?? now;
  const items: CheckItem[] = [
    await evaluateSentinel(options, io, node, signal),
    ...evaluateRequest(node),
    ...evaluateAgent(node),
    ...passedByNow(
      node,
      blockers,
    )([
      evaluateWindow(config, now),
      ...(await blockerLines(blockers)),
      ...('line' in packageManager ? [packageManager.line] : []),
    ]),
    evaluateBootId(node),
    await evaluateVolumes(config, node, kube, signal),
    ...(await evaluateNodeChecks(config, node, kube, signal)),
    ...evaluateApproval(config, node, server),
  ];
  const lock = checkLock(config, options.node, io.clock, kube);
  const state = toNodeState(node);
  const meta = slotMetaOf(config, state, waveTracked(config));
  const lockItem = await evaluateLock(config, lock, { node, meta }, signal);
  items.push(
    lockItem,
    ...evaluateFleetLock(config),
    ...evaluateRepair(node, config.postRebootTimeoutMs),
    evaluateShutdown(node),
  );
  const phase = phaseOf(cycleFacts(state, lockItem.held, config, now));
  const request = rebootRequestOf(node.metadata?.annotations ?? {});
  const decision = await decide(
    {
      view: {
        config: { ...config, nodeId: options.node },
        window: createWindow(config.window),
        blockers,
        lock,
        fleetLock: config.fleetlockUrl !== '',
        now,
        serverNow: server,
        node: state,
      },
      verdict: needVerdict(items, request),
      needKnown: items.some((i) => (i.name === 'sentinel' || i.name === 'request') && i.verdict === 'ok'),
      meta,
      inProgress: inProgress(phase),
      unproven: phase.name === 'unproven-entry',
      misconfigured: reportedMisconfiguration(node),
    },
    signal,
  );
  const drain = await evaluateDrain(kube, options.node, config, signal);
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
    if (options.configuration !== undefined) report = { ...report, configuration: options.configuration };
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
