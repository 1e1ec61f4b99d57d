// `kured-ts unlock [NODE…] [--manual] [--stale]`: removes lock entries that hold the fleet back —
// kured's manual lock, entries of nodes that are gone or in no reboot cycle, or a named node's —
// in one write guarded by the DaemonSet's resourceVersion (a change in between: read, decide again).
import type { Command } from 'commander';
import { optionValues, parseFlags } from '../config/parse.js';
import { isConflict, isInvalid, isNotFound } from '../kube/errors.js';
import type { Kube } from '../kube/kube.js';
import { retry } from '../kube/retry.js';
import {
  entriesOf,
  LockFormatError,
  parseLockAnnotation,
  type LockEntry,
  type LockValue,
} from '../lock/kured-lock-format.js';
import { planUnlock, type HolderFacts, type UnlockPlan, type UnlockSelection } from '../lock/unlock-plan.js';
import { CYCLE_LABEL } from '../node/cycle.js';
import {
  addClusterOptions,
  addFlags,
  agentFlags,
  clusterOptions,
  commandSignal,
  describeApiError,
  EXIT_FAILURE,
  EXIT_OK,
  readDaemonSet,
  type ClusterFlags,
  type CommandDeps,
  type CommandIo,
  type DaemonSetRef,
  type KubeTarget,
  runCommand,
  CommandUsageError,
} from './shared.js';

export interface UnlockOptions extends DaemonSetRef, UnlockSelection {
  /** --lock-annotation (its default: the flag table's). */
  lockAnnotation: string;
  /** Print what would be removed; write nothing. */
  dryRun: boolean;
}

/** A write that lost a race with another writer: read and decide again (bounded). */
const WRITE_ATTEMPTS = 5;

/** What one read of the DaemonSet and the entries' Nodes leads to. */
type Attempt = { kind: 'done'; code: number } | { kind: 'write'; plan: UnlockPlan; resourceVersion: string };

