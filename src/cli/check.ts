// `kured-ts check --node NAME`: the decision the agent on that node would take now, and every reason
// holding it back. The decision is the agent's own: check runs the agent's one runner of its steps
// to a slot (runToSlot: the window, the blockers, the approval, the slot's own questions, the lock,
// asked whether it would give the slot) on a read-only view of the cluster, and renders the answers
// it returns (window, node, approval) and its end; the lines beside it show every blocker's answer,
// not only the first. Changes nothing: the Kube it runs on refuses every write (ReadOnlyKube), so a
// mistake here cannot touch the cluster.
import { judges, type Blocker } from '../blockers/blocker.js';
import { createBlockers } from '../blockers/index.js';
import type { Clock } from '../clock/clock.js';
import type { Kube, V1Node } from '../kube/kube.js';
import { ReadOnlyKube } from '../kube/read-only-kube.js';
import type { BeforeLockView } from '../agent/decision/before-lock.js';
import { needOf } from '../agent/decision/need.js';
import { runToSlot, type SlotActions, type SlotRun, type StepAnswer } from '../agent/decision/to-slot.js';
import type { NodeState } from '../node/node.js';
import { slotMetaOf } from '../agent/decision/acquisition.js';
import type { Outcome } from '../agent/outcome.js';
import type { LockMetadata } from '../lock/lock.js';
import { waveTracked } from '../capacity/settings.js';
import { silentLogger } from '../log/logger.js';
import { KubeNodeOps, toNodeState } from '../node/kube-node-ops.js';
import { STATUS_ANNOTATION } from '../node/status.js';
import { isControlPlane } from '../node/role.js';
import { PHASE_NEXT, cycleFacts, phaseOf, type CyclePhase } from '../agent/decision/phase.js';
import { rebootRequestOf } from '../node/reboot-request.js';
import { evaluateRequest, passedByNow } from './check-request.js';
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
import { checkLock, evaluateLock, type CheckLock } from './check-lock.js';
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

/** The sentinel as check reads it: only with --local (on the node itself); its verdict, when read. */
async function evaluateSentinel(
  options: CheckOptions,
  io: CheckIo,
  node: V1Node,
  signal: AbortSignal,
): Promise<{ item: CheckItem; verdict?: SentinelVerdict }> {
  if (options.local !== true) {
    const raw = node.metadata?.annotations?.[STATUS_ANNOTATION];
    const last = raw === undefined ? 'no status recorded' : `last status ${raw}`;
    const detail = `not evaluated here (run with --local on the node); ${last}`;
    return { item: { name: 'sentinel', verdict: 'skipped', detail } };
  }
  const sentinel = io.sentinel ?? createSentinel(options.config);
  const verdict = await sentinel.rebootRequired(signal);
  if (verdict.error !== undefined) {
    const detail = `sentinel failed (treated as no reboot): ${verdict.error}`;
    return { item: { name: 'sentinel', verdict: 'error', detail }, verdict };
  }
  return verdict.required
    ? { item: { name: 'sentinel', verdict: 'ok', detail: 'reboot required' }, verdict }
    : { item: { name: 'sentinel', verdict: 'no-reboot', detail: 'reboot not required' }, verdict };
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

/**
 * What check does between the agent's steps (runToSlot): nothing. Where the agent acquires, it asks
 * the lock whether it would give the slot; the FleetLock server it does not ask (evaluateFleetLock).
 */
function checkActions(lock: CheckLock, signal: AbortSignal): SlotActions {
  return {
    release: () => Promise.resolve(),
    beforeSlot: () => Promise.resolve(),
    fleetLock: () => Promise.resolve(undefined),
    slot: (meta) => lock.wouldAcquire(signal, meta),
  };
}

/** The decision the run ended in, in check's words. */
function decisionOfRun(run: SlotRun, needKnown: boolean, fleetLock: boolean): CheckReport['decision'] {
  if ('outcome' in run.end) return decisionOf(run.end.outcome);
  const fleet = fleetLock ? ', once the FleetLock server grants a slot' : '';
  return {
    kind: 'would-reboot',
    reason: `the agent would take the lock, drain and reboot${needKnown ? '' : ' if a reboot is required'}${fleet}`,
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

/** The agent's steps to a slot (runToSlot), run by check over its read-only view. */
async function runSteps(
  options: CheckOptions,
  at: { node: V1Node; state: NodeState; lock: CheckLock; meta: LockMetadata; unproven: boolean },
  look: { blockers: readonly Blocker[]; now: Date; server: Date; sentinel: SentinelVerdict | undefined },
  signal: AbortSignal,
): Promise<SlotRun> {
  const { config } = options;
  const view: BeforeLockView = {
    config: { ...config, nodeId: options.node },
    window: createWindow(config.window),
    blockers: look.blockers,
    lock: at.lock,
    fleetLock: config.fleetlockUrl !== '',
    now: look.now,
    serverNow: look.server,
    node: at.state,
  };
  const misconfigured = reportedMisconfiguration(at.node);
  const ask = {
    verdict: needOf(look.sentinel, at.state.annotations),
    meta: at.meta,
    unproven: at.unproven,
    ...(misconfigured === undefined ? {} : { misconfigured }),
  };
  return runToSlot(view, ask, checkActions(at.lock, signal), signal);
}

/** The answer of the step `name` as an item: the runner's, rendered. */
function answer(run: SlotRun, name: StepAnswer['name']): CheckItem[] {
  return run.answers.filter((a) => a.name === name);
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
  const sentinel = await evaluateSentinel(options, io, node, signal);
  const lock = checkLock(config, options.node, io.clock, kube);
  const state = toNodeState(node);
  const meta = slotMetaOf(config, state, waveTracked(config));
  const lockItem = await evaluateLock(config, lock, { node, meta }, signal);
  const phase = phaseOf(cycleFacts(state, lockItem.held, config, now));
  const run = await runSteps(
    options,
    { node, state, lock, meta, unproven: phase.name === 'unproven-entry' },
    { blockers, now, server, sentinel: sentinel.verdict },
    signal,
  );
  const items: CheckItem[] = [
    sentinel.item,
    ...evaluateRequest(node),
    ...evaluateAgent(node),
    ...answer(run, 'window'),
    ...passedByNow(
      node,
      blockers,
    )([...(await blockerLines(blockers)), ...('line' in packageManager ? [packageManager.line] : [])]),
    ...answer(run, 'node'),
    await evaluateVolumes(config, node, kube, signal),
    ...(await evaluateNodeChecks(config, node, kube, signal)),
    ...answer(run, 'approval'),
    lockItem,
    ...evaluateFleetLock(config),
    ...evaluateRepair(node, config.postRebootTimeoutMs),
    evaluateShutdown(node),
  ];
  const needKnown = rebootRequestOf(state.annotations) !== undefined || sentinel.verdict?.required === true;
  const progress = inProgress(phase);
  const decision =
    progress === undefined
      ? decisionOfRun(run, needKnown, config.fleetlockUrl !== '')
      : { kind: 'in-progress' as const, reason: progress };
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
