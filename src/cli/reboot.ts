// `kured-ts reboot NODE --reason TEXT [--now]` / `kured-ts reboot NODE --cancel`: an admin asks one
// node to reboot (kured #110), without a sentinel and without editing flags fleet-wide. The request
// is an annotation on the Node (src/node/reboot-request.ts) naming who asked (the API server's own
// answer, SelfSubjectReview), why and when; the node's agent takes it as a reboot need, through the
// lock, the PDBs and the drain as always (with --now past the maintenance window and the blockers,
// never the --health-checks or the control plane's quorum),
// records it in the node's reboot history and removes it once the node rebooted. An Event on the
// Node says who asked.
import type { Command } from 'commander';
import { KubeEventRecorder } from '../events/kube-event-recorder.js';
import { isNotFound, statusMessage } from '../kube/errors.js';
import type { Kube } from '../kube/kube.js';
import type { Logger } from '../log/logger.js';
import {
  describeRebootRequest,
  formatRebootRequest,
  parseRebootRequest,
  REBOOT_REQUEST_ANNOTATION,
  type RebootRequest,
} from '../node/reboot-request.js';
import { errorText } from '../text/error-text.js';
import { defaultPausedBy } from './pause.js';
import {
  addConnectionOptions,
  commandSignal,
  CommandUsageError,
  connectionTarget,
  describeApiError,
  EXIT_FAILURE,
  EXIT_OK,
  runCommand,
  type CommandDeps,
  type CommandIo,
  type ConnectionFlags,
} from './shared.js';

export interface RebootOptions {
  node: string;
  /** Why (required unless cancelling). */
  reason: string;
  /** Past the maintenance window and the blockers. */
  now: boolean;
  /** Take the request back instead. */
  cancel: boolean;
}

/** Who asks: the user the API server authenticated, or user@host with why it is not verified. */
export async function requester(
  kube: Kube,
  signal: AbortSignal,
): Promise<Pick<RebootRequest, 'by' | 'byUnverified'>> {
  if (kube.reviewSelf === undefined) {
    return { by: defaultPausedBy(), byUnverified: 'this client cannot ask the API server' };
  }
  try {
    const self = await kube.reviewSelf(signal);
    if (self.username !== '') return { by: self.username };
    return { by: defaultPausedBy(), byUnverified: 'the API server named no user (SelfSubjectReview)' };
  } catch (err) {
    if (signal.aborted) throw err;
    return { by: defaultPausedBy(), byUnverified: `SelfSubjectReview refused: ${statusMessage(err)}` };
  }
}

/** The Events of this command: on the node, written as its agent writes them; a failure is one line. */
function recorder(io: CommandIo, node: string, uid: string | undefined): KubeEventRecorder {
  const err = io.err ?? io.out;
  const warn = (message: string, fields?: Record<string, unknown>): void => {
    err(`warning: ${message}: ${errorText(fields?.error)}`);
  };
  const log: Logger = { debug: () => undefined, info: () => undefined, warn, error: warn };
  return new KubeEventRecorder({
    kube: io.kube,
    nodeId: node,
    ...(uid === undefined ? {} : { nodeUid: uid }),
    clock: io.clock,
    log,
    periodMs: 0,
  });
}

/** What one run works on: the node as read, who asks, and where Events go. */
interface Target {
  node: string;
  raw: string | undefined;
  byText: string;
  events: KubeEventRecorder;
}

/** Removes the request (a merge patch of the one annotation), with an Event. */
async function cancelRequest(io: CommandIo, t: Target, reason: string, signal: AbortSignal): Promise<string> {
  if (t.raw === undefined) return `${t.node}: had no reboot request`;
  const patch = { metadata: { annotations: { [REBOOT_REQUEST_ANNOTATION]: null } } };
  await io.kube.mergePatchNode(t.node, patch, signal);
  const old = parseRebootRequest(t.raw);
  const what = old === undefined || 'error' in old ? 'reboot request' : describeRebootRequest(old);
  const why = reason === '' ? '' : `: ${reason}`;
  await t.events.record('RebootRequestCancelled', `${what}; cancelled by ${t.byText}${why}`);
  return `${t.node}: reboot request cancelled (a reboot already asked of the host goes on)`;
}