/** Facts about each entry's Node (undefined: the Node does not exist). */
async function holderFacts(
  kube: Kube,
  value: LockValue,
  signal: AbortSignal,
): Promise<Map<string, HolderFacts | undefined>> {
  const names = new Set(entriesOf(value).map((e) => e.nodeID));
  const facts = new Map<string, HolderFacts | undefined>();
  for (const name of names) {
    if (name === '') continue;
    try {
      const node = await kube.getNode(name, signal);
      facts.set(name, {
        inCycle: node.metadata?.labels?.[CYCLE_LABEL] !== undefined,
        cordoned: node.spec?.unschedulable === true,
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      facts.set(name, undefined);
    }
  }
  return facts;
}

function unparsable(options: UnlockOptions, io: CommandIo, why: string, resourceVersion: string): Attempt {
  const err = io.err ?? io.out;
  if (!options.stale) {
    err(`the lock annotation ${options.lockAnnotation} is unparsable (${why}): remove it with --stale`);
    return { kind: 'done', code: EXIT_FAILURE };
  }
  const plan: UnlockPlan = { remove: [], keep: [], refused: [], absent: [], text: null };
  io.out(`${options.dryRun ? 'would remove' : 'removing'} the unparsable lock annotation (${why})`);
  return options.dryRun ? { kind: 'done', code: EXIT_OK } : { kind: 'write', plan, resourceVersion };
}

/** The lock as read: its parsed value, or an Attempt already decided (absent or unparsable). */
async function readLock(
  options: UnlockOptions,
  io: CommandIo,
  signal: AbortSignal,
): Promise<{ value: LockValue; resourceVersion: string } | Attempt> {
  const ds = await readDaemonSet(io.kube, options, signal);
  const resourceVersion = ds.metadata?.resourceVersion ?? '';
  const text = ds.metadata?.annotations?.[options.lockAnnotation];
  if (text === undefined) {
    io.out(
      `the lock is free: DaemonSet ${options.dsNamespace}/${options.dsName} has no ${options.lockAnnotation}`,
    );
    return { kind: 'done', code: EXIT_OK };
  }
  try {
    return { value: parseLockAnnotation(text), resourceVersion };
  } catch (e) {
    if (!(e instanceof LockFormatError)) throw e;
    return unparsable(options, io, e.message, resourceVersion);
  }
}

/** Prints the plan; the Attempt it leads to. */
function report(plan: UnlockPlan, options: UnlockOptions, io: CommandIo): Attempt | undefined {
  const err = io.err ?? io.out;
  for (const node of plan.absent) io.out(`${node}: the lock names no such node (nothing to remove)`);
  for (const r of plan.refused) err(`refused: ${r.why}`);
  if (plan.refused.length > 0) {
    err('nothing was removed');
    return { kind: 'done', code: EXIT_FAILURE };
  }
  const verb = options.dryRun ? 'would remove' : 'removing';
  for (const r of plan.remove) io.out(`${verb} the entry of ${nameOf(r.entry)}: ${r.why}`);
  if (plan.remove.length > 0 && !options.dryRun) return undefined;
  if (plan.remove.length === 0) io.out('nothing to remove');
  describeKept(plan, io);
  return { kind: 'done', code: EXIT_OK };
}

/** Reads the lock and its holders' Nodes, and decides; prints what it decided. */
async function decide(options: UnlockOptions, io: CommandIo, signal: AbortSignal): Promise<Attempt> {
  const lock = await readLock(options, io, signal);
  if ('kind' in lock) return lock;
  const plan = planUnlock(lock.value, await holderFacts(io.kube, lock.value, signal), options);
  return report(plan, options, io) ?? { kind: 'write', plan, resourceVersion: lock.resourceVersion };
}

/** An entry's node, or what stands for it when the entry names none. */
function nameOf(entry: LockEntry): string {
  return entry.nodeID === '' ? '(no node)' : entry.nodeID;
}

function describeKept(plan: UnlockPlan, io: CommandIo): void {
  const kept = plan.keep.map(nameOf);
  io.out(kept.length === 0 ? 'the lock is free' : `the lock stays held by ${kept.join(', ')}`);
}

/**
 * Removes the selected entries; exit 0 when done or nothing matched, 1 when a named node is refused
 * (nothing is written then) or the cluster cannot be read or written.
 */
export async function runUnlock(options: UnlockOptions, io: CommandIo): Promise<number> {
  const err = io.err ?? io.out;
  const signal = commandSignal(io.timeoutMs);
  const ref = `${options.dsNamespace}/${options.dsName}`;
  try {
    return await retry(
      async () => {
        const attempt = await decide(options, io, signal);
        if (attempt.kind === 'done') return attempt.code;
        await io.kube.mergePatchDaemonSet(
          options.dsNamespace,
          options.dsName,
          {
            metadata: {
              resourceVersion: attempt.resourceVersion,
              annotations: { [options.lockAnnotation]: attempt.plan.text ?? null },
            },
          },
          signal,
        );
        describeKept(attempt.plan, io);
        return EXIT_OK;
      },
      {
        attempts: WRITE_ATTEMPTS,
        baseMs: 100,
        maxMs: 2_000,
        retryOn: (e) => isConflict(e) || isInvalid(e),
        clock: io.clock,
        signal,
        onRetry: () => {
          io.out('the lock changed meanwhile: reading it again');
        },
      },
    );
  } catch (e: unknown) {
    err(describeApiError(e, `unlock (DaemonSet ${ref})`));
    return EXIT_FAILURE;
  }
}

interface UnlockFlags extends ClusterFlags {
  manual?: boolean;
  stale?: boolean;
  force?: boolean;
  dryRun?: boolean;
  /** --lock-annotation, raw (addFlags). */
  lockAnnotation?: string[];
}

/** The agent flag unlock shares: which annotation holds the lock. */
const LOCK_FLAGS = agentFlags('lock-annotation');

/** The one-line usage error of an unlock that names nothing to remove. */
export const NOTHING_SELECTED =
  "error: unlock needs NODE names, --manual (kured's manual lock) or --stale (entries no node is using)";

function unlockOptions(
  nodes: string[],
  flags: UnlockFlags,
  env: CommandDeps['env'],
): UnlockOptions & KubeTarget {
  const manual = flags.manual === true;
  const stale = flags.stale === true;
  return {
    ...clusterOptions({ ...flags }, env),
    lockAnnotation: parseFlags(['lock-annotation'], optionValues({ ...flags }, LOCK_FLAGS), env)
      .lockAnnotation,
    nodes,
    manual,
    stale,
    force: flags.force === true,
    dryRun: flags.dryRun === true,
  };
}

/** Adds `unlock` to the program. */
export function registerUnlock(program: Command, deps: CommandDeps): Command {
  const cmd = program
    .command('unlock')
    .argument('[node...]', "remove these nodes' lock entries")
    .description(
      "remove lock entries that hold the fleet back: kured's manual lock, entries no node is using, or named nodes'",
    );
  addFlags(addClusterOptions(cmd), LOCK_FLAGS)
    .option('--manual', "remove kured's manual lock (an entry without a creation time)")
    .option(
      '--stale',
      'remove entries whose node is gone, or is in no kured-ts cycle and not cordoned, and an unparsable lock',
    )
    .option('--force', "remove a named node's entry even while it is in a reboot cycle")
    .option('--dry-run', 'print what would be removed; change nothing')
    .action((nodes: string[], flags: UnlockFlags) =>
      runCommand(deps, {
        what: 'unlock',
        options: () => {
          if (nodes.length === 0 && flags.manual !== true && flags.stale !== true)
            throw new CommandUsageError(NOTHING_SELECTED);
          return unlockOptions(nodes, flags, deps.env);
        },
        cluster: (options) => options,
        run: (options, io, ref) => runUnlock({ ...options, ...ref }, io),
      }),
    );
  return cmd;
}
