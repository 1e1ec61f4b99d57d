// `kured-ts approve NODE... | --all`: lets nodes waiting under --require-approval take a lock slot
// (DESIGN §4). The approval is an annotation on the node; its agent removes it when the reboot it
// approved is done, so one approval is for one reboot.
import type { Command } from 'commander';
import { isNotFound } from '../kube/errors.js';
import type { V1Node } from '../kube/kube.js';
import { APPROVAL_ANNOTATION, formatApproval, type Approval } from '../node/approval.js';
import { STATUS_ANNOTATION, parseStatus } from '../node/status.js';
import { defaultPausedBy } from './pause.js';
import {
  addConnectionOptions,
  commandSignal,
  connectionTarget,
  type ConnectionFlags,
  describeApiError,
  EXIT_FAILURE,
  EXIT_OK,
  type CommandDeps,
  type CommandIo,
  runCommand,
  CommandUsageError,
} from './shared.js';

export interface ApproveOptions {
  /** The nodes to approve; empty with `all`. */
  nodes: readonly string[];
  /** Approve every node whose status is awaiting-approval. */
  all: boolean;
  /** Remove the approvals instead (a node not yet rebooting goes back to waiting). */
  revoke: boolean;
  /** Who approves (default user@host). */
  by: string;
}

/** The phase a node's agent last reported, or undefined. */
function phaseOf(node: V1Node): string | undefined {
  return parseStatus(node.metadata?.annotations?.[STATUS_ANNOTATION])?.phase;
}

/** The nodes `--all` means: those whose agent reports awaiting-approval. */
async function awaiting(io: CommandIo, signal: AbortSignal): Promise<V1Node[]> {
  const nodes = await io.kube.listNodes({}, signal);
  return nodes
    .filter((n) => phaseOf(n) === 'awaiting-approval')
    .sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
}

/** What happened to one node, as one line. */
function approvedLine(name: string, before: V1Node, approval: Approval): string {
  const phase = phaseOf(before);
  const when = `by ${approval.by} at ${approval.at}`;
  if (phase === 'awaiting-approval')
    return `${name}: approved ${when}; its agent takes a slot when one is free`;
  return `${name}: approved ${when} ahead of time (phase ${phase ?? 'unknown'}); it is used by the next reboot`;
}

/** Approves (or revokes) one node: a merge patch of the one annotation, never a read-modify-write. */
async function approveOne(
  io: CommandIo,
  name: string,
  options: ApproveOptions,
  signal: AbortSignal,
): Promise<string> {
  const before = await io.kube.getNode(name, signal);
  // the API server's time (its answer to the GET tells it): agents judge --approval-ttl on its clock
  const now = io.clock.now();
  const approval: Approval = { by: options.by, at: (io.kube.serverTime?.at(now) ?? now).toISOString() };
  const value = options.revoke ? null : formatApproval(approval);
  await io.kube.mergePatchNode(name, { metadata: { annotations: { [APPROVAL_ANNOTATION]: value } } }, signal);
  if (!options.revoke) return approvedLine(name, before, approval);
  return before.metadata?.annotations?.[APPROVAL_ANNOTATION] === undefined
    ? `${name}: had no approval`
    : `${name}: approval revoked`;
}

/**
 * Approves the named nodes (or every node awaiting approval); a node that fails does not stop the
 * others. 0 when every node was done, 1 otherwise (one line per failure).
 */
export async function runApprove(options: ApproveOptions, io: CommandIo): Promise<number> {
  const err = io.err ?? io.out;
  const signal = commandSignal(io.timeoutMs);
  let names = [...options.nodes];
  if (options.all) {
    try {
      names = (await awaiting(io, signal)).map((n) => n.metadata?.name ?? '').filter((n) => n !== '');
    } catch (e: unknown) {
      err(describeApiError(e, 'list nodes'));
      return EXIT_FAILURE;
    }
    if (names.length === 0) {
      io.out('no node is awaiting approval');
      return EXIT_OK;
    }
  }
  let code = EXIT_OK;
  for (const name of names) {
    try {
      io.out(await approveOne(io, name, options, signal));
    } catch (e: unknown) {
      err(isNotFound(e) ? `node ${name} not found` : describeApiError(e, `annotate node ${name}`));
      code = EXIT_FAILURE;
    }
  }
  return code;
}

interface ApproveFlags extends ConnectionFlags {
  all?: boolean;
  revoke?: boolean;
  by?: string;
}

/** NODE... or --all, not both, not neither: the options, or the one-line usage error. */
export function approveOptions(nodes: readonly string[], flags: ApproveFlags): ApproveOptions {
  const all = flags.all === true;
  if (all && nodes.length > 0)
    throw new CommandUsageError(`error: give either node names or --all, not both (${nodes.join(', ')})`);
  if (!all && nodes.length === 0)
    throw new CommandUsageError('error: name the nodes to approve, or give --all');
  return { nodes, all, revoke: flags.revoke === true, by: flags.by ?? defaultPausedBy() };
}

/** Adds `approve` to the program. */
export function registerApprove(program: Command, deps: CommandDeps): Command {
  const cmd = program
    .command('approve')
    .argument('[node...]', 'the nodes whose next reboot is approved')
    .description('approve the next reboot of nodes waiting under --require-approval');
  addConnectionOptions(cmd)
    .option('--all', 'approve every node whose agent is awaiting approval')
    .option('--revoke', 'remove the approval instead (a node not yet rebooting waits again)')
    .option('--by <name>', 'who approves (default: user@host)')
    .action((nodes: string[], flags: ApproveFlags) =>
      runCommand(deps, {
        what: 'approve',
        options: () => approveOptions(nodes, flags),
        target: () => connectionTarget({ ...flags }, deps.env),
        run: runApprove,
      }),
    );
  return cmd;
}