/** Writes the request (a merge patch of the one annotation), with an Event. */
async function writeRequest(
  io: CommandIo,
  t: Target,
  request: RebootRequest,
  signal: AbortSignal,
): Promise<string> {
  const patch = { metadata: { annotations: { [REBOOT_REQUEST_ANNOTATION]: formatRebootRequest(request) } } };
  await io.kube.mergePatchNode(t.node, patch, signal);
  const described = describeRebootRequest(request);
  await t.events.record('RebootRequested', described);
  const replaced = t.raw === undefined ? '' : ' (replacing the earlier request)';
  return `${t.node}: ${described}${replaced}; its agent takes it up within minutes and reboots the node through the lock`;
}

/** Writes (or removes) the request. */
async function requestReboot(io: CommandIo, options: RebootOptions, signal: AbortSignal): Promise<string> {
  const { node } = options;
  const before = await io.kube.getNode(node, signal);
  const who = await requester(io.kube, signal);
  const target: Target = {
    node,
    raw: before.metadata?.annotations?.[REBOOT_REQUEST_ANNOTATION],
    byText: who.byUnverified === undefined ? who.by : `${who.by} (unverified: ${who.byUnverified})`,
    events: recorder(io, node, before.metadata?.uid),
  };
  if (options.cancel) return cancelRequest(io, target, options.reason, signal);
  const now = io.clock.now();
  // the API server's time (its answer to the GET tells it), as approvals are written
  const at = (io.kube.serverTime?.at(now) ?? now).toISOString();
  return writeRequest(io, target, { ...who, reason: options.reason, at, now: options.now }, signal);
}

/** 0 when the request was written (or taken back), 1 on an API error. */
export async function runReboot(options: RebootOptions, io: CommandIo): Promise<number> {
  const err = io.err ?? io.out;
  const signal = commandSignal(io.timeoutMs);
  try {
    io.out(await requestReboot(io, options, signal));
    return EXIT_OK;
  } catch (e: unknown) {
    err(
      isNotFound(e) ? `node ${options.node} not found` : describeApiError(e, `annotate node ${options.node}`),
    );
    return EXIT_FAILURE;
  }
}

interface RebootFlags extends ConnectionFlags {
  reason?: string;
  now?: boolean;
  cancel?: boolean;
}

/** One node; a reason unless cancelling; --now not with --cancel: the options, or the usage error. */
export function rebootOptions(nodes: readonly string[], flags: RebootFlags): RebootOptions {
  const [node, ...more] = nodes;
  if (node === undefined || node === '') throw new CommandUsageError('error: name the node to reboot');
  if (more.length > 0)
    throw new CommandUsageError(`error: kured-ts reboot takes one node, not ${nodes.join(', ')}`);
  const cancel = flags.cancel === true;
  const now = flags.now === true;
  const reason = (flags.reason ?? '').trim();
  if (cancel && now) throw new CommandUsageError('error: give either --cancel or --now, not both');
  if (!cancel && reason === '')
    throw new CommandUsageError('error: --reason is required: say why the node must reboot');
  return { node, reason, now, cancel };
}

/** Adds `reboot` to the program. */
export function registerReboot(program: Command, deps: CommandDeps): Command {
  const cmd = program
    .command('reboot')
    .argument('[node...]', 'the node to reboot')
    .description(
      'ask one node to reboot (no sentinel needed), through the lock, the PDBs and the drain; --cancel takes it back',
    );
  addConnectionOptions(cmd)
    .option('--reason <text>', 'why the node must reboot (recorded in its history and an Event)')
    .option(
      '--now',
      'also past the maintenance window and the blockers (never the lock, PDBs, health checks, the control plane or the drain)',
    )
    .option(
      '--cancel',
      'take the request back (a node not yet rebooting goes back to what its sentinel says)',
    )
    .action((nodes: string[], flags: RebootFlags) =>
      runCommand(deps, {
        what: 'reboot',
        options: () => rebootOptions(nodes, flags),
        target: () => connectionTarget({ ...flags }, deps.env),
        run: runReboot,
      }),
    );
  return cmd;
}
